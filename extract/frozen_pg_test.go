//go:build unix

package extract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/models"
)

// TestPostgresFrozenServer (issue 13, "frozen PostgreSQL"): a server that
// stops answering — its backend or its postmaster stopped with SIGSTOP,
// which no server-side timeout can see — fails the run within the stall
// or connect timeout with an error naming the store, the table and the
// timeout, instead of hanging for ever (with the warehouse lock held).
// A slow consumer is not a stall: only waiting for the server is timed.
//
// It uses a private throwaway server, since it stops its processes. Without
// PostgreSQL binaries it skips, and fails under CI=true (pgtest).
func TestPostgresFrozenServer(t *testing.T) {
	c := pgtest.New(t, pgtest.Options{})
	ctx := context.Background()
	db := pgtest.NewDatabase(t, c, "")
	if err := c.Exec(ctx, db, `CREATE TABLE task_sessions (id text PRIMARY KEY, state text);
		INSERT INTO task_sessions SELECT 's' || g, 'x' FROM generate_series(1, 2000) g`); err != nil {
		t.Fatal(err)
	}
	spec := models.TableSpec{Name: "task_sessions", Columns: []models.ColumnSpec{{Name: "id", Required: true}, {Name: "state"}}}
	password := strings.Split(strings.Split(c.DSN(db), ":")[2], "@")[0]

	// stop SIGSTOPs pid and returns the SIGCONT to defer (also run by
	// t.Cleanup, so a failing test never leaves a stopped server behind).
	stop := func(t *testing.T, pid int) func() {
		t.Helper()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP %d: %v", pid, err)
		}
		cont := func() { syscall.Kill(pid, syscall.SIGCONT) }
		t.Cleanup(cont)
		return cont
	}
	// within runs f and fails t if it takes longer than bound.
	within := func(t *testing.T, what string, bound time.Duration, f func() error) (time.Duration, error) {
		t.Helper()
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return time.Since(start), err
		case <-time.After(bound):
			t.Fatalf("%s: still blocked after %s: the frozen server hangs the run", what, bound)
			return 0, nil
		}
	}

	t.Run("backend stopped during a scan", func(t *testing.T) {
		const stall = 2 * time.Second
		src, err := OpenWith(ctx, c.DSN(db), OpenOptions{StallTimeout: stall, ConnectTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		snap, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		var pid int
		var idle string
		if err := snap.Query(ctx, `SELECT pg_backend_pid(), current_setting('idle_in_transaction_session_timeout')`, nil, func(row []any) error {
			pid, idle = int(row[0].(int32)), row[1].(string)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// The server-side extra: an idle snapshot is bounded too.
		if idle != "10min" {
			t.Errorf("idle_in_transaction_session_timeout = %q, want 10min (max(2 x stall, 10m))", idle)
		}
		cont := stop(t, pid)
		defer cont()
		took, err := within(t, "scan", 30*time.Second, func() error {
			return snap.Scan(ctx, spec, func([]any) error { return nil })
		})
		if !errors.Is(err, ErrStalled) {
			t.Fatalf("scan of a frozen backend: %v, want ErrStalled", err)
		}
		// The watchdog looks 20 times per timeout: it fires after the
		// timeout, and well before twice it. The timeout counts from the
		// backend's last data, which came just before the scan began (a run
		// measured 1.997 s for 2 s), hence the tenth below it.
		if low := stall - stall/10; took < low || took > 2*stall+time.Second {
			t.Errorf("failed after %s, want within [%s, %s]", took, low, 2*stall+time.Second)
		}
		msg := err.Error()
		for _, want := range []string{src.Location(), "task_sessions", "2s", "stall timeout", "stall_timeout", "--stall-timeout"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error does not say %q: %s", want, msg)
			}
		}
		if strings.Contains(msg, password) || strings.Contains(src.Location(), password) {
			t.Errorf("the password is in the error or location: %s", msg)
		}
		t.Logf("after %s: %s", took.Round(time.Millisecond), msg)
		// Nothing else hangs on the dead connection.
		if _, err := within(t, "close", 10*time.Second, func() error { snap.Close(); return src.Close() }); err != nil {
			t.Logf("close after the stall: %v", err)
		}
	})

	t.Run("backend stopped in the middle of a table", func(t *testing.T) {
		// 20 MB of rows: more than the socket buffers hold, so the scan
		// must wait for the server after the first rows.
		if err := c.Exec(ctx, db, `CREATE TABLE task_session_turns AS
			SELECT 't' || g AS id, repeat('x', 200) AS state FROM generate_series(1, 100000) g`); err != nil {
			t.Fatal(err)
		}
		const stall = 2 * time.Second
		src, err := OpenWith(ctx, c.DSN(db), OpenOptions{StallTimeout: stall})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		snap, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		var pid int
		if err := snap.Query(ctx, `SELECT pg_backend_pid()`, nil, func(row []any) error { pid = int(row[0].(int32)); return nil }); err != nil {
			t.Fatal(err)
		}
		rows := 0
		var stopped time.Time
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })
		turns := models.TableSpec{Name: "task_session_turns", Columns: spec.Columns}
		_, err = within(t, "scan", 30*time.Second, func() error {
			return snap.Scan(ctx, turns, func([]any) error {
				if rows++; rows == 1 {
					if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
						return err
					}
					stopped = time.Now()
				}
				return nil
			})
		})
		took := time.Since(stopped)
		syscall.Kill(pid, syscall.SIGCONT)
		if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "read task_session_turns") {
			t.Fatalf("scan after %d rows: %v, want ErrStalled naming task_session_turns", rows, err)
		}
		if rows >= 100000 || took < stall || took > 2*stall+time.Second {
			t.Errorf("failed after %d rows and %s", rows, took)
		}
		t.Logf("after %d rows and %s: %v", rows, took.Round(time.Millisecond), err)
	})

	t.Run("a slow consumer is not a stall", func(t *testing.T) {
		src, err := OpenWith(ctx, c.DSN(db), OpenOptions{StallTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		snap, err := src.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		rows := 0
		if err := snap.Scan(ctx, spec, func([]any) error {
			if rows++; rows == 1 {
				time.Sleep(2500 * time.Millisecond) // the pipeline busy elsewhere
			}
			return nil
		}); err != nil {
			t.Fatalf("scan with a slow consumer: %v", err)
		}
		// Idle between two queries for longer than the stall timeout.
		time.Sleep(1500 * time.Millisecond)
		if err := snap.Query(ctx, `SELECT count(*) FROM task_sessions`, nil, func([]any) error { return nil }); err != nil {
			t.Fatalf("query after an idle gap: %v", err)
		}
		if rows != 2000 {
			t.Errorf("rows = %d, want 2000", rows)
		}
	})

	t.Run("postmaster stopped: connect timeout", func(t *testing.T) {
		cont := stop(t, c.PID())
		defer cont()
		const connect = 1500 * time.Millisecond
		took, err := within(t, "connect", 30*time.Second, func() error {
			src, err := OpenWith(ctx, c.DSN(db), OpenOptions{ConnectTimeout: connect, StallTimeout: time.Minute})
			if err == nil {
				src.Close()
				return fmt.Errorf("connected to a stopped server")
			}
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "connect timeout (1.5s)") || !strings.Contains(err.Error(), "connect_timeout") ||
			!strings.Contains(err.Error(), location.PrintableLocation(c.DSN(db))) {
			t.Fatalf("connect to a stopped server: %v", err)
		}
		if took < connect || took > connect+3*time.Second {
			t.Errorf("failed after %s, want about %s", took, connect)
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("the password is in the error: %v", err)
		}
		t.Logf("after %s: %v", took.Round(time.Millisecond), err)
	})
}
