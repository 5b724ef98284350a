package extract

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kandev/kandev-extract/extract/internal/sqlkit"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

// What a store's schema proves about its rows, so that the table scans can
// leave out SQL whose answer is known (a ScanPlan):
//
//   - A duplicate-id join (rows sharing an id) or the fact's duplicate-key
//     join (rows sharing task_session_id, agent_execution_id, tool_call_id)
//     returns no row when a UNIQUE, non-partial index on those columns (or
//     on some of them: equal keys are equal on every subset) compares them
//     as the join's GROUP BY does. Its computed column is then the
//     constant 1. NULL and over-long keys are outside both (the joins'
//     octet_length filter), so a unique index that admits several NULLs
//     proves as much.
//   - The per-turn and per-session fan-out (scans.fanoutJoin) can be
//     counted by the message pass (extract/evidence/fanout.go) when its keys compare in Go
//     exactly as the join's do.
//
// Anything not proven keeps the SQL. The probes read the catalog inside the
// snapshot, through the snapshot's own Query and Columns.
//
// SQLite. Equality is the collation's: GROUP BY uses the column's declared
// collation, a unique index its own (pragma_index_xinfo.coll). Only BINARY
// is accepted for both: byte equality per storage class, as the message
// pass compares. SQLite has no pragma for a column's declared collation, so
// a table is taken to have BINARY columns only when its CREATE TABLE text
// holds no COLLATE at all (BINARY is the default, and only a COLLATE clause
// in the column's definition changes it); any COLLATE, anywhere in it, keeps
// the SQL. An index qualifies when pragma_index_list says unique and not
// partial, and each of its key columns (pragma_index_xinfo, key = 1) is a
// table column (cid >= 0: no expression) with collation BINARY. The PRIMARY
// KEY of a TEXT id is such an index (origin 'pk'); an INTEGER PRIMARY KEY,
// the rowid, has none and is not taken as proof.
//
// PostgreSQL (12 or later; an older server proves nothing). pg_index: unique,
// valid, ready, live, immediate (not deferrable), no predicate, no
// expression; each key column's index collation and column collation
// deterministic (equality is byte equality under a deterministic collation)
// and its operator class its type's default (so its equality is the one
// GROUP BY uses).

// ScanPlan is what one snapshot's schema lets the table scans leave out.
// The zero plan proves nothing: every scan counts in SQL.
type ScanPlan struct {
	dialect        models.Dialect
	featurePresent bool
	// uniqueID: by source table, ids proven unique.
	uniqueID map[string]bool
	// uniqueKey: task_session_subagents' (session, execution, tool call)
	// proven unique.
	uniqueKey bool
	// fanoutTurns, fanoutSessions: the message pass's per-turn and
	// per-session counts key exactly as fanoutJoin joins (see extract/evidence/fanout.go).
	fanoutTurns, fanoutSessions bool
}

// PlanScans reads, inside the snapshot, what its schema proves (see
// above). featurePresent says whether the store has
// task_session_subagents.
func PlanScans(ctx context.Context, snap models.Snapshot, featurePresent bool) (*ScanPlan, error) {
	p := &ScanPlan{dialect: dialectOf(snap), featurePresent: featurePresent, uniqueID: map[string]bool{}}
	var pr prober
	switch p.dialect {
	case models.DialectSQLite:
		pr = &sqliteProber{snap: snap}
	case models.DialectPostgres:
		pg := &pgProber{snap: snap}
		ok, err := pg.supported(ctx)
		if err != nil || !ok {
			return p, err
		}
		pr = pg
	default:
		return p, nil
	}
	tables := map[string]*tableFacts{}
	facts := func(table string) (*tableFacts, error) {
		if f, ok := tables[table]; ok {
			return f, nil
		}
		f, err := pr.facts(ctx, table)
		tables[table] = f
		return f, err
	}
	for _, t := range models.Scanned() {
		if t.Source == models.SourceSubagents && !featurePresent {
			continue
		}
		f, err := facts(t.Source)
		if err != nil {
			return p, err
		}
		p.uniqueID[t.Source] = f.proves("id")
	}
	if !featurePresent {
		return p, nil
	}
	sub, err := facts(models.SourceSubagents)
	if err != nil {
		return p, err
	}
	key := []string{"task_session_id", "tool_call_id"}
	if sub.has("agent_execution_id") {
		key = append(key, "agent_execution_id")
	} // else the key renders as (task_session_id, '', tool_call_id)
	p.uniqueKey = sub.proves(key...)
	if sub.has("source") && sub.keys("turn_id", "task_session_id", "tool_call_id") {
		turns, err := facts(models.SourceTurns)
		if err != nil {
			return p, err
		}
		sessions, err := facts(models.SourceSessions)
		if err != nil {
			return p, err
		}
		p.fanoutTurns = turns.keys("id") && pr.sameEquality(sub, "turn_id", turns, "id")
		p.fanoutSessions = sessions.keys("id") && pr.sameEquality(sub, "task_session_id", sessions, "id")
	}
	return p, nil
}

// dialectOf is the dialect of a snapshot this package opened, or "".
func dialectOf(snap models.Snapshot) models.Dialect {
	if m, ok := snap.(*maskedSnapshot); ok {
		snap = m.Snapshot
	}
	switch snap.(type) {
	case *sqliteSnapshot:
		return models.DialectSQLite
	case *pgSnapshot:
		return models.DialectPostgres
	}
	return ""
}

// Spec is the scan of a catalog table under the plan. fromPass says that
// the caller fills the per-turn or per-session fan-out from the message
// pass's counts (Scan with a Fanout); it is ignored unless the plan allows
// it for the table.
func (p *ScanPlan) Spec(t *models.Table, fromPass bool) models.TableSpec {
	return scans.SpecWith(t, p.options(t, fromPass))
}

func (p *ScanPlan) options(t *models.Table, fromPass bool) scans.Options {
	o := scans.Options{FeaturePresent: p.featurePresent}
	o.UniqueID = p.uniqueID[t.Source]
	o.UniqueKey = t.Source == models.SourceSubagents && p.uniqueKey
	o.FanoutFromPass = fromPass && p.PassFanout(t.Source)
	return o
}

// PassFanout reports whether the message pass can count the fan-out of a
// source table's rows (task_session_turns, task_sessions) exactly as the
// scan's SQL does.
func (p *ScanPlan) PassFanout(source string) bool {
	if p == nil || !p.featurePresent {
		return false
	}
	switch source {
	case models.SourceTurns:
		return p.fanoutTurns
	case models.SourceSessions:
		return p.fanoutSessions
	}
	return false
}

// Summary says in a few words what the plan leaves out, for the logs.
func (p *ScanPlan) Summary() (uniqueIDs []string, uniqueKey bool, fanoutInPass []string) {
	for t, ok := range p.uniqueID {
		if ok {
			uniqueIDs = append(uniqueIDs, t)
		}
	}
	slices.Sort(uniqueIDs)
	for _, t := range []string{models.SourceTurns, models.SourceSessions} {
		if p.PassFanout(t) {
			fanoutInPass = append(fanoutInPass, t)
		}
	}
	return uniqueIDs, p.uniqueKey, fanoutInPass
}

// tableFacts is what a probe found of one table.
type tableFacts struct {
	columns map[string]bool
	// unique: the column sets of the qualifying unique indexes.
	unique [][]string
	// keyCols: columns whose values the message pass compares as the SQL
	// does (SQLite: TEXT affinity and BINARY collation; PostgreSQL: text or
	// varchar with a deterministic collation); coll their collation.
	keyCols map[string]bool
	coll    map[string]string
	// binary (SQLite): every column's collation is BINARY.
	binary bool
}

func (f *tableFacts) has(col string) bool { return f != nil && f.columns[col] }

// proves reports whether some qualifying unique index's columns are all
// among cols.
func (f *tableFacts) proves(cols ...string) bool {
	if f == nil {
		return false
	}
	for _, set := range f.unique {
		if len(set) > 0 && !slices.ContainsFunc(set, func(c string) bool { return !slices.Contains(cols, c) }) {
			return true
		}
	}
	return false
}

// keys reports whether every col is a key column (see keyCols).
func (f *tableFacts) keys(cols ...string) bool {
	if f == nil {
		return false
	}
	for _, c := range cols {
		if !f.keyCols[c] {
			return false
		}
	}
	return true
}

type prober interface {
	facts(ctx context.Context, table string) (*tableFacts, error)
	// sameEquality: a's column ca and b's column cb compare with one
	// equality (both key columns already).
	sameEquality(a *tableFacts, ca string, b *tableFacts, cb string) bool
}

// ---- SQLite ------------------------------------------------------------

type sqliteProber struct{ snap models.Snapshot }

func (s *sqliteProber) facts(ctx context.Context, table string) (*tableFacts, error) {
	f := &tableFacts{columns: map[string]bool{}, keyCols: map[string]bool{}, coll: map[string]string{}}
	var create any
	found := false
	if err := s.snap.Query(ctx, `SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?`, []any{table}, func(row []any) error {
		create, found = row[0], true
		return nil
	}); err != nil {
		return f, err
	}
	text, ok := create.(string)
	if !found || !ok {
		return f, nil // absent (the scan says so), or no text to read: nothing proven
	}
	f.binary = onlyBinaryCollations(text)
	if err := s.snap.Query(ctx, `SELECT name, type FROM pragma_table_info(?)`, []any{table}, func(row []any) error {
		name, _ := row[0].(string)
		decl, _ := row[1].(string)
		f.columns[name] = true
		if f.binary && textAffinity(decl) {
			f.keyCols[name] = true
		}
		return nil
	}); err != nil {
		return f, err
	}
	if !f.binary {
		return f, nil
	}
	// Unique, non-partial indexes, their key columns in order.
	type index struct {
		cols []string
		ok   bool
	}
	var order []string
	byName := map[string]*index{}
	err := s.snap.Query(ctx, `SELECT il.name, x.cid, x.name, x.coll
		FROM pragma_index_list(?) AS il, pragma_index_xinfo(il.name) AS x
		WHERE il."unique" = 1 AND il.partial = 0 AND x.key = 1
		ORDER BY il.seq, x.seqno`, []any{table}, func(row []any) error {
		name, _ := row[0].(string)
		cid, isInt := row[1].(int64)
		col, _ := row[2].(string)
		coll, _ := row[3].(string)
		ix := byName[name]
		if ix == nil {
			ix = &index{ok: true}
			byName[name] = ix
			order = append(order, name)
		}
		if !isInt || cid < 0 || col == "" || !strings.EqualFold(coll, "BINARY") {
			ix.ok = false
		}
		ix.cols = append(ix.cols, col)
		return nil
	})
	if err != nil {
		return f, err
	}
	for _, name := range order {
		if ix := byName[name]; ix.ok {
			f.unique = append(f.unique, ix.cols)
		}
	}
	return f, nil
}

func (s *sqliteProber) sameEquality(a *tableFacts, _ string, b *tableFacts, _ string) bool {
	return a.binary && b.binary // BINARY both: byte equality per storage class
}

// onlyBinaryCollations reports whether every COLLATE in a CREATE TABLE
// statement names BINARY (Kandev writes `external_id TEXT COLLATE BINARY`):
// then every column's collation is BINARY. The text is tokenized as SQLite
// reads it — string literals, quoted identifiers ("x", `x`, [x]) and
// comments are skipped whole — so COLLATE is found only as a keyword; any
// COLLATE followed by another name, or by nothing readable, gives false
// (even one in a CHECK expression: conservative).
func onlyBinaryCollations(sql string) bool {
	var prevCollate bool
	for i := 0; i < len(sql); {
		c := sql[i]
		var tok string
		switch {
		case c == '\'':
			j := i + 1
			for j < len(sql) && !(sql[j] == '\'' && (j+1 >= len(sql) || sql[j+1] != '\'')) {
				if sql[j] == '\'' {
					j++ // a doubled quote
				}
				j++
			}
			if prevCollate {
				return false // a string is not a collation name
			}
			i = j + 1
			continue
		case c == '"' || c == '`' || c == '[':
			end := byte('"')
			if c == '`' {
				end = '`'
			} else if c == '[' {
				end = ']'
			}
			j := i + 1
			var b strings.Builder
			for j < len(sql) {
				if sql[j] == end {
					if end != ']' && j+1 < len(sql) && sql[j+1] == end {
						b.WriteByte(end)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(sql[j])
				j++
			}
			tok, i = "\x00"+b.String(), j+1 // quoted: never a keyword
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return !prevCollate
			}
			i += j + 4
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '_' || c >= 0x80 || ('0' <= c && c <= '9') || ('a' <= c|0x20 && c|0x20 <= 'z') || c == '$':
			j := i
			for j < len(sql) && (sql[j] == '_' || sql[j] >= 0x80 || ('0' <= sql[j] && sql[j] <= '9') || ('a' <= sql[j]|0x20 && sql[j]|0x20 <= 'z') || sql[j] == '$') {
				j++
			}
			tok, i = sql[i:j], j
		default:
			tok, i = string(c), i+1
		}
		if prevCollate {
			name := strings.TrimPrefix(tok, "\x00")
			if !strings.EqualFold(name, "BINARY") {
				return false
			}
			prevCollate = false
			continue
		}
		prevCollate = strings.EqualFold(tok, "COLLATE")
	}
	return !prevCollate
}

// textAffinity reports whether a declared type gives a column TEXT
// affinity (SQLite's rules, in order: INT → INTEGER; CHAR, CLOB or TEXT →
// TEXT). A TEXT column holds TEXT, BLOB or NULL only: a number is stored as
// its text.
func textAffinity(decl string) bool {
	d := strings.ToUpper(decl)
	if strings.Contains(d, "INT") {
		return false
	}
	return strings.Contains(d, "CHAR") || strings.Contains(d, "CLOB") || strings.Contains(d, "TEXT")
}

// ---- PostgreSQL --------------------------------------------------------

type pgProber struct{ snap models.Snapshot }

// supported: pg_collation.collisdeterministic exists from PostgreSQL 12
// (before it every collation was deterministic, but the probe is written
// for one catalog shape; an older server keeps the SQL).
func (s *pgProber) supported(ctx context.Context) (bool, error) {
	var n int64
	err := s.snap.Query(ctx, `SELECT current_setting('server_version_num')::int`, nil, func(row []any) error {
		n = sqlkit.AsInt64(row[0])
		return nil
	})
	return n >= 120000, err
}

// pgDeterministic is true for no collation (a type without one) or a
// deterministic one; %s is the collation's oid.
const pgDeterministic = `(%[1]s = 0 OR EXISTS (SELECT 1 FROM pg_collation c WHERE c.oid = %[1]s AND c.collisdeterministic))`

func (s *pgProber) facts(ctx context.Context, table string) (*tableFacts, error) {
	f := &tableFacts{columns: map[string]bool{}, keyCols: map[string]bool{}, coll: map[string]string{}}
	err := s.snap.Query(ctx, `SELECT a.attname::text, t.typname::text IN ('text', 'varchar'), a.attcollation::bigint, `+
		fmt.Sprintf(pgDeterministic, "a.attcollation")+`
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND NOT a.attisdropped`, []any{table}, func(row []any) error {
		name, _ := row[0].(string)
		text, _ := row[1].(bool)
		det, _ := row[3].(bool)
		f.columns[name] = true
		if text && det {
			f.keyCols[name] = true
			f.coll[name] = fmt.Sprint(sqlkit.AsInt64(row[2]))
		}
		return nil
	})
	if err != nil {
		return f, err
	}
	type index struct {
		cols []string
		n    int64
		ok   bool
	}
	var order []int64
	byID := map[int64]*index{}
	err = s.snap.Query(ctx, `SELECT i.indexrelid::bigint, i.indnkeyatts::int, a.attname::text,
			`+fmt.Sprintf(pgDeterministic, "i.indcollation[k.n]")+` AND `+fmt.Sprintf(pgDeterministic, "a.attcollation")+`
			AND EXISTS (SELECT 1 FROM pg_opclass o WHERE o.oid = i.indclass[k.n] AND o.opcdefault)
		FROM pg_index i
		CROSS JOIN LATERAL generate_series(0, i.indnkeyatts - 1) AS k(n)
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[k.n]
		WHERE i.indrelid = to_regclass(quote_ident($1)) AND i.indisunique AND i.indisvalid AND i.indisready
			AND i.indislive AND i.indimmediate AND i.indpred IS NULL AND i.indexprs IS NULL
		ORDER BY 1, k.n`, []any{table}, func(row []any) error {
		id := sqlkit.AsInt64(row[0])
		col, _ := row[2].(string)
		good, _ := row[3].(bool)
		ix := byID[id]
		if ix == nil {
			ix = &index{n: sqlkit.AsInt64(row[1]), ok: true}
			byID[id] = ix
			order = append(order, id)
		}
		ix.ok = ix.ok && good && col != ""
		ix.cols = append(ix.cols, col)
		return nil
	})
	if err != nil {
		return f, err
	}
	for _, id := range order {
		// Every key column read (an expression column would have no
		// pg_attribute row: indexprs IS NULL already excludes it).
		if ix := byID[id]; ix.ok && int64(len(ix.cols)) == ix.n {
			f.unique = append(f.unique, ix.cols)
		}
	}
	return f, nil
}

// sameEquality: the join compares the two columns under one collation
// (with two different ones PostgreSQL refuses the comparison).
func (s *pgProber) sameEquality(a *tableFacts, ca string, b *tableFacts, cb string) bool {
	return a.coll[ca] != "" && a.coll[ca] == b.coll[cb]
}
