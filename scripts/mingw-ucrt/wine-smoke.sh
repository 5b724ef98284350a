#!/usr/bin/env bash
# Links kandev-extract.exe for windows/amd64 with Debian's MinGW-w64 and runs
# it under Wine: `version`, `--help`, and an extraction of a fixture store
# into a fresh warehouse. Opt-in (make cross CROSS_WINE=1), not part of CI:
# a smoke test of the Windows build, not the release build (that one is made
# on a Windows runner with MSYS2's UCRT toolchain, .github/workflows).
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
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
here=scripts/mingw-ucrt
say() { printf '==> %s\n' "$*"; }

CC=${MINGW_CC:-x86_64-w64-mingw32-gcc-posix}
CXX=${MINGW_CXX:-x86_64-w64-mingw32-g++-posix}
for t in "$CC" "$CXX" wine; do
  command -v "$t" >/dev/null || { echo "wine-smoke: $t not found (apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64-posix wine wine64)" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
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
  echo "wine-smoke: $exe imports msvcrt.dll besides the UCRT" >&2; exit 1
fi

export WINEPREFIX="$work/wineprefix" WINEDEBUG=-all
say "Wine prefix $WINEPREFIX ($(wine --version))"
wineboot -i >/dev/null 2>&1 || true
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"

say "kandev-extract version"
wine "$exe" version
say "kandev-extract --help"
wine "$exe" --help | head -5
store="Z:$(pwd -P | tr / '\\')\\testdata\\kandev\\fresh-activated.db"
wh="Z:$(tr / '\\' <<<"$work")\\warehouse"
say "kandev-extract run --source $store --warehouse $wh"
wine "$exe" run --source "$store" --warehouse "$wh" --installation wine --log-format text
say "kandev-extract query"
wine "$exe" query --warehouse "$wh" "SELECT installation_id, count(*) AS subagents FROM subagent_contexts GROUP BY ALL"
say "Windows build runs under Wine"
