package pgtest_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kandev/kandev-extract/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func count(t *testing.T, conn *pgx.Conn, table string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM "+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// meta returns kandev_meta's value for key and whether the row exists.
func meta(t *testing.T, conn *pgx.Conn, key string) (string, bool) {
	t.Helper()
	var v string
	err := conn.QueryRow(t.Context(), "SELECT value FROM kandev_meta WHERE key = $1", key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false
	}
	if err != nil {
		t.Fatalf("kandev_meta %s: %v", key, err)
	}
	return v, true
}

// The values below are read from the dump itself (COPY public.kandev_meta
// and the COPY row counts), and agree with testdata/kandev/README.md.
func TestFreshActivatedDump(t *testing.T) {
	start := time.Now()
	c := pgtest.Shared(t)
	t.Logf("shared cluster ready after %s (includes start if this test ran first)", time.Since(start).Round(time.Millisecond))

	dump := pgtest.Fixture(t, "fresh-activated.pg.sql")
	db := "fresh_activated_direct"
	if err := c.CreateDatabase(t.Context(), db); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := c.LoadDump(t.Context(), db, dump); err != nil {
		t.Fatal(err)
	}
	t.Logf("LoadDump %s took %s", dump, time.Since(start).Round(time.Millisecond))
	conn := connect(t, c.DSN(db))

	counts := []struct {
		table string
		want  int64
	}{
		{"task_session_subagents", 253},
		{"task_session_messages", 993},
		{"task_session_turns", 170},
		{"task_sessions", 40},
		{"tasks", 40},
		{"kandev_meta", 4},
		{"workspaces", 1},
	}
	for _, tc := range counts {
		if got := count(t, conn, tc.table); got != tc.want {
			t.Errorf("count(%s) = %d, want %d", tc.table, got, tc.want)
		}
	}

	metas := []struct {
		key         string
		want        string
		wantPresent bool
	}{
		// RFC3339Nano with nine digits: kandev_meta is text, so the
		// nanoseconds survive although timestamp columns keep microseconds.
		{"subagent_context_capture_since", "2026-08-03T15:00:00.123456789Z", true},
		{"subagent_context_backfill_through", "", true}, // present, empty: fresh install
		{"subagent_context_execution_since", "", false},
		{"schema_initialized_at", "", false}, // SQLite-only key
		{"commit_capture_activated_at", "2026-11-30T06:38:07.356023178Z", true},
		{"kandev_version", "dev", true},
	}
	for _, tc := range metas {
		got, present := meta(t, conn, tc.key)
		if got != tc.want || present != tc.wantPresent {
			t.Errorf("kandev_meta[%s] = %q (present %v), want %q (present %v)",
				tc.key, got, present, tc.want, tc.wantPresent)
		}
	}

	// The dump's timestamp columns are timestamp without time zone holding
	// the UTC wall clock, truncated to microseconds.
	var minObserved time.Time
	if err := conn.QueryRow(t.Context(),
		"SELECT min(observed_at) FROM task_session_subagents").Scan(&minObserved); err != nil {
		t.Fatal(err)
	}
	if !minObserved.After(time.Date(2026, 8, 3, 15, 0, 0, 123456000, time.UTC)) {
		t.Errorf("min(observed_at) = %s, want after capture_since", minObserved)
	}
}

func TestTwoDatabasesLoadIndependently(t *testing.T) {
	c := pgtest.Shared(t)
	fresh := pgtest.Fixture(t, "fresh-activated.pg.sql")
	a := pgtest.NewDatabase(t, c, fresh) // first: loads the template
	start := time.Now()
	b := pgtest.NewDatabase(t, c, fresh) // copy of the template
	t.Logf("NewDatabase from the cached template took %s", time.Since(start).Round(time.Millisecond))
	u := pgtest.NewDatabase(t, c, pgtest.Fixture(t, "upgraded-backfill.pg.sql"))
	if a == b || a == u || b == u {
		t.Fatalf("database names collide: %q %q %q", a, b, u)
	}
	ca, cb, cu := connect(t, c.DSN(a)), connect(t, c.DSN(b)), connect(t, c.DSN(u))

	// Change a; b, loaded from the same dump, must not see it.
	if err := c.Exec(t.Context(), a, `
		DELETE FROM task_session_subagents;
		UPDATE kandev_meta SET value = 'changed' WHERE key = 'subagent_context_capture_since';`); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name         string
		conn         *pgx.Conn
		subagents    int64
		captureSince string
		backfill     string
	}{
		{"a (changed)", ca, 0, "changed", ""},
		{"b (untouched copy)", cb, 253, "2026-08-03T15:00:00.123456789Z", ""},
		{"upgraded-backfill", cu, 51, "2026-11-30T06:38:08.285997307Z", "2026-08-12T19:40:58.661138Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := count(t, tc.conn, "task_session_subagents"); got != tc.subagents {
				t.Errorf("subagents = %d, want %d", got, tc.subagents)
			}
			if got, _ := meta(t, tc.conn, "subagent_context_capture_since"); got != tc.captureSince {
				t.Errorf("capture_since = %q, want %q", got, tc.captureSince)
			}
			if got, _ := meta(t, tc.conn, "subagent_context_backfill_through"); got != tc.backfill {
				t.Errorf("backfill_through = %q, want %q", got, tc.backfill)
			}
		})
	}
}

func TestPasswordRoleOverTCP(t *testing.T) {
	c := pgtest.Shared(t)
	db := pgtest.NewDatabase(t, c, pgtest.Fixture(t, "fresh-activated.pg.sql"))
	role := "reader_" + db                // roles are cluster-wide: keep unique
	const password = `s3cret 'quoted' \x` // exercises literal quoting
	if err := c.CreateRole(t.Context(), role, password, db); err != nil {
		t.Fatal(err)
	}

	conn := connect(t, c.RoleDSN(role, password, db))
	var user string
	var super bool
	if err := conn.QueryRow(t.Context(),
		"SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &super); err != nil {
		t.Fatal(err)
	}
	if user != role || super {
		t.Errorf("current_user, rolsuper = %q, %v; want %q, false", user, super, role)
	}
	if got := count(t, conn, "task_session_subagents"); got != 253 {
		t.Errorf("reader sees %d subagent rows, want 253", got)
	}
	_, err := conn.Exec(t.Context(), "INSERT INTO kandev_meta (key, value) VALUES ('x', 'y')")
	if code := sqlState(err); code != "42501" {
		t.Errorf("reader INSERT: error %v (SQLSTATE %q), want insufficient_privilege 42501", err, code)
	}

	_, err = conn.Exec(t.Context(), "CREATE TABLE public.mine (x int)")
	if code := sqlState(err); code != "42501" {
		t.Errorf("reader CREATE TABLE: error %v (SQLSTATE %q), want insufficient_privilege 42501", err, code)
	}

	// Password authentication is really enforced on TCP.
	failures := []struct {
		name, dsn, secret, wantCode string
	}{
		{"wrong password", c.RoleDSN(role, "wrong-horse-battery", db), "wrong-horse-battery", "28P01"},
		{"superuser wrong password", c.RoleDSN(pgtest.Superuser, "nope-not-it", db), "nope-not-it", "28P01"},
		{"no password", c.RoleDSN(role, "", db), password, ""},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := pgx.Connect(t.Context(), tc.dsn)
			if err == nil {
				conn.Close(context.Background())
				t.Fatal("connected, want an authentication failure")
			}
			if got := sqlState(err); tc.wantCode != "" && got != tc.wantCode {
				t.Errorf("SQLSTATE %q (%v), want %q", got, err, tc.wantCode)
			}
			if strings.Contains(err.Error(), tc.secret) {
				t.Errorf("error leaks the password: %v", err)
			}
			t.Logf("refused as expected: %v", err)
		})
	}

	super2 := connect(t, c.DSN(db))
	if err := super2.QueryRow(t.Context(), "SELECT current_user").Scan(&user); err != nil || user != pgtest.Superuser {
		t.Errorf("superuser over TCP: %q, %v", user, err)
	}
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

func TestPrivateClusterStartStop(t *testing.T) {
	c := pgtest.New(t, pgtest.Options{
		HostAuth: "trust",
		Settings: map[string]string{"work_mem": "8MB"},
	})
	conn := connect(t, c.RoleDSN(pgtest.Superuser, "", "postgres")) // trust: no password
	shows := []struct{ name, want string }{
		{"fsync", "off"},
		{"TimeZone", "UTC"},
		{"server_encoding", "UTF8"},
		{"work_mem", "8MB"},
		{"listen_addresses", "127.0.0.1"},
		{"unix_socket_directories", c.SocketDir()},
	}
	for _, tc := range shows {
		var got string
		if err := conn.QueryRow(t.Context(), "SHOW "+tc.name).Scan(&got); err != nil {
			t.Fatalf("SHOW %s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("SHOW %s = %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := conn.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	pid, dir := c.PID(), c.Dir()
	if pid == 0 {
		t.Fatal("PID() = 0 while running")
	}
	if os.Geteuid() == 0 {
		fi, err := os.Stat(dir + "/data")
		if err != nil {
			t.Fatal(err)
		}
		if uid, ok := ownerUID(fi); ok && uid == 0 {
			t.Errorf("data dir owned by root; the server must run unprivileged")
		}
	}
	start := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stopped in %s", time.Since(start).Round(time.Millisecond))
	if alive, how := processExists(pid); alive {
		t.Errorf("postmaster %d still there after Stop (%s)", pid, how)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still there after Stop (%v)", dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if c.PID() != 0 {
		t.Errorf("PID() = %d after Stop", c.PID())
	}
}

// Freeze stops a backend so that a query on it gets no answer; resuming
// lets the same connection answer again.
func TestFreezeBackend(t *testing.T) {
	c := pgtest.Shared(t)
	conn := connect(t, c.DSN("postgres"))
	var pid int32
	if err := conn.QueryRow(t.Context(), "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	resume := pgtest.Freeze(t, int(pid))
	done := make(chan error, 1)
	go func() {
		var one int
		done <- conn.QueryRow(context.Background(), "SELECT 1").Scan(&one)
	}()
	select {
	case err := <-done:
		t.Fatalf("a frozen backend answered (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	resume()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after resume: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer 10s after resume")
	}
	resume() // idempotent; t.Cleanup calls it once more
}
