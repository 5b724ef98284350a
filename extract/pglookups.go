package extract

import (
	"context"
	"fmt"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

// Lookups decided in Go on PostgreSQL, as on SQLite (lookups.go): the
// fact's session_missing and turn_attribution, and the turn's
// session_missing, are an EXISTS probe of the primary-key index of
// task_sessions or task_session_turns per row — 3.1 s of the server's 7.0 s
// for the 1 M-row fact scan of the large store (`\copy` of its SQL to
// /dev/null, with and without the probes). The reader reads those ids
// before the scan (an index-only scan) and decides the keys it can decide exactly: a key of
// at most models.MaxLabelBytes (the scan reads it whole), not NULL, not
// empty for turn_attribution, in a text or varchar column whose collation
// is deterministic and the same as the id column's, itself text or varchar
// with a deterministic collation (pgProber.facts, the scan plan's schema
// facts): `s.id = t.key` is then byte equality of the two values. Every
// other key keeps the probe in SQL, and so does every key of a store whose
// columns are declared otherwise, and a server older than 12 (no
// collisdeterministic). Ids are held as 128-bit hashes, as on SQLite, in a
// sorted slice (16 bytes an id: 6.4 MB for the large store's 400,000
// turns, against 13 MB in a map) read for each scan and dropped with it;
// clustered rows repeat the previous row's key, whose answer is reused, so
// few keys are searched.

// pgLookupExpr renders lookup column name so that the server probes only
// the keys the reader cannot decide; it returns "" unless the column's
// expression is the one scans renders (scans.LookupsInGo recognises it).
func pgLookupExpr(spec models.TableSpec, i int) string {
	c := spec.Columns[i]
	if spec.Alias != "t" || scans.LookupsInGo(spec, c.Name).Columns[i].Expr == c.Expr {
		return ""
	}
	fits := fmt.Sprintf("octet_length(t.%%s) <= %d", models.MaxLabelBytes)
	switch c.Name {
	case "session_missing":
		return fmt.Sprintf("CASE WHEN "+fits+" THEN %d ELSE %s END", "task_session_id", scans.LookupInGo, c.Expr)
	case "turn_attribution":
		return fmt.Sprintf("CASE WHEN t.turn_id <> '' AND "+fits+" THEN %d ELSE %s END", "turn_id", scans.LookupInGo, c.Expr)
	}
	return ""
}

// lookupsInGo returns spec with the lookup columns it can decide in Go
// rendered by pgLookupExpr, and the row function that decides them.
func (p *pgSnapshot) lookupsInGo(ctx context.Context, spec models.TableSpec, fn func(row []any) error) (models.TableSpec, func(row []any) error, error) {
	if p.lookupsInSQL {
		return spec, fn, nil
	}
	var (
		todo  []goLookup
		exprs = map[int]string{}
	)
	for _, l := range lookupCandidates(spec) {
		expr := pgLookupExpr(spec, l.col)
		if expr == "" {
			continue
		}
		ok, err := p.comparesAsBytes(ctx, spec.Name, l.key, l.table)
		if err != nil {
			return spec, fn, err
		}
		if !ok {
			continue
		}
		set, err := p.lookupIDs(ctx, l.table)
		if err != nil {
			return spec, fn, err
		}
		todo = append(todo, newGoLookup(l.column, l.col, l.keyCol, set, func(n int) any { return int32(n) }))
		exprs[l.col] = expr
	}
	if len(todo) == 0 {
		return spec, fn, nil
	}
	rendered := spec
	rendered.Columns = append([]models.ColumnSpec(nil), spec.Columns...)
	for i, e := range exprs {
		rendered.Columns[i].Expr = e
	}
	return rendered, withLookups(spec.Name, todo, fn), nil
}

// comparesAsBytes reports whether table's column key and lookup's id
// compare as bytes (see above).
func (p *pgSnapshot) comparesAsBytes(ctx context.Context, table, key, lookup string) (bool, error) {
	pr := &pgProber{snap: p}
	if ok, err := pr.supported(ctx); err != nil || !ok {
		return false, err
	}
	if p.lookupFacts == nil {
		p.lookupFacts = map[string]*tableFacts{}
	}
	facts := func(t string) (*tableFacts, error) {
		if f, ok := p.lookupFacts[t]; ok {
			return f, nil
		}
		f, err := pr.facts(ctx, t)
		if err != nil {
			return nil, err
		}
		p.lookupFacts[t] = f
		return f, nil
	}
	a, err := facts(table)
	if err != nil {
		return false, err
	}
	b, err := facts(lookup)
	if err != nil {
		return false, err
	}
	return a.keys(key) && b.keys("id") && pr.sameEquality(a, key, b, "id"), nil
}

// lookupIDs reads the ids of table a key left to the reader can equal (at
// most models.MaxLabelBytes). Each id is hashed from the bytes the server
// sent, which are the text's (the column is text or varchar: see
// comparesAsBytes), without making a string of it.
func (p *pgSnapshot) lookupIDs(ctx context.Context, table string) (idHashes, error) {
	q := fmt.Sprintf(`SELECT id FROM %s WHERE octet_length(id) <= %d`, quoteIdent(table), models.MaxLabelBytes)
	rows, err := p.tx.Query(ctx, q)
	if err != nil {
		return idHashes{}, p.src.wrap("read", table, err)
	}
	defer rows.Close()
	var keys []hashkey.Key
	for first := true; rows.Next(); first = false {
		if first && (len(rows.FieldDescriptions()) != 1 || !pgTextField(rows, 0)) {
			return idHashes{}, fmt.Errorf("source %s: read %s: its ids are not read as text", p.src.location, table)
		}
		if id := rows.RawValues()[0]; id != nil {
			keys = append(keys, hashkey.Bytes(id))
		}
	}
	if err := rows.Err(); err != nil {
		return idHashes{}, p.src.wrap("read", table, err)
	}
	p.lookupIDsRead++
	return newIDHashes(keys), nil
}
