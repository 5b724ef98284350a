#!/usr/bin/env bash
# Links kandev-extract.exe for windows/amd64 with Debian's MinGW-w64 and runs
# it under Wine: `version`, `--help`, and an extraction of a fixture store
# into a fresh warehouse. Opt-in (make cross CROSS_WINE=1), not part of CI:
# a smoke test of the Windows build, not the release build (that one is made
# on a Windows runner with MSYS2's UCRT toolchain, .github/workflows). The
# link and the Wine prefix: wine-link.sh.
#
# Needs: apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64-posix wine wine64
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tag=wine-smoke
# shellcheck source-path=SCRIPTDIR source=wine-link.sh
. scripts/mingw-ucrt/wine-link.sh

say "kandev-extract version"
wine "$exe" version
say "kandev-extract --help"
wine "$exe" --help | head -5
store=$(winpath testdata/kandev/fresh-activated.db)
wh=$(winpath "$work/warehouse")
say "kandev-extract run --source $store --warehouse $wh"
wine "$exe" run --source "$store" --warehouse "$wh" --installation wine --log-format text
say "kandev-extract query"
wine "$exe" query --warehouse "$wh" "SELECT installation_id, count(*) AS subagents FROM subagent_contexts GROUP BY ALL"
say "Windows build runs under Wine"
