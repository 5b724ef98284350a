#!/usr/bin/env bash
# Proves under Wine, with Windows' file semantics emulated by wineserver and
# without KANDEV_EXTRACT_TEST_HELD_OPEN, what docs/operations.md "Files held
# open" promises: while another process holds warehouse.duckdb open, a run
# commits, exits 0 with a warning and leaves the rebuilt database in
# _pending/; once the file is released, the next command (here `status`)
# swaps it in. Opt-in (make cross CROSS_WINE=1, after wine-smoke.sh), not
# part of CI. Each step prints its evidence; any unmet expectation makes the
# script exit 1.
#
#  1. link bin/kandev-extract.exe (wine-link.sh) and heldprobe.exe;
#  2. run 1 of testdata/kandev/fresh-activated.db into a fresh warehouse;
#  3. a holder: `kandev-extract query` of a long cross join (the exe itself,
#     so DuckDB's own handle), in the background; the script waits until a
#     process has warehouse.duckdb open and the query is still running;
#  4. run 2 of the same store while held: exit status, WARN lines,
#     _pending/, warehouse.duckdb unchanged (sha256, and its runs table read
#     directly), what `status` prints; heldprobe.exe prints the Go error
#     Windows (Wine) gives for the tool's rename (the WARN text names no
#     error number);
#  5. the holder killed (and waited for): `status` swaps the pending
#     database in ("done now"), and runs/current_runs serve run 2.
# If Wine lets run 2 replace the held file (an emulation gap, not the tool's
# behaviour on Windows), the script says so loudly, skips the swap checks
# and exits 0: a documented experiment, not a failure.
#
# WINE_HELD_RANGE (default 1000000) sizes the holder's query:
# count(*) FROM range(N) a, range(N) b, far longer than the test; it is
# killed in step 5.
#
# Needs: apt-get install gcc-mingw-w64-x86-64 g++-mingw-w64-x86-64-posix wine wine64
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tag=wine-held
# shellcheck source-path=SCRIPTDIR source=wine-link.sh
. scripts/mingw-ucrt/wine-link.sh

n=${WINE_HELD_RANGE:-1000000}
failed=0
ok() { printf '    ok: %s\n' "$*"; }
bad() { printf '    FAILED: %s\n' "$*" >&2; failed=1; }
check() { # check DESCRIPTION COMMAND...: ok or FAILED, never exits
  local what=$1; shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
indent() { sed -e 's/\r$//' -e '/wine32 is missing\|multiarch needs\|execute "dpkg\|apt-get install wine32/d' -e 's/^/    | /'; }
# kx ARGS...: the exe under Wine, stdout to $work/out, stderr to $work/err,
# exit status to $rc (never exits the script).
kx() {
  rc=0
  wine "$exe" "$@" >"$work/out" 2>"$work/err" || rc=$?
  sed -i 's/\r$//' "$work/out" "$work/err"
}
show() { echo "    exit status $rc"; indent <"$work/out"; indent <"$work/err"; }
scalar() { # scalar SQL: one value from the database query reads (csv)
  kx query --warehouse "$wh" --format csv "$1"
  [[ $rc == 0 ]] || { show; echo "$tag: query failed: $1" >&2; exit 1; }
  sed -n 2p "$work/out"
}

holder=
stop_holder() {
  [[ -n $holder ]] || return 0
  kill -TERM "$holder" 2>/dev/null || true
  for _ in $(seq 20); do kill -0 "$holder" 2>/dev/null || break; sleep 1; done
  kill -KILL "$holder" 2>/dev/null || true
  wait "$holder" 2>/dev/null || true
  holder=
}
trap 'stop_holder; wineserver -k 2>/dev/null || true; cleanup' EXIT

say "link heldprobe.exe (scripts/mingw-ucrt/heldprobe.go, pure Go)"
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build -o "$work/heldprobe.exe" scripts/mingw-ucrt/heldprobe.go

store=$(winpath testdata/kandev/fresh-activated.db)
whdir=$work/warehouse
wh=$(winpath "$whdir")
db=$whdir/warehouse.duckdb
winedb=$(winpath "$db")
# openers: the processes (the Windows one and wineserver) with $db open.
openers() {
  local fd pids=()
  for fd in /proc/[0-9]*/fd/*; do
    [[ $(readlink "$fd" 2>/dev/null) == "$db" ]] && pids+=("$(cut -d/ -f3 <<<"$fd")")
  done
  [[ ${#pids[@]} -gt 0 ]] && printf '%s\n' "${pids[@]}" | sort -un | tr '\n' ' '
}
pending() { compgen -G "$whdir/_pending/*.duckdb" || true; }

say "step 2: run 1 into a fresh warehouse"
echo "    wine kandev-extract.exe run --source $store --warehouse $wh --installation wine --log-format text"
kx run --source "$store" --warehouse "$wh" --installation wine --log-format text
show
[[ $rc == 0 ]] || { echo "$tag: run 1 failed" >&2; exit 1; }
run1=$(scalar "SELECT run_id FROM current_runs")
[[ -n $run1 ]] || exit 1
sum1=$(sha256sum <"$db" | cut -d' ' -f1)
echo "    run 1 = $run1; warehouse.duckdb sha256 $sum1"

say "Wine 8 gap: Go's os.RemoveAll cannot remove a non-empty directory here"
wine "$work/heldprobe.exe" -removeall "$(winpath "$work/removeall")" 2>&1 | indent
left=$(find "$whdir/_staging" "$whdir/_build" -maxdepth 0 -printf '%f/ ' 2>/dev/null || true)
if [[ -n $left ]]; then
  # Run 1 could not remove these (the error is logged as a leftover "open in
  # another process", or not at all); run 2's start would fail on them
  # ("clear _staging: ... Invalid function"), which is Wine's gap, not the
  # held-open path under test. Removed from Linux; warehouse.duckdb is
  # untouched.
  echo "    !! run 1 left $left(Wine 8 lacks FileDispositionInformationEx); removed from Linux so run 2 can start"
  rm -rf "$whdir/_staging" "$whdir/_build"
fi

say "step 3: holder: kandev-extract query of range($n) x range($n), in the background"
hq="SELECT count(*) FROM range($n) a, range($n) b"
echo "    nice wine kandev-extract.exe query --warehouse $wh \"$hq\" &"
# WINEDEBUG=+file traces the holder's NtCreateFile calls: the share mode
# DuckDB opens warehouse.duckdb with (printed below).
WINEDEBUG=+file nice -n 19 wine "$exe" query --warehouse "$wh" "$hq" >"$work/holder.out" 2>"$work/holder.err" &
holder=$!
held_by=
for _ in $(seq 60); do
  held_by=$(openers || true)
  [[ -n $held_by ]] && break
  kill -0 "$holder" 2>/dev/null || break
  sleep 1
done
sleep 5
if [[ -z $held_by ]] || ! kill -0 "$holder" 2>/dev/null; then
  { grep -v ':file:' "$work/holder.err" || true; } | indent
  echo "$tag: the holder did not start or ended early (processes with warehouse.duckdb open: ${held_by:-none})" >&2
  exit 1
fi
echo "    holder pid $holder running; processes with $db open (/proc/*/fd): $held_by"
ps -o pid,etime,args -p "$holder" | indent
echo "    the holder's opens of warehouse.duckdb (Wine +file trace; sharing 1 READ, 2 WRITE, 4 DELETE):"
grep 'NtCreateFile.*warehouse\.duckdb"' "$work/holder.err" | sed -E 's/.*access=([0-9a-f]+).*(sharing=[0-9a-f]+).*/access=\1 \2/' | sort | uniq -c | indent

say "step 4: run 2 of the same store while warehouse.duckdb is held"
t0=$SECONDS
kx run --source "$store" --warehouse "$wh" --installation wine --log-format text
rc2=$rc
echo "    run 2 took $((SECONDS - t0)) s"
show
warn=$(grep 'WARN' "$work/err" || true)
run2_summary=$(cat "$work/out")
still_held=yes
kill -0 "$holder" 2>/dev/null || still_held=no
echo "    holder still running after run 2: $still_held (processes with warehouse.duckdb open: $(openers || echo none))"
[[ $still_held == yes ]] || { echo "$tag: the holder ended before run 2 did: nothing proven (raise WINE_HELD_RANGE)" >&2; exit 1; }
pend=$(pending)
sum2=$(sha256sum <"$db" | cut -d' ' -f1)
echo "    _pending/: ${pend:-(no database)}"
find "$whdir" -maxdepth 2 -name '*.duckdb*' -printf '%P  %s bytes  %TT\n' | sort | indent
echo "    warehouse.duckdb sha256 $sum2 ($([[ $sum1 == "$sum2" ]] && echo unchanged since run 1 || echo CHANGED since run 1))"
echo "    WARN lines:"
if [[ -n $warn ]]; then indent <<<"$warn"; else echo "    | (none)"; fi

say "step 6: heldprobe.exe on the held warehouse.duckdb (the Go error behind the warning)"
probe_rc=0
wine "$work/heldprobe.exe" "$winedb" >"$work/probe" 2>&1 || probe_rc=$?
indent <"$work/probe"
[[ $probe_rc == 0 ]] || bad "heldprobe.exe exited $probe_rc"

check "control: Wine enforces share modes (a DELETE open of a file held without FILE_SHARE_DELETE is a sharing violation)" \
  grep -q '^control-open-for-delete.*: HELD.*ERROR_SHARING_VIOLATION' "$work/probe"

if [[ $rc2 == 0 && -n $pend && $sum1 == "$sum2" ]]; then
  refused=yes
elif [[ $rc2 == 0 && -z $pend && $sum1 != "$sum2" ]]; then
  refused=no
else
  echo "$tag: run 2 neither waited nor replaced the database: exit status $rc2, _pending/ '${pend}', warehouse.duckdb $([[ $sum1 == "$sum2" ]] && echo unchanged || echo changed)" >&2
  exit 1
fi

if [[ $refused == no ]]; then
  cat >&2 <<MSG

!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! Wine did NOT refuse: run 2 replaced warehouse.duckdb while another    !!
!! process (pid $holder) held it open. Windows refuses that; this Wine   !!
!! emulation does not, so the held-open path was NOT exercised here.      !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!

MSG
  check "run 2 exited 0" test "$rc2" = 0
  check "run 2 logged no held-open warning" test -z "$warn"
  stop_holder
  exit "$failed"
fi

check "run 2 exited 0 (exit status $rc2)" test "$rc2" = 0
check "a WARN line says warehouse.duckdb is held open and the database waits in _pending/" \
  grep -q 'warehouse.duckdb is held open by another process.*the rebuilt database waits at _pending/' <<<"$warn"
check "run 2's summary has the pending block" grep -q 'pending (files open in another process; not a failure):' <<<"$run2_summary"
check "_pending/ holds the rebuilt database" test -n "$pend"
check "warehouse.duckdb is byte for byte run 1's" test "$sum1" = "$sum2"
check "heldprobe: the tool's rename over the held file is refused with an error isHeldOpen recognises" \
  grep -q '^rename-over: HELD' "$work/probe"

echo "    warehouse.duckdb read directly (ATTACH ... READ_ONLY, the query itself reads the pending database):"
kx query --warehouse "$wh" --allow-files --format csv \
  "ATTACH '$winedb' AS served (READ_ONLY); SELECT string_agg(run_id, ' ' ORDER BY run_id) AS runs, (SELECT run_id FROM served.current_runs) AS current FROM served.runs"
show
check "warehouse.duckdb's runs table has run 1 only, current_runs serves run 1" test "$(sed -n 2p "$work/out")" = "$run1,$run1"
check "query says it reads the waiting database" grep -q 'reading the newer database waiting at _pending/' "$work/err"
run2=$(scalar "SELECT run_id FROM current_runs" || true)
echo "    run 2 = $run2 (current_runs of the waiting database)"
check "run 2 is a new run" test -n "$run2" -a "$run2" != "$run1"

echo "    kandev-extract status --warehouse $wh (still held):"
kx status --warehouse "$wh"
show
check "status exits 0 and says what waits" grep -q '^pending:    warehouse.duckdb is held open by another process' "$work/out"
check "status reads run 2 from the waiting database" grep -q "run $run2" "$work/out"
check "still pending, warehouse.duckdb unchanged after status's swap attempt" \
  test -n "$(pending)" -a "$(sha256sum <"$db" | cut -d' ' -f1)" = "$sum1"

say "step 5: kill the holder, wait for Wine, then status"
stop_holder
echo "    holder stopped; its stderr (the +file trace left out):"
{ grep -v ':file:' "$work/holder.err" || true; } | indent
timeout 60 wineserver -w || true
echo "    processes with warehouse.duckdb open: $(openers || echo none)"
echo "    kandev-extract status --warehouse $wh:"
kx status --warehouse "$wh"
show
check "status exits 0" test "$rc" = 0
check "status swapped the pending database in (done now)" \
  grep -q "^done now: the database that waited at ${pend#"$whdir/"} is now warehouse.duckdb" "$work/out"
check "status has no pending line" test -z "$(grep '^pending:' "$work/out" || true)"
check "_pending/ holds no database" test -z "$(pending)"
sum3=$(sha256sum <"$db" | cut -d' ' -f1)
echo "    warehouse.duckdb sha256 $sum3"
check "warehouse.duckdb changed" test "$sum3" != "$sum1"
kx query --warehouse "$wh" --format csv "SELECT string_agg(run_id, ' ' ORDER BY run_id) AS runs, (SELECT run_id FROM current_runs) AS current FROM runs"
show
check "runs has run 1 and run 2, current_runs serves run 2, from warehouse.duckdb (no note)" \
  test "$(sed -n 2p "$work/out")" = "$(printf '%s\n' "$run1" "$run2" | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'),$run2" -a ! -s "$work/err"

if [[ $failed != 0 ]]; then
  echo "$tag: some expectations failed (above)" >&2
  exit 1
fi
say "Wine refused the rename over the held warehouse.duckdb; the run exited 0 with the warning, the database waited in _pending/ and status swapped it in once released"
