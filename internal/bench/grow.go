package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"
)

// A store grown from a real Kandev fixture: every task, with its sessions,
// turns, messages and subagent rows, copied factor-1 more times under new
// ids (id || '-g' || k for the copy k, and the same for the ids that
// reference them), so the grown store keeps the fixture's exact shape —
// Kandev's schema, indexes, timestamp text, message metadata and
// subagent JSON, activation keys — at factor times the rows. Tool call ids
// are kept: a writer-health key is (task_session_id, tool_call_id), and the
// session ids differ per copy. The store is ANALYZEd at the end, as Kandev's
// own `PRAGMA optimize` would keep it.

// growTables are the tables copied, parents first, with the columns that
// hold ids of copied rows.
var growTables = []struct {
	table string
	ids   []string
}{
	{"tasks", []string{"id", "parent_id", "external_id"}},
	{"task_sessions", []string{"id", "task_id"}},
	{"task_session_turns", []string{"id", "task_session_id", "task_id"}},
	{"task_session_messages", []string{"id", "task_session_id", "task_id", "turn_id"}},
	{"task_session_subagents", []string{"id", "task_session_id", "task_id", "turn_id"}},
}

// growStore writes dst: src grown factor times. It is written beside dst
// and renamed into place when complete.
func growStore(ctx context.Context, src, dst string, factor int) error {
	if factor < 2 {
		return fmt.Errorf("grow: factor %d: want at least 2", factor)
	}
	tmp := dst + ".grow-tmp"
	os.Remove(tmp)
	if err := copyFile(src, tmp); err != nil {
		return err
	}
	defer os.Remove(tmp)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: tmp}).EscapedPath()+"?_pragma=synchronous(OFF)&_pragma=journal_mode(OFF)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, g := range growTables {
		cols, err := tableColumns(ctx, db, g.table)
		if err != nil {
			return err
		}
		if len(cols) == 0 {
			return fmt.Errorf("grow: %s has no table %s", src, g.table)
		}
		remap := map[string]bool{}
		for _, c := range g.ids {
			remap[c] = true
		}
		sel := make([]string, len(cols))
		quoted := make([]string, len(cols))
		for i, c := range cols {
			q := `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
			quoted[i] = q
			sel[i] = "t." + q
			if remap[c] {
				sel[i] = fmt.Sprintf("CASE WHEN t.%[1]s IS NULL OR t.%[1]s = '' THEN t.%[1]s ELSE t.%[1]s || '-g' || g.k END", q)
			}
		}
		q := fmt.Sprintf(`WITH RECURSIVE g(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM g WHERE k < %d)
			INSERT INTO %s (%s) SELECT %s FROM g, (SELECT * FROM %s ORDER BY rowid) t ORDER BY g.k`,
			factor-1, g.table, strings.Join(quoted, ", "), strings.Join(sel, ", "), g.table)
		t0 := time.Now()
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("grow %s: %w", g.table, err)
		}
		logf("grow: %s ×%d in %s", g.table, factor, time.Since(t0).Round(time.Millisecond))
	}
	if _, err := db.ExecContext(ctx, `ANALYZE`); err != nil {
		return fmt.Errorf("grow: analyze: %w", err)
	}
	if err := db.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func tableColumns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
