package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/internal/pgtest"
	"github.com/kandev/kandev-extract/transform"
)

// PostgreSQL: the bench starts its own throwaway server (internal/pgtest:
// a fresh initdb in a temporary directory, stopped and removed at the
// end), creates Kandev's PostgreSQL schema from the real fixture's dump
// (testdata/kandev/fresh-activated.pg.sql), replaces the rows of the tables
// a run reads with a SQLite store's — the same generated store the SQLite
// figures use — and VACUUM ANALYZEs it. Timestamps are converted as
// Kandev's pgx driver writes them (UTC wall clock, microseconds).

// pgTables are the tables loaded from the SQLite store, parents first.
var pgTables = []string{"kandev_meta", "workflows", "workflow_steps", "tasks", "task_sessions",
	"task_session_turns", "task_session_messages", "task_session_subagents"}

// pgServer is the bench's PostgreSQL server.
type pgServer struct {
	c    *pgtest.Cluster
	psql string
}

func startPostgres(ctx context.Context) (*pgServer, error) {
	bins, err := pgtest.FindBinaries()
	if err != nil {
		return nil, err
	}
	if bins.Psql == "" {
		return nil, fmt.Errorf("psql not found (the PostgreSQL floor runs in psql)")
	}
	c, err := pgtest.Start(ctx, pgtest.Options{
		// PostgreSQL's own default (pgtest's is 32MB); the rest of pgtest's
		// settings (fsync off and the like) change nothing for reads.
		Settings: map[string]string{"shared_buffers": "128MB"},
		Logf:     func(f string, a ...any) { logf(f, a...) },
	})
	if err != nil {
		return nil, err
	}
	return &pgServer{c: c, psql: bins.Psql}, nil
}

func (s *pgServer) stop() {
	if err := s.c.Stop(); err != nil {
		logf("postgres: stop: %v", err)
	}
}

// load creates database name from the fixture dump and loads the tables
// a run reads from the SQLite store.
func (s *pgServer) load(ctx context.Context, repo, name, store string) (map[string]int64, error) {
	t0 := time.Now()
	if err := s.c.CreateDatabase(ctx, name); err != nil {
		return nil, err
	}
	if err := s.c.LoadDump(ctx, name, filepath.Join(repo, "testdata", "kandev", "fresh-activated.pg.sql")); err != nil {
		return nil, err
	}
	conn, err := s.c.Connect(ctx, name)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	src, err := openStore(store)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	exec := func(q string, args ...any) error {
		_, err := conn.Exec(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("postgres load: %s: %w", firstWords(q), err)
		}
		return nil
	}
	// Foreign keys are not checked while loading (the rows come from a
	// consistent store), and the secondary indexes are built after it.
	if err := exec(`SET session_replication_role = replica`); err != nil {
		return nil, err
	}
	if err := exec(`TRUNCATE ` + strings.Join(pgTables, ", ") + ` CASCADE`); err != nil {
		return nil, err
	}
	var indexes []string
	for _, t := range pgTables {
		rows, _ := conn.Query(ctx, `SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid) FROM pg_index
			WHERE indrelid = to_regclass($1) AND NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conindid = indexrelid)`, "public."+t)
		var drop []string
		var name, def string
		_, err := pgx.ForEachRow(rows, []any{&name, &def}, func() error {
			drop = append(drop, name)
			indexes = append(indexes, def)
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, d := range drop {
			if err := exec(`DROP INDEX ` + d); err != nil {
				return nil, err
			}
		}
	}
	counts := map[string]int64{}
	for _, t := range pgTables {
		n, err := copyTable(ctx, conn, src, t)
		if err != nil {
			return nil, err
		}
		counts[t] = n
	}
	t1 := time.Now()
	for _, def := range indexes {
		if err := exec(def); err != nil {
			return nil, err
		}
	}
	logf("postgres: %d indexes rebuilt in %s", len(indexes), time.Since(t1).Round(time.Millisecond))
	for _, t := range pgTables {
		if err := exec(`VACUUM (ANALYZE) ` + t); err != nil {
			return nil, err
		}
	}
	logf("postgres: loaded %s into database %s in %s", filepath.Base(store), name, time.Since(t0).Round(time.Second))
	return counts, nil
}

// copyTable copies the columns a PostgreSQL table shares with the SQLite
// table of the same name.
func copyTable(ctx context.Context, conn *pgx.Conn, src *sql.DB, table string) (int64, error) {
	t0 := time.Now()
	rows, err := conn.Query(ctx, `SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
		WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, "public."+table)
	if err != nil {
		return 0, err
	}
	pgTypes := map[string]string{}
	var col, typ string
	if _, err := pgx.ForEachRow(rows, []any{&col, &typ}, func() error { pgTypes[col] = typ; return nil }); err != nil {
		return 0, err
	}
	have, err := tableColumns(ctx, src, table)
	if err != nil {
		return 0, err
	}
	var cols, sel []string
	var kinds []string
	for _, c := range have {
		t, ok := pgTypes[c]
		if !ok {
			continue
		}
		cols = append(cols, c)
		q := `"` + c + `"`
		switch {
		case strings.HasPrefix(t, "timestamp"):
			kinds = append(kinds, "stamp")
			sel = append(sel, "CAST("+q+" AS TEXT)")
		case t == "text" || strings.HasPrefix(t, "character"):
			kinds = append(kinds, "text")
			sel = append(sel, q)
		default:
			kinds = append(kinds, "other")
			sel = append(sel, q)
		}
	}
	r, err := src.QueryContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+table+` ORDER BY rowid`)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var rerr error
	next := func() ([]any, bool) {
		if !r.Next() {
			return nil, false
		}
		if err := r.Scan(ptrs...); err != nil {
			rerr = err
			return nil, false
		}
		out := make([]any, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			switch kinds[i] {
			case "stamp":
				if s, ok := v.(string); ok {
					t, _, err := transform.ParseStamp(s)
					if err != nil {
						rerr = fmt.Errorf("%s.%s: %q: %w", table, cols[i], s, err)
						return nil, false
					}
					v = t.UTC()
				}
			case "text":
				switch x := v.(type) {
				case int64:
					v = strconv.FormatInt(x, 10)
				case float64:
					v = strconv.FormatFloat(x, 'g', -1, 64)
				}
			}
			out[i] = v
		}
		return out, true
	}
	n, err := conn.CopyFrom(ctx, pgx.Identifier{table}, cols, &rowSource{next: next, err: func() error {
		if rerr != nil {
			return rerr
		}
		return r.Err()
	}})
	if err != nil {
		return n, fmt.Errorf("postgres load %s: %w", table, err)
	}
	logf("postgres: %s: %d rows in %s", table, n, time.Since(t0).Round(time.Millisecond))
	return n, nil
}

type rowSource struct {
	next func() ([]any, bool)
	err  func() error
	cur  []any
}

func (s *rowSource) Next() bool {
	var ok bool
	s.cur, ok = s.next()
	return ok
}
func (s *rowSource) Values() ([]any, error) { return s.cur, nil }
func (s *rowSource) Err() error             { return s.err() }

func firstWords(q string) string {
	f := strings.Fields(q)
	if len(f) > 4 {
		f = f[:4]
	}
	return strings.Join(f, " ")
}

// pgTime matches psql's \timing output.
var pgTime = regexp.MustCompile(`(?m)^Time: ([0-9.]+) ms`)

// runPGFloor runs the PostgreSQL floor in psql: one psql process for the
// whole script, \timing per statement.
func runPGFloor(ctx context.Context, s *pgServer, db, script string, queries []floorQuery) (floorStats, error) {
	var fs floorStats
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, s.psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "--no-password",
		"-d", s.c.SocketDSN(db), "-f", script)
	cmd.Env = append(os.Environ(), "PGTZ=UTC")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	p, err := runProc(cmd)
	fs.proc = p
	if err != nil || stderr.Len() > 0 {
		return fs, fmt.Errorf("psql floor: %v\n%s", err, tail(stderr.String(), 2000))
	}
	m := pgTime.FindAllStringSubmatch(stdout.String(), -1)
	fs.Parts = map[string]time.Duration{}
	if len(m) == len(queries) {
		for i, q := range queries {
			ms, _ := strconv.ParseFloat(m[i][1], 64)
			fs.Parts[q.Name] += time.Duration(ms * float64(time.Millisecond))
		}
	}
	return fs, nil
}

func writePGFloorScript(path string, queries []floorQuery) error {
	var b strings.Builder
	b.WriteString("-- The PostgreSQL floor (generated by internal/bench from floor-postgres.sql), output discarded.\n\\timing on\n")
	for _, q := range queries {
		b.WriteString(q.SQL + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// hostile creates the pathological PostgreSQL store (hostile.go) from the
// fixture and returns its DSN.
func (s *pgServer) hostile(ctx context.Context, repo string) (string, storeInfo, error) {
	const db = "bench_hostile"
	t0 := time.Now()
	if err := s.c.CreateDatabase(ctx, db); err != nil {
		return "", storeInfo{}, err
	}
	if err := s.c.LoadDump(ctx, db, filepath.Join(repo, "testdata", "kandev", "fresh-activated.pg.sql")); err != nil {
		return "", storeInfo{}, err
	}
	for _, q := range hostilePostgres {
		if err := s.c.Exec(ctx, db, q); err != nil {
			return "", storeInfo{}, fmt.Errorf("%s: %w", firstWords(q), err)
		}
	}
	if err := s.c.Exec(ctx, db, "VACUUM ANALYZE"); err != nil {
		return "", storeInfo{}, err
	}
	info := storeInfo{GeneratedIn: time.Since(t0).Round(time.Second).String(), Rows: map[string]int64{}}
	conn, err := s.c.Connect(ctx, db)
	if err != nil {
		return "", info, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, t := range []string{"task_session_subagents", "task_sessions", "task_session_turns", "task_session_messages", "kandev_meta"} {
		var n int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
			return "", info, err
		}
		info.Rows[t] = n
	}
	if err := conn.QueryRow(ctx, "SELECT pg_database_size(current_database())").Scan(&info.Bytes); err != nil {
		return "", info, err
	}
	return s.c.DSN(db), info, nil
}

// servePostgres loads one size into a throwaway server and keeps it up
// until interrupted (-pg-serve).
func servePostgres(ctx context.Context, c config, root string) error {
	sz, err := parseSizes(c.pgServe)
	if err != nil || len(sz) != 1 {
		return fmt.Errorf("-pg-serve: one size")
	}
	store, _, err := ensureStore(ctx, c.dir, root, sz[0], logf)
	if err != nil {
		return err
	}
	pg, err := startPostgres(ctx)
	if err != nil {
		return err
	}
	defer pg.stop()
	db := "bench_" + strings.NewReplacer("-", "_", ".", "_").Replace(sz[0].Name)
	if _, err := pg.load(ctx, root, db, store); err != nil {
		return err
	}
	fmt.Printf("DSN %s\nsocket %s\n", pg.c.DSN(db), pg.c.SocketDSN(db))
	<-ctx.Done()
	return nil
}
