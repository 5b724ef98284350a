package load

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Objects analysts create in warehouse.duckdb (tables, views, schemas,
// indexes) are carried into each rebuilt file. What cannot be carried
// (macros, types, sequences, a view that no longer binds, or a file another
// process holds open for writing) is never destroyed silently: the old file
// is copied to _preserved/ first and the run says what and where.

// preservedDir holds copies of warehouse.duckdb taken before a rebuild that
// could not carry every analyst object. Nothing removes them (a swap of a
// waiting database retried while the file is held replaces its own copy).
const preservedDir = "_preserved"

// Carried reports what happened to analyst objects at a rebuild.
type Carried struct {
	// Objects are the objects carried into the new file
	// ("table main.notes", "view main.my_view").
	Objects []string
	// Lost are the objects (or the reason nothing could be read) that are
	// not in the new file.
	Lost []string
	// Preserved is the copy of the old file (relative to the warehouse)
	// that still holds them; empty when nothing was lost.
	Preserved string
	// unreadable: the old file could not be opened at all (another process
	// has it open for writing).
	unreadable bool
}

// ours reports whether a main-schema object name is one the rebuild
// creates.
func ours(name string, views []viewFile) bool {
	if name == "runs" || name == "current_runs" || name == "warehouse_build" {
		return true
	}
	for _, t := range baseTables {
		if name == t || name == t+"_history" {
			return true
		}
	}
	for _, v := range views {
		if name == v.name {
			return true
		}
	}
	return false
}

// object is an object of an attached database: its kind ("table"), schema,
// name and, where DuckDB keeps one, its definition.
type object struct{ kind, schema, name, sql string }

// analystKinds are the kinds of object an analyst can create, in the
// order they are carried (a schema before its tables, a table before its
// indexes; views last, as they may use the others).
var analystKinds = []string{"schema", "table", "index", "view", "macro, sequence or type"}

// analystObjects lists, per kind of analystKinds, the objects of the
// attached database db that the rebuild does not create.
func analystObjects(ctx context.Context, conn *sql.Conn, db string, views []viewFile) ([][]object, error) {
	where := ` WHERE database_name = ` + quote(db) + ` AND NOT internal`
	queries := []string{
		`SELECT schema_name, schema_name, NULL FROM duckdb_schemas()` + where + ` AND schema_name NOT IN ('main', 'pg_catalog', 'information_schema')`,
		`SELECT schema_name, table_name, sql FROM duckdb_tables()` + where + ` AND NOT temporary`,
		`SELECT schema_name, index_name, sql FROM duckdb_indexes() WHERE database_name = ` + quote(db),
		`SELECT schema_name, view_name, sql FROM duckdb_views()` + where + ` AND NOT temporary`,
		`SELECT schema_name, function_name, NULL FROM duckdb_functions()` + where + ` AND function_type IN ('macro', 'table_macro')
		UNION ALL SELECT schema_name, sequence_name, NULL FROM duckdb_sequences() WHERE database_name = ` + quote(db) + ` AND NOT temporary
		UNION ALL SELECT schema_name, type_name, NULL FROM duckdb_types()` + where,
	}
	out := make([][]object, len(analystKinds))
	for i, q := range queries {
		rows, err := conn.QueryContext(ctx, q)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			o := object{kind: analystKinds[i]}
			var s sql.NullString
			if err := rows.Scan(&o.schema, &o.name, &s); err != nil {
				rows.Close()
				return nil, err
			}
			o.sql = s.String
			if o.schema == "main" && ours(o.name, views) {
				continue
			}
			out[i] = append(out[i], o)
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// carryAnalystObjects copies the analyst objects of the old database at
// oldPath into the database attached as warehouse on conn, which already
// holds the rebuild's own objects.
func carryAnalystObjects(ctx context.Context, conn *sql.Conn, oldPath string, views []viewFile) (Carried, error) {
	var c Carried
	if _, err := os.Lstat(oldPath); errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if _, err := conn.ExecContext(ctx, `ATTACH `+quote(oldPath)+` AS previous (READ_ONLY)`); err != nil {
		c.Lost = append(c.Lost, "the previous warehouse.duckdb could not be opened to look for analyst objects ("+
			firstLine(err.Error())+")")
		c.unreadable = true
		return c, nil
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DETACH previous`)
	objs, err := analystObjects(ctx, conn, "previous", views)
	if err != nil {
		return unreadable(c, err), nil
	}
	schemas, tables, indexes, viewsOld, others := objs[0], objs[1], objs[2], objs[3], objs[4]
	name := func(o object) string { return o.kind + " " + o.schema + "." + o.name }
	exec := func(q string) error { _, err := conn.ExecContext(ctx, q); return err }
	// The old file is hostile input: its statements run with no file
	// access and a locked configuration, and only if they are one plain
	// CREATE of the expected kind (never OR REPLACE: the rebuild's own
	// objects exist already and cannot be replaced).
	if err := exec(`SET enable_external_access = false`); err != nil {
		return c, err
	}
	if err := exec(`SET lock_configuration = true`); err != nil {
		return c, err
	}
	run := func(o object, prefix string) error {
		if !singleCreate(o.sql, prefix) {
			return errors.New("its definition is not a single plain " + prefix + " statement this rebuild can replay safely")
		}
		return exec(o.sql)
	}
	lose := func(o object, err error) {
		c.Lost = append(c.Lost, name(o)+" ("+firstLine(err.Error())+")")
	}
	for _, o := range schemas {
		if err := exec(`CREATE SCHEMA IF NOT EXISTS warehouse.` + ident(o.name)); err != nil {
			lose(o, err)
		}
	}
	for _, o := range tables {
		err := run(o, "CREATE TABLE")
		if err == nil {
			err = exec(`INSERT INTO warehouse.` + ident(o.schema) + `.` + ident(o.name) +
				` SELECT * FROM previous.` + ident(o.schema) + `.` + ident(o.name))
		}
		if err != nil {
			lose(o, err)
			exec(`DROP TABLE IF EXISTS warehouse.` + ident(o.schema) + `.` + ident(o.name))
			continue
		}
		c.Objects = append(c.Objects, name(o))
	}
	for _, o := range indexes {
		prefix := "CREATE INDEX"
		if strings.HasPrefix(strings.ToUpper(o.sql), "CREATE UNIQUE INDEX") {
			prefix = "CREATE UNIQUE INDEX"
		}
		if err := run(o, prefix); err != nil {
			lose(o, err)
			continue
		}
		c.Objects = append(c.Objects, name(o))
	}
	// Views may use each other: create what binds until nothing more does.
	pending := viewsOld
	for len(pending) > 0 {
		var next []object
		var last error
		for _, o := range pending {
			if err := run(o, "CREATE VIEW"); err != nil {
				next, last = append(next, o), err
				continue
			}
			c.Objects = append(c.Objects, name(o))
		}
		if len(next) == len(pending) {
			for _, o := range next {
				lose(o, last)
			}
			break
		}
		pending = next
	}
	for _, o := range others {
		c.Lost = append(c.Lost, name(o)+" (not carried over: "+o.kind+"s are not copied)")
	}
	return c, nil
}

// singleCreate reports whether q is exactly one statement starting with
// prefix. It is deliberately narrower than SQL: outside '…' strings and
// "…" identifiers there may be no ';' but a last one, and no comment,
// backslash or dollar quote anywhere, so no reading of the text can hide a
// second statement from this check.
func singleCreate(q, prefix string) bool {
	q = strings.TrimSpace(q)
	if !strings.HasPrefix(strings.ToUpper(q), prefix+" ") || strings.ContainsAny(q, "\\$\x00") ||
		strings.Contains(q, "--") || strings.Contains(q, "/*") {
		return false
	}
	q = strings.TrimSuffix(q, ";")
	var quote byte
	for i := 0; i < len(q); i++ {
		ch := q[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0 // a doubled quote reopens at once: same result
		case quote != 0:
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == ';':
			return false
		}
	}
	return quote == 0
}

// unreadable records that the old file's catalog could not be listed.
func unreadable(c Carried, err error) Carried {
	c.Lost = append(c.Lost, "the previous warehouse.duckdb's objects could not be listed ("+firstLine(err.Error())+")")
	return c
}

// ident quotes an identifier.
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// preserve copies the old database (and its write-ahead log) to
// _preserved/warehouse-<UTC instant>.duckdb, creating new files only.
func (w *Warehouse) preserve(now time.Time) (string, error) {
	return w.preserveAs("warehouse-" + now.UTC().Format("20060102T150405.000000000Z") + ".duckdb")
}

// preserveAs copies the old database (and its write-ahead log) to
// _preserved/<name>, replacing an earlier copy of that name (a waiting
// database's swap, retried while the file is held, keeps one copy: the
// latest state of the file it replaces).
func (w *Warehouse) preserveAs(name string) (string, error) {
	dir, err := w.mkdirs(preservedDir)
	if err != nil {
		return "", err
	}
	for _, suffix := range []string{"", ".wal"} {
		if err := w.remove(filepath.Join(preservedDir, name+suffix)); err != nil {
			return "", err
		}
	}
	for _, suffix := range []string{"", ".wal"} {
		src, err := openNoFollow(filepath.Join(w.Dir, DatabaseFile+suffix))
		if errors.Is(err, os.ErrNotExist) && suffix != "" {
			continue
		}
		if err != nil {
			return "", err
		}
		dst, err := os.OpenFile(filepath.Join(dir, name+suffix), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			src.Close()
			return "", err
		}
		_, err = io.Copy(dst, src)
		src.Close()
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("preserve %s: %w", DatabaseFile+suffix, err)
		}
	}
	syncDir(dir)
	return filepath.ToSlash(filepath.Join(preservedDir, name)), nil
}
