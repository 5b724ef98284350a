// Package scans holds the source SQL of the catalog's table scans: which
// columns a scan reads and their caps are the catalog's
// (models.Table.Read); the SQL of the columns the source computes inside
// the snapshot, and of their joins, is here. extract renders it per
// dialect ({{column}} placeholders for optional columns, the
// SQLiteNotIndexed and SQLiteNoFlatten markers), and decides
// per store which joins a scan may leave out (Options: extract's
// ScanPlan).
//
// It is a leaf package (it imports models only) so that anything may name
// a scan without linking a database driver; extract.Spec is the way in.
package scans

import (
	"fmt"
	"slices"

	"github.com/kandev/kandev-extract/models"
)

// Spec is the scan of a catalog table's source with every computed
// column counted in SQL: the duplicate-id and duplicate-key joins and the
// per-turn and per-session fan-out join. featurePresent says whether the
// store has task_session_subagents (the per-turn and per-session counts
// are 0 without it). It is SpecWith with nothing proven.
func Spec(t *models.Table, featurePresent bool) models.TableSpec {
	return SpecWith(t, Options{FeaturePresent: featurePresent})
}

// Options say what a scan's SQL may leave out for one store.
type Options struct {
	// FeaturePresent: the store has task_session_subagents (without it the
	// per-turn and per-session counts are 0).
	FeaturePresent bool
	// UniqueID: the scanned table's id is proven unique by a unique,
	// non-partial index whose equality is the GROUP BY's (extract's
	// uniqueness proof): no two rows share an id, so rows_sharing_id is 1
	// and its join is left out.
	UniqueID bool
	// UniqueKey (task_session_subagents): (task_session_id,
	// agent_execution_id, tool_call_id) is proven unique the same way:
	// rows_sharing_key is 1 and its join is left out.
	UniqueKey bool
	// FanoutFromPass (task_session_turns, task_sessions): the five fan-out
	// columns are filled by the caller from the message pass's counts
	// (extract/fanout.go) instead of fanoutJoin; the SQL reads 0 for them.
	FanoutFromPass bool
}

// FanoutColumns are the computed columns fanoutJoin gives a turn or a
// session.
var FanoutColumns = []string{"subagents_observed", "subagents_live", "subagents_backfill", "distinct_tool_calls", "live_backfill_overlap"}

// SQLiteNotIndexed marks, in a spec's Join, a table reference that SQLite
// should scan rather than read through an index. It is an SQL comment, so
// it is inert as written; the SQLite reader renders it as NOT INDEXED and
// the PostgreSQL reader removes it. (Without ANALYZE statistics SQLite
// groups task_session_subagents through a non-covering index, one random
// table lookup per row; a plain scan is faster.)
const SQLiteNotIndexed = "/*kx:sqlite-not-indexed*/"

// SQLiteNoFlatten marks, at the end of a subquery, that SQLite must not
// flatten it into the aggregate that reads it: the SQLite reader renders it
// as LIMIT -1 OFFSET 0, the PostgreSQL reader removes it. (A flattened
// subquery's GROUP BY sorter copies every column its aggregates read, whole:
// one 300 MB source value cost 1.4 GB; unflattened, the sorter holds the
// subquery's small computed columns.)
const SQLiteNoFlatten = "/*kx:sqlite-no-flatten*/"

// SpecWith is the scan of a catalog table's source under o: its Read
// columns, the computed ones with their SQL.
func SpecWith(t *models.Table, o Options) models.TableSpec {
	spec := models.TableSpec{Name: t.Source, Alias: "t"}
	exprs := map[string]string{"rows_sharing_id": "COALESCE(dup.n, 1)"}
	dup := func(alias string) string {
		if o.UniqueID {
			return ""
		}
		return duplicateJoin(t.Source, alias)
	}
	if o.UniqueID {
		exprs["rows_sharing_id"] = "1"
	}
	switch t.Source {
	case models.SourceSubagents:
		exprs = map[string]string{
			"rows_sharing_id":  "COALESCE(di.n, 1)",
			"rows_sharing_key": "COALESCE(dk.n, 1)",
			"session_missing":  sessionMissing,
			"turn_attribution": turnAttribution,
		}
		if o.UniqueID {
			exprs["rows_sharing_id"] = "1"
		}
		spec.Join = dup("di")
		if o.UniqueKey {
			exprs["rows_sharing_key"] = "1"
		} else {
			spec.Join += ` LEFT JOIN (SELECT task_session_id AS ks, {{agent_execution_id}} AS ke, tool_call_id AS kc, COUNT(*) AS n
			FROM task_session_subagents
			WHERE ` + keyFits("task_session_id") + ` AND ` + keyFits("{{agent_execution_id}}") + ` AND ` + keyFits("tool_call_id") + `
			GROUP BY 1, 2, 3 HAVING COUNT(*) > 1) dk
			ON dk.ks = ` + boundedKey("t.task_session_id") + ` AND dk.ke = ` + boundedKey("{{t.agent_execution_id}}") +
				` AND dk.kc = ` + boundedKey("t.tool_call_id")
		}
	case models.SourceSessions, models.SourceTurns:
		key := "task_session_id"
		if t.Source == models.SourceTurns {
			key = "turn_id"
			exprs["session_missing"] = sessionMissing
		}
		counts := map[string]string{
			"subagents_observed": "COALESCE(a.n, 0)", "subagents_live": "COALESCE(a.n_live, 0)", "subagents_backfill": "COALESCE(a.n_backfill, 0)",
			"distinct_tool_calls": "COALESCE(a.n_distinct, 0)", "live_backfill_overlap": "COALESCE(a.overlap, 0)",
		}
		fromSQL := o.FeaturePresent && !o.FanoutFromPass
		for name, expr := range counts {
			if !fromSQL {
				expr = "0"
			}
			exprs[name] = expr
		}
		if fromSQL {
			spec.Join = fanoutJoin(key)
		}
		spec.Join += dup("dup")
	default:
		spec.Join = dup("dup")
	}
	for _, c := range t.Read {
		col := models.ColumnSpec{Name: c.Name, Kind: c.Kind, Required: c.Required, MaxBytes: c.MaxBytes}
		if c.Computed {
			col.Expr = exprs[c.Name]
			if col.Expr == "" {
				panic(fmt.Sprintf("scans: no SQL for the computed column %s of %s", c.Name, t.Source))
			}
		}
		spec.Columns = append(spec.Columns, col)
	}
	return spec
}

// FanoutSource is the SQL, per subagent row, of fanoutJoin's live (1) and
// backfill (2) flags as one value (0: neither), for a reader that counts
// the fan-out itself: the same expression on source, so the same
// collation, affinity and bound.
var FanoutSource = `CASE WHEN NOT (` + keyFits("source") + `) THEN 0 WHEN source = 'live' THEN 1 WHEN source = 'backfill' THEN 2 ELSE 0 END`

// keyFits and boundedKey keep every key the source compares — in a
// grouping, a join or a lookup — within models.SQLitePrefixBytes: SQLite
// loads a value whole to compare it (a GROUP BY over one 300 MB id cost
// 2 GB), and octet_length, which reads no content, decides first. A longer
// key is compared with nothing: its row shares no id or key and has no
// subagents by it (the row itself is kept, its value cut and listed in
// rejects). NULL keys matched nothing before either.
func keyFits(col string) string {
	return fmt.Sprintf("octet_length(%s) <= %d", col, models.SQLitePrefixBytes)
}

func boundedKey(col string) string {
	return fmt.Sprintf("CASE WHEN %s THEN %s END", keyFits(col), col)
}

// sessionMissing is 1 when the row's task_session_id has no task_sessions
// row (Kandev's foreign key cascades deletes, so only a store written with
// foreign keys off, or repaired by hand, holds such rows).
var sessionMissing = `CASE WHEN NOT (` + keyFits("t.task_session_id") + `) THEN 0 WHEN EXISTS (SELECT 1 FROM task_sessions s WHERE s.id = t.task_session_id) THEN 0 ELSE 1 END`

// turnAttribution is 0 when the row's turn_id is NULL or empty (ordinary,
// AC-2a), 1 when it names a turn of the snapshot, 2 when it names none (a
// key too long to compare names none).
var turnAttribution = `CASE WHEN t.turn_id IS NULL OR t.turn_id = '' THEN 0 WHEN NOT (` + keyFits("t.turn_id") +
	`) THEN 2 WHEN EXISTS (SELECT 1 FROM task_session_turns tt WHERE tt.id = t.turn_id) THEN 1 ELSE 2 END`

// LookupInGo is the value a lookup column (session_missing,
// turn_attribution) takes, in the variants below, where the reader decides
// it from the ids it read beforehand instead of probing an index per row.
const LookupInGo = -1

// inGo is the condition under which those variants leave a lookup to the
// reader: a TEXT key of at most models.MaxLabelBytes, which the scan reads
// whole (the reader's id set holds every TEXT id up to that length).
func inGo(col string) string {
	return fmt.Sprintf("typeof(%[1]s) = 'text' AND octet_length(%[1]s) <= %[2]d", col, models.MaxLabelBytes)
}

// LookupsInGo returns spec with the named lookup columns rendered so that
// SQLite probes the index only for the keys the reader cannot decide (not
// TEXT, or longer than the scan reads): for the others the column is
// LookupInGo. The reader must then replace every LookupInGo (extract's
// SQLite reader does, when the key columns compare as plain bytes).
func LookupsInGo(spec models.TableSpec, names ...string) models.TableSpec {
	out := spec
	out.Columns = append([]models.ColumnSpec(nil), spec.Columns...)
	for i, c := range out.Columns {
		if !slices.Contains(names, c.Name) {
			continue
		}
		switch {
		case c.Name == "session_missing" && c.Expr == sessionMissing:
			out.Columns[i].Expr = fmt.Sprintf("CASE WHEN %s THEN %d ELSE %s END", inGo("t.task_session_id"), LookupInGo, sessionMissing)
		case c.Name == "turn_attribution" && c.Expr == turnAttribution:
			out.Columns[i].Expr = fmt.Sprintf("CASE WHEN t.turn_id IS NULL OR t.turn_id = '' THEN 0 WHEN %s THEN %d ELSE %s END", inGo("t.turn_id"), LookupInGo, turnAttribution)
		}
	}
	return out
}

// duplicateJoin counts, for the scanned table (alias t), the rows sharing
// an id, when more than one does (a primary key that was not enforced).
func duplicateJoin(table, alias string) string {
	return ` LEFT JOIN (SELECT id AS k, COUNT(*) AS n FROM ` + table + ` WHERE ` + keyFits("id") + ` GROUP BY id HAVING COUNT(*) > 1) ` + alias +
		` ON ` + alias + `.k = ` + boundedKey("t.id")
}

// fanoutJoin aggregates subagent rows by key in one pass, in SQL that both
// dialects accept (SQLite scans the table: see SQLiteNotIndexed; and
// groups the subquery's computed columns, never source itself: see
// SQLiteNoFlatten).
func fanoutJoin(key string) string {
	// overlap = |live tool calls| + |backfill tool calls| - |all tool calls|:
	// the tool calls that have both a live and a backfill row.
	return ` LEFT JOIN (SELECT k, COUNT(*) AS n, SUM(live) AS n_live, SUM(backfill) AS n_backfill,
			COUNT(DISTINCT tc) AS n_distinct,
			COUNT(DISTINCT CASE WHEN live = 1 THEN tc END) + COUNT(DISTINCT CASE WHEN backfill = 1 THEN tc END) - COUNT(DISTINCT tc) AS overlap
		FROM (SELECT ` + key + ` AS k, CASE WHEN tool_call_id <> '' THEN ` + boundedKey("tool_call_id") + ` END AS tc,
			CASE WHEN NOT (` + keyFits("source") + `) THEN 0 WHEN source = 'live' THEN 1 ELSE 0 END AS live,
			CASE WHEN NOT (` + keyFits("source") + `) THEN 0 WHEN source = 'backfill' THEN 1 ELSE 0 END AS backfill
			FROM task_session_subagents ` + SQLiteNotIndexed + ` WHERE ` + keyFits(key) + ` ` + SQLiteNoFlatten + `) f
		GROUP BY k) a ON a.k = ` + boundedKey("t.id")
}
