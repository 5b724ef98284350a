package extract

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/kandev/kandev-extract/extract/scans"
	"github.com/kandev/kandev-extract/models"
)

// Lookups decided in Go (SQLite). The fact's session_missing and
// turn_attribution, and the turn's session_missing, are EXISTS probes of
// the primary-key index of task_sessions or task_session_turns, one per
// row: 2.9 s of the 1 M-row fact scan's 6.7 s in modernc's SQLite. The
// reader reads those ids once instead (a covering index scan) and decides
// in Go — for the keys it can decide exactly: a TEXT value the scan reads
// whole (at most models.MaxLabelBytes), looked up in an id column with
// TEXT affinity and BINARY collation, where `s.id = t.key` is byte
// equality of two TEXT values (no affinity conversion applies to two TEXT
// operands, and the left operand's BINARY collation compares bytes). Every
// other key (NULL, a BLOB, a number, a longer value) keeps the probe in
// SQL, and so does every key of a store whose id columns are declared
// otherwise. Ids are held as 128-bit hashes (16 bytes each, no pointers for
// the garbage collector to scan), the approximation the message pass makes
// (msgpass.go): a wrong answer needs two different ids to collide in 128
// bits. Both sources (PostgreSQL: pglookups.go) hold them in an idHashes:
// 16 bytes an id plus a 256 KiB index, where a map of the same keys held
// 18.5 MB for the large store's 500,000 sessions and turns.
func lookupKey(s string) key128 {
	return key128{maphash.String(passSeeds[0], s), maphash.String(passSeeds[1], s)}
}

// idHashes holds the hashes of a table's ids (lookupKey), sorted, with the
// index of the first of each run sharing their top idHashBits bits: a
// lookup searches a few neighbouring keys (a plain binary search over
// 400,000 keys took a cache miss per step).
type idHashes struct {
	keys  []key128
	start []uint32 // len 1<<idHashBits + 1
}

const idHashBits = 16

func newIDHashes(keys []key128) idHashes {
	slices.SortFunc(keys, cmpKey)
	s := idHashes{keys: keys, start: make([]uint32, 1<<idHashBits+1)}
	b := 0
	for i, k := range keys {
		for top := int(k[0] >> (64 - idHashBits)); b <= top; b++ {
			s.start[b] = uint32(i)
		}
	}
	for ; b <= 1<<idHashBits; b++ {
		s.start[b] = uint32(len(keys))
	}
	return s
}

func (s idHashes) has(id string) bool {
	k := lookupKey(id)
	top := k[0] >> (64 - idHashBits)
	_, found := slices.BinarySearchFunc(s.keys[s.start[top]:s.start[top+1]], k, cmpKey)
	return found
}

// lookupTables: the lookup columns, the id column each probes, and the key
// column of the scanned row it compares.
var lookupTables = []struct{ column, table, key string }{
	{"session_missing", models.SourceSessions, "task_session_id"},
	{"turn_attribution", models.SourceTurns, "turn_id"},
}

// lookupsInGo renders spec's lookup columns for the reader to decide where
// it can (scans.LookupsInGo), and returns the row function that does so.
// Without a liteConn, or when no lookup can be decided in Go, spec and fn
// are returned as they are.
func (s *sqliteSnapshot) lookupsInGo(ctx context.Context, spec models.TableSpec, fn func(row []any) error) (models.TableSpec, func(row []any) error, error) {
	if s.lite == nil {
		return spec, fn, nil
	}
	type lookup struct {
		col, key int
		set      idHashes
		found    int64 // the column's value when the key is found
		missing  int64
	}
	var (
		todo  []lookup
		names []string
	)
	for _, l := range lookupTables {
		col, key := spec.Column(l.column), spec.Column(l.key)
		if col < 0 || key < 0 {
			continue
		}
		if max := spec.Columns[key].MaxBytes; max != 0 && max < models.MaxLabelBytes {
			continue // the scan does not read every decidable key whole
		}
		// The id column compares TEXT as bytes: TEXT affinity and BINARY
		// collation, as the scan plan reads them (uniqueness.go).
		f, err := (&sqliteProber{snap: s}).facts(ctx, l.table)
		if err != nil {
			return spec, fn, err
		}
		if !f.keyCols["id"] {
			continue
		}
		set, err := s.lookupIDs(ctx, l.table)
		if err != nil {
			return spec, fn, err
		}
		lk := lookup{col: col, key: key, set: set, found: 0, missing: 1}
		if l.column == "turn_attribution" {
			lk.found, lk.missing = 1, 2
		}
		todo = append(todo, lk)
		names = append(names, l.column)
	}
	if len(todo) == 0 {
		return spec, fn, nil
	}
	rendered := scans.LookupsInGo(spec, names...)
	return rendered, func(row []any) error {
		for _, l := range todo {
			if n, ok := row[l.col].(int64); !ok || n != scans.LookupInGo {
				continue
			}
			k, ok := row[l.key].(string)
			if !ok {
				return fmt.Errorf("scan of %s: a key left to the reader is a %T, not TEXT", spec.Name, row[l.key])
			}
			if l.set.has(k) {
				row[l.col] = l.found
			} else {
				row[l.col] = l.missing
			}
		}
		return fn(row)
	}, nil
}

// lookupIDs reads the TEXT ids of table a key left to the reader can equal
// (at most models.MaxLabelBytes), once per snapshot.
func (s *sqliteSnapshot) lookupIDs(ctx context.Context, table string) (idHashes, error) {
	if set, ok := s.lookupSets[table]; ok {
		return set, nil
	}
	var keys []key128
	q := fmt.Sprintf(`SELECT id FROM %s WHERE typeof(id) = 'text' AND octet_length(id) <= %d`, quoteIdent(table), models.MaxLabelBytes)
	err := s.lite.query(ctx, q, nil, func(row []any) error {
		if id, ok := row[0].(string); ok {
			keys = append(keys, lookupKey(id))
		}
		return nil
	})
	if err != nil {
		return idHashes{}, s.src.wrap("read the ids of "+table, err)
	}
	set := newIDHashes(keys)
	if s.lookupSets == nil {
		s.lookupSets = map[string]idHashes{}
	}
	s.lookupSets[table] = set
	return set, nil
}
