package extract_test

// The source contract: every behaviour a models.Source promises, run
// against the same Kandev store as a SQLite file and as a PostgreSQL dump
// (the fixtures of testdata/kandev). The pipeline relies on these and
// nothing else of the store, so they are tested here, on the source alone,
// rather than through whole runs.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/extract"
	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/internal/instant"
	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/internal/testkit"
	"github.com/kandev/kandev-extract/models"
)

// store is one copy of a fixture under test, in one dialect: its location
// for extract.Open, and exec to change it behind the extractor's back.
type store struct {
	dialect  models.Dialect
	location string
	exec     func(t *testing.T, stmts ...string)
}

// stores returns a fresh copy of the fixture (base name) in each dialect:
// a SQLite file of its own, a PostgreSQL database of its own.
func stores(t *testing.T, fixture string) []store {
	t.Helper()
	path := testkit.CopyFixture(t, fixture+".db")
	sqlite := store{dialect: models.DialectSQLite, location: path,
		exec: func(t *testing.T, stmts ...string) { testkit.SQLiteExec(t, path, stmts...) }}
	c := pgtest.Shared(t)
	dsn := c.DSN(pgtest.NewDatabase(t, c, testkit.Fixture(t, fixture+".pg.sql")))
	pg := store{dialect: models.DialectPostgres, location: dsn, exec: func(t *testing.T, stmts ...string) {
		t.Helper()
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}}
	return []store{sqlite, pg}
}

// forEachStore runs fn on the fixture in each dialect, in parallel.
func forEachStore(t *testing.T, fixture string, fn func(t *testing.T, s store)) {
	t.Helper()
	for _, s := range stores(t, fixture) {
		t.Run(string(s.dialect), func(t *testing.T) {
			t.Parallel()
			fn(t, s)
		})
	}
}

func begin(t *testing.T, location string) (models.Source, models.Snapshot) {
	t.Helper()
	ctx := context.Background()
	src, err := extract.Open(ctx, location)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	snap, err := src.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return src, snap
}

// reading is everything the pipeline reads of a snapshot, in words that
// do not depend on the dialect.
type reading struct {
	meta    []string            // key=value, sorted
	shape   string              // the subagent table's columns and unique keys
	ids     map[string][]string // per scanned source table, its row ids, sorted
	health  string              // the message pass's writer-health counts, when capture_since parses
	forkIDs []string            // task_session_subagents' ids read through extract.Fork
}

// readAll reads a snapshot the way a run does: the activation keys, the
// table shape, every catalog scan, the writer-health comparison and the
// message pass, and a scan on a fork of the snapshot.
func readAll(t *testing.T, snap models.Snapshot) reading {
	t.Helper()
	ctx := context.Background()
	var r reading
	meta, err := snap.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var since *time.Time
	for _, e := range meta {
		if e.Key != models.KeySchemaInitializedAt { // the store's own fingerprint: each dump has its own
			r.meta = append(r.meta, e.Key+"="+e.Value)
		}
		if e.Key == models.KeyCaptureSince {
			if at, _, err := instant.ParseKey(e.Value); err == nil {
				since = &at
			}
		}
	}
	slices.Sort(r.meta)
	schema, err := snap.SubagentSchema(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r.shape = fmt.Sprint(schema.Exists, len(schema.Columns), schema.UniqueKeys)
	scanIDs := func(from models.Snapshot, tbl *models.Table) []string {
		var ids []string
		spec := extract.Spec(tbl, schema.Exists)
		id := spec.Column("id")
		if err := from.Scan(ctx, spec, func(row []any) error {
			if len(row) != len(tbl.Read) {
				return fmt.Errorf("%s: a row of %d cells, the catalog reads %d", tbl.Source, len(row), len(tbl.Read))
			}
			ids = append(ids, fmt.Sprint(row[id]))
			return nil
		}); err != nil {
			t.Fatalf("scan %s: %v", tbl.Source, err)
		}
		slices.Sort(ids)
		return ids
	}
	r.ids = map[string][]string{}
	for _, tbl := range models.Scanned() {
		if tbl.Source == models.SourceSubagents && !schema.Exists {
			continue
		}
		r.ids[tbl.Source] = scanIDs(snap, tbl)
	}
	if since != nil && schema.Exists {
		// The pass agrees with the SQL it replaces in either dialect:
		// extract/evidence's TestMessagePassMatchesSQL and
		// TestMessagePassPostgres, on these fixtures.
		_, pass, err := evidence.ReadMessages(ctx, snap, since, true, since)
		if err != nil {
			t.Fatal(err)
		}
		r.health = counts(*pass)
	}
	fork, _, err := extract.Fork(ctx, snap)
	if err != nil {
		t.Fatal(err)
	}
	if fork != nil && schema.Exists {
		defer fork.Close()
		r.forkIDs = scanIDs(fork, models.MustTable(models.TableFact))
	}
	return r
}

func counts(c models.HealthCounts) string {
	last := "NULL"
	if c.LastObserved != nil {
		last = c.LastObserved.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano) // PostgreSQL holds microseconds
	}
	return fmt.Sprintf("shortfall=%d excess=%d expected=%d observed=%d collisions=%d malformed=%d last=%s",
		c.Shortfall, c.Excess, c.Expected, c.Observed, c.Collisions, c.MalformedMetadata, last)
}

// TestContractDialectsReadTheSameStore: the same store read from SQLite
// and from PostgreSQL gives the same activation keys, table shape, rows of
// every catalog scan (by id; the default workflow's by count), writer-health counts (the message
// pass's), and a fork of the snapshot reads what the snapshot does.
func TestContractDialectsReadTheSameStore(t *testing.T) {
	t.Parallel()
	for _, fx := range []struct {
		fixture string
		// twins: both dumps were taken of one store. The upgraded-backfill
		// dumps were activated separately: the same rows, other instants.
		twins bool
	}{{"fresh-activated", true}, {"upgraded-backfill", false}} {
		fixture := fx.fixture
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			var got []reading
			for _, s := range stores(t, fixture) {
				_, snap := begin(t, s.location)
				r := readAll(t, snap)
				if r.health == "" {
					t.Errorf("%s: no writer health", s.dialect)
				}
				if r.forkIDs != nil && !slices.Equal(r.forkIDs, r.ids[models.SourceSubagents]) {
					t.Errorf("%s: the fork read %d subagent rows, the snapshot %d", s.dialect, len(r.forkIDs), len(r.ids[models.SourceSubagents]))
				}
				for table, ids := range r.ids {
					if len(ids) == 0 {
						t.Errorf("%s: %s read no rows", s.dialect, table)
					}
				}
				got = append(got, r)
			}
			lite, pg := got[0], got[1]
			if !fx.twins {
				for _, r := range []*reading{&lite, &pg} {
					for i, kv := range r.meta {
						r.meta[i], _, _ = strings.Cut(kv, "=")
					}
					r.health, _, _ = strings.Cut(r.health, " last=")
				}
			}
			if !slices.Equal(lite.meta, pg.meta) {
				t.Errorf("kandev_meta:\n sqlite   %v\n postgres %v", lite.meta, pg.meta)
			}
			if lite.shape != pg.shape {
				t.Errorf("shape: sqlite %s, postgres %s", lite.shape, pg.shape)
			}
			for table, ids := range lite.ids {
				same := slices.Equal(ids, pg.ids[table])
				if table == models.SourceWorkflows || table == models.SourceSteps {
					// Kandev seeds its default workflow with fresh ids in each
					// database: the same rows, other ids.
					same = len(ids) == len(pg.ids[table])
				}
				if !same {
					t.Errorf("%s: sqlite read %d rows, postgres %d, or other ids", table, len(ids), len(pg.ids[table]))
				}
			}
			if lite.health != pg.health {
				t.Errorf("writer health:\n sqlite   %s\n postgres %s", lite.health, pg.health)
			}
		})
	}
}

// TestContractSnapshotIsConsistent: a change committed by a writer after
// the snapshot began is not in it (and the writer is not blocked: SQLite in
// WAL mode, as Kandev runs it); the next snapshot has it.
func TestContractSnapshotIsConsistent(t *testing.T) {
	t.Parallel()
	forEachStore(t, "fresh-activated", func(t *testing.T, s store) {
		if s.dialect == models.DialectSQLite {
			s.exec(t, `PRAGMA journal_mode=WAL`)
		}
		tasks := models.MustTable(models.TableTask)
		state := tasks.ReadCol("state")
		changed := func(snap models.Snapshot) (rows, seen int) {
			if err := snap.Scan(context.Background(), extract.Spec(tasks, true), func(row []any) error {
				rows++
				if row[state] == "kx-contract" {
					seen++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return rows, seen
		}
		_, snap := begin(t, s.location)
		rows, _ := changed(snap)
		s.exec(t, `UPDATE tasks SET state = 'kx-contract'`)
		if n, seen := changed(snap); n != rows || seen != 0 {
			t.Errorf("the snapshot saw %d of %d rows changed after it began", seen, n)
		}
		_, next := begin(t, s.location)
		if n, seen := changed(next); n != rows || seen != rows || rows == 0 {
			t.Errorf("the next snapshot has %d of %d rows changed, want all %d", seen, n, rows)
		}
	})
}

// TestContractSourceIsNeverWritten: reading everything, twice, leaves a
// read-only SQLite file and its read-only directory as they were (no
// -wal, -shm or -journal beside it); a write through the snapshot is
// refused in both dialects.
func TestContractSourceIsNeverWritten(t *testing.T) {
	t.Parallel()
	forEachStore(t, "upgraded-backfill", func(t *testing.T, s store) {
		var before, beside string
		if s.dialect == models.DialectSQLite {
			dir := filepath.Dir(s.location)
			before, beside = testkit.HashFile(t, s.location), listDir(t, dir)
			os.Chmod(s.location, 0o444)
			os.Chmod(dir, 0o555)
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
		}
		for range 2 {
			_, snap := begin(t, s.location)
			readAll(t, snap)
			err := snap.Query(context.Background(), `CREATE TABLE kx_contract_probe (a INTEGER)`, nil, func([]any) error { return nil })
			if err == nil {
				t.Error("a write through the snapshot succeeded")
			}
			snap.Close()
		}
		if s.dialect == models.DialectSQLite {
			if after := testkit.HashFile(t, s.location); after != before {
				t.Errorf("source changed: %s -> %s", before, after)
			}
			if got := listDir(t, filepath.Dir(s.location)); got != beside {
				t.Errorf("files beside the source changed: %s -> %s", beside, got)
			}
		}
	})
}

// TestContractMissingRequiredColumn: a scan of a table without a column
// the catalog requires fails with a MissingColumnError naming the store,
// the table and the column, never with an SQL error.
func TestContractMissingRequiredColumn(t *testing.T) {
	t.Parallel()
	forEachStore(t, "fresh-activated", func(t *testing.T, s store) {
		if s.dialect == models.DialectSQLite {
			s.exec(t, `DROP INDEX IF EXISTS idx_turns_session_started`, `DROP INDEX IF EXISTS idx_turns_session_times`)
		}
		s.exec(t, `ALTER TABLE task_session_turns DROP COLUMN started_at`)
		src, snap := begin(t, s.location)
		err := snap.Scan(context.Background(), extract.Spec(models.MustTable(models.TableTurn), true), func([]any) error { return nil })
		var mc *models.MissingColumnError
		if !errors.As(err, &mc) || mc.Table != models.SourceTurns || mc.Column != "started_at" || !strings.Contains(err.Error(), src.Location()) {
			t.Fatalf("error = %v, want a missing-column error naming %s, task_session_turns and started_at", err, src.Location())
		}
	})
}

// TestContractNotASQLiteFile: a file that is not a SQLite database fails
// to open or read with an error naming it.
func TestContractNotASQLiteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string][]byte{"empty.db": nil, "text.db": []byte("hello, this is not a database at all........")} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		src, err := extract.Open(ctx, p)
		if err == nil {
			var snap models.Snapshot
			if snap, err = src.Begin(ctx); err == nil {
				_, err = snap.Meta(ctx)
				snap.Close()
			}
			src.Close()
		}
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error = %v, want one naming the file", name, err)
		}
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}
