#!/usr/bin/env bash
# Throwaway PostgreSQL for poking at fixtures by hand.
#
#   scripts/pg-shell.sh [FIXTURE] [-- PSQL_ARGS...]
#
# Starts a private cluster in a temp dir (Unix socket only, trust auth, the
# same durability-off settings as internal/pgtest), loads FIXTURE into
# database "kandev" if given, and runs psql on it; everything is stopped and
# removed when psql exits. FIXTURE is a path to a plain pg_dump file or a
# name in the repository's testdata/kandev (or $KANDEV_FIXTURES, the same
# override internal/pgtest honours), with or without .pg.sql: e.g.
# `scripts/pg-shell.sh fresh-activated`. PSQL_ARGS run
# non-interactively, e.g. `-- -c 'SELECT * FROM kandev_meta'`.
# As root, the server runs as the "postgres" user (PostgreSQL refuses root).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fixture=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then fixture=$1; shift; fi
[ "${1:-}" = "--" ] && shift

has_server_tools() { [ -x "$1/initdb" ] && [ -x "$1/pg_ctl" ] && [ -x "$1/postgres" ]; }
pg_bin=${PG_BIN:-}
if [ -z "$pg_bin" ]; then
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5V -r); do
    has_server_tools "$d" && { pg_bin=$d; break; }
  done
fi
if [ -z "$pg_bin" ] && command -v initdb >/dev/null; then pg_bin=$(dirname "$(command -v initdb)"); fi
if [ -z "$pg_bin" ] || ! has_server_tools "$pg_bin"; then
  echo "PostgreSQL server binaries not found: apt-get install postgresql, or set PG_BIN" >&2
  exit 1
fi
psql=$pg_bin/psql
[ -x "$psql" ] || psql=$(command -v psql)

if [ -n "$fixture" ] && [ ! -f "$fixture" ]; then
  fixdir=${KANDEV_FIXTURES:-$repo/testdata/kandev}
  for cand in "$fixdir/$fixture" "$fixdir/$fixture.pg.sql"; do
    [ -f "$cand" ] && { fixture=$cand; break; }
  done
  [ -f "$fixture" ] || { echo "no fixture $fixture (looked in $fixdir)" >&2; exit 1; }
fi

dir=$(mktemp -d /tmp/pgshell-XXXXXX)
as_server() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  id -u postgres >/dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /bin/sh postgres
  chown postgres: "$dir"
  as_server() { runuser -u postgres -- "$@"; }
fi
cleanup() {
  as_server "$pg_bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cd "$dir"
as_server "$pg_bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
as_server "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 30 start \
  -o "-c listen_addresses='' -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c timezone=UTC" >/dev/null ||
  { tail -n 30 "$dir/postgres.log" >&2; exit 1; }

export PGHOST=$dir PGUSER=postgres PGDATABASE=kandev PGPORT=5432
"$psql" -X -q -d postgres -c 'CREATE DATABASE kandev'
if [ -n "$fixture" ]; then
  src=$fixture
  # psql older than 17.6/16.10/15.14/14.19/13.22 rejects pg_dump's
  # \restrict / \unrestrict guard lines (see internal/pgtest/dump.go): drop
  # them, outside COPY data, for such a psql.
  ver=$("$psql" --version | sed -E 's/^[^0-9]*([0-9]+)\.?([0-9]*).*/\1 \2/')
  read -r major minor <<<"$ver"
  case "$major" in 13) need=22 ;; 14) need=19 ;; 15) need=14 ;; 16) need=10 ;; 17) need=6 ;; *) need=0 ;; esac
  if [ "$major" -lt 13 ] || [ "${minor:-0}" -lt "$need" ]; then
    src=$dir/dump.sql
    awk 'c { if ($0 == "\\.") c = 0; print; next }
         /^COPY .* FROM stdin;$/ { c = 1 }
         /^\\(un)?restrict( |$)/ { next }
         { print }' "$fixture" >"$src"
  fi
  "$psql" -X -q -v ON_ERROR_STOP=1 -f "$src" >/dev/null
  echo "loaded $fixture into database kandev" >&2
fi
echo "server: $("$pg_bin/postgres" --version); connect elsewhere with: psql -h $dir -U postgres kandev" >&2
"$psql" -X "$@"
