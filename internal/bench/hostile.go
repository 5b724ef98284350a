package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Stores with pathological values, for peak RSS: the real fresh-activated
// fixture with the values of the membound tests (extract/membound): a
// 300 MB model, a 600 kB one, a 2 MB integer and a 100 kB timestamp, a
// 5 MB turn metadata, a 30 MB kandev_version, 2,000,000 junk kandev_meta
// rows and a 300 MB subagent-task message. A run must stay under
// 256 MiB whatever the values.

const (
	hostileHuge = 300_000_000
	hostileMid  = 600_000
	hostileVer  = 30_000_000
	hostileJunk = 2_000_000
	hostilePad  = 5_000_000
	// hostileVersion names the statements below: a change regenerates the
	// cached store.
	hostileVersion = 1
)

func hostileSQLite(first func(q string) string) []string {
	ids := func(off int) string {
		return first(fmt.Sprintf("SELECT id FROM task_session_subagents ORDER BY id LIMIT 1 OFFSET %d", off))
	}
	turn := first("SELECT id FROM task_session_turns ORDER BY id LIMIT 1")
	return []string{
		fmt.Sprintf(`UPDATE task_session_subagents SET model = printf('%%.*c', %d, 'm') WHERE id = '%s'`, hostileHuge, ids(0)),
		fmt.Sprintf(`UPDATE task_session_subagents SET model = printf('%%.*c', %d, 'x') WHERE id = '%s'`, hostileMid, ids(1)),
		fmt.Sprintf(`UPDATE task_session_subagents SET model = printf('%%.*c', 255, 'a') || 'é' || printf('%%.*c', 1000, 'b') WHERE id = '%s'`, ids(2)),
		fmt.Sprintf(`UPDATE task_session_subagents SET settled_at = '2026-08-20 12:00:00+00:00' || printf('%%.*c', 100000, ' ') WHERE id = '%s'`, ids(3)),
		fmt.Sprintf(`UPDATE task_session_subagents SET total_tokens = printf('%%.*c', 2000000, 'n') WHERE id = '%s'`, ids(4)),
		fmt.Sprintf(`UPDATE task_session_turns SET metadata = '{"workflow_step_id_at_start":"s","pad":"' || printf('%%.*c', %d, 'p') || '"}' WHERE id = '%s'`, hostilePad, turn),
		fmt.Sprintf(`UPDATE kandev_meta SET value = printf('%%.*c', %d, 'v') WHERE key = 'kandev_version'`, hostileVer),
		fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
			INSERT INTO kandev_meta (key, value) SELECT 'junk-' || i, printf('%%.*c', 64, 'j') FROM n`, hostileJunk),
		fmt.Sprintf(`UPDATE task_session_messages SET metadata = '{"normalized":{"kind":"subagent_task"},"pad":"' || printf('%%.*c', %d, 'p') || '"}'
			WHERE id = (SELECT id FROM task_session_messages ORDER BY created_at DESC LIMIT 1)`, hostileHuge),
	}
}

// hostilePostgres are the same values where PostgreSQL's types allow them
// (its timestamp and integer columns cannot hold such text).
var hostilePostgres = []string{
	fmt.Sprintf(`UPDATE task_session_subagents SET model = repeat('m', %d) WHERE id = (SELECT id FROM task_session_subagents ORDER BY id LIMIT 1)`, hostileHuge),
	fmt.Sprintf(`UPDATE task_session_subagents SET model = repeat('x', %d) WHERE id = (SELECT id FROM task_session_subagents ORDER BY id LIMIT 1 OFFSET 1)`, hostileMid),
	`UPDATE task_session_subagents SET model = repeat('a', 255) || 'é' || repeat('b', 1000) WHERE id = (SELECT id FROM task_session_subagents ORDER BY id LIMIT 1 OFFSET 2)`,
	fmt.Sprintf(`UPDATE task_session_turns SET metadata = '{"workflow_step_id_at_start":"s","pad":"' || repeat('p', %d) || '"}' WHERE id = (SELECT id FROM task_session_turns ORDER BY id LIMIT 1)`, hostilePad),
	fmt.Sprintf(`UPDATE kandev_meta SET value = repeat('v', %d) WHERE key = 'kandev_version'`, hostileVer),
	fmt.Sprintf(`INSERT INTO kandev_meta (key, value) SELECT 'junk-' || i, repeat('j', 64) FROM generate_series(1, %d) i`, hostileJunk),
	fmt.Sprintf(`UPDATE task_session_messages SET metadata = '{"normalized":{"kind":"subagent_task"},"pad":"' || repeat('p', %d) || '"}'
		WHERE id = (SELECT id FROM task_session_messages ORDER BY created_at DESC LIMIT 1)`, hostileHuge),
}

// ensureHostile returns the cached pathological SQLite store, making it
// from the fixture when missing.
func ensureHostile(ctx context.Context, dir, repo string) (string, storeInfo, error) {
	fixture := filepath.Join(repo, "testdata", "kandev", "fresh-activated.db")
	fp, err := fileFingerprint(fixture, fmt.Sprintf("hostile v%d", hostileVersion))
	if err != nil {
		return "", storeInfo{}, err
	}
	path := filepath.Join(dir, "store-hostile-"+fp+".db")
	if info, ok := cachedStore(path); ok {
		return path, info, nil
	}
	removeOld(dir, "store-hostile-")
	logf("making the pathological store at %s — cached for later runs", path)
	t0 := time.Now()
	tmp := path + ".tmp"
	if err := copyFile(fixture, tmp); err != nil {
		return "", storeInfo{}, err
	}
	defer os.Remove(tmp)
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: tmp}).EscapedPath()+"?_pragma=synchronous(OFF)")
	if err != nil {
		return "", storeInfo{}, err
	}
	db.SetMaxOpenConns(1)
	var qerr error
	first := func(q string) string {
		var s string
		if err := db.QueryRowContext(ctx, q).Scan(&s); err != nil && qerr == nil {
			qerr = fmt.Errorf("%s: %w", q, err)
		}
		return s
	}
	stmts := hostileSQLite(first)
	if qerr != nil {
		db.Close()
		return "", storeInfo{}, qerr
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			return "", storeInfo{}, fmt.Errorf("pathological store: %s: %w", firstWords(q), err)
		}
	}
	if err := db.Close(); err != nil {
		return "", storeInfo{}, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", storeInfo{}, err
	}
	info, err := describeStore(ctx, path, 0, fp, time.Since(t0))
	if err != nil {
		return "", info, err
	}
	return path, info, writeInfo(path, info)
}

func writeInfo(path string, info storeInfo) error {
	b, _ := json.MarshalIndent(info, "", "  ")
	return os.WriteFile(path+".json", b, 0o644)
}
