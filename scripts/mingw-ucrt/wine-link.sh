# shellcheck shell=bash
# Sourced by wine-smoke.sh and wine-held.sh (not run by itself): links
# bin/kandev-extract.exe for windows/amd64 with Debian's MinGW-w64 against
# the UCRT and makes a throwaway Wine prefix that can run it.
#
# Why the files beside this script: DuckDB's Windows library
# (duckdb-go-bindings/lib/windows-amd64) is built with MSYS2's UCRT MinGW,
# Debian's MinGW (mingw-w64 10) links msvcrt by default. The link therefore
#  - uses the posix-threads compiler (DuckDB needs std::thread, winpthreads),
#  - swaps -lmsvcrt for -lucrt in gcc's specs (Debian ships libucrt.a),
#  - adds crt_shim.c (_snprintf, _setjmp: msvcrt names that Debian's
#    libucrt.a lacks) and seekpos_shim.c (a libstdc++ virtual whose
#    signature differs between msvcrt and UCRT builds).
# Wine 8 (Debian 12) lacks bcryptprimitives.dll, which the Go runtime loads
# at start: bcryptprimitives.c provides ProcessPrng for the Wine prefix only.
#
# Needs: apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64-posix wine wine64
#
# The caller sets `tag` (its name, for messages) and `set -euo pipefail`,
# and is in the repository's root. Defines: say, cleanup (removes $work; the
# EXIT trap runs it), work, exe, WINEPREFIX, WINEDEBUG, and winpath (a Linux
# path as Wine's Z: drive sees it).

here=scripts/mingw-ucrt
say() { printf '==> %s\n' "$*"; }

CC=${MINGW_CC:-x86_64-w64-mingw32-gcc-posix}
CXX=${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}
for t in "$CC" "$CXX" wine wineboot wineserver; do
  command -v "$t" >/dev/null || { echo "${tag:-wine}: $t not found (apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64-posix wine wine64)" >&2; exit 1; }
done

work=$(mktemp -d)
cleanup() { rm -rf "$work"; }
trap cleanup EXIT
"$CC" -dumpspecs | sed 's/-lmsvcrt/-lucrt/g' > "$work/ucrt.specs"
"$CC" -O2 -c "$here/crt_shim.c" -o "$work/crt_shim.o"
"$CC" -O2 -c "$here/seekpos_shim.c" -o "$work/seekpos_shim.o"
"$CC" -O2 -shared -o "$work/bcryptprimitives.dll" "$here/bcryptprimitives.c" -ladvapi32

version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
exe=bin/kandev-extract.exe
mkdir -p bin
say "link $exe (windows/amd64, UCRT)"
GOOS=windows GOARCH=amd64 CGO_ENABLED=1 CC="$CC" CXX="$CXX" go build \
  -ldflags "-s -w -X github.com/kandev/kandev-extract/pipeline.Version=$version '-extldflags=$work/crt_shim.o $work/seekpos_shim.o -specs=$work/ucrt.specs'" \
  -o "$exe" ./cmd/kandev-extract
if x86_64-w64-mingw32-objdump -p "$exe" | grep -qi 'DLL Name: msvcrt.dll'; then
  echo "${tag:-wine}: $exe imports msvcrt.dll besides the UCRT" >&2; exit 1
fi

export WINEPREFIX="$work/wineprefix" WINEDEBUG=-all
say "Wine prefix $WINEPREFIX ($(wine --version 2>/dev/null))"
wineboot -i >/dev/null 2>&1 || true
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"

# winpath PATH: PATH (absolute, or relative to the current directory) as
# Wine's Z: drive names it.
winpath() {
  local p=$1
  [[ $p == /* ]] || p="$(pwd -P)/$p"
  # shellcheck disable=SC1003 # a backslash, not an escaped quote
  printf 'Z:%s' "$(tr / '\\' <<<"$p")"
}
