package extract

import (
	"context"
	"fmt"
	"slices"

	"github.com/kandev/kandev-extract/extract/internal/hashkey"
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
// (extract/evidence): a wrong answer needs two different ids to collide in 128
// bits. Both sources (PostgreSQL: pglookups.go) hold them in an idHashes:
// 16 bytes an id plus a 256 KiB index, where a map of the same keys held
// 18.5 MB for the large store's 500,000 sessions and turns.

// idHashes holds the hashes of a table's ids (hashkey.String), sorted, with the
// index of the first of each run sharing their top idHashBits bits: a
// lookup searches a few neighbouring keys (a plain binary search over
// 400,000 keys took a cache miss per step).
type idHashes struct {
	keys  []hashkey.Key
	start []uint32 // len 1<<idHashBits + 1
}

const idHashBits = 16

func newIDHashes(keys []hashkey.Key) idHashes {
	slices.SortFunc(keys, hashkey.Compare)
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
	k := hashkey.String(id)
	top := k[0] >> (64 - idHashBits)
	_, found := slices.BinarySearchFunc(s.keys[s.start[top]:s.start[top+1]], k, hashkey.Compare)
	return found
}

// lookupTables: the lookup columns, the id column each probes, and the key
// column of the scanned row it compares.
var lookupTables = []lookupTable{
	{"session_missing", models.SourceSessions, "task_session_id"},
	{"turn_attribution", models.SourceTurns, "turn_id"},
}

type lookupTable struct{ column, table, key string }

// lookupCandidate is a lookup column of a scan, with the positions of its
// cell and its key cell.
type lookupCandidate struct {
	lookupTable
	col, keyCol int
}

// lookupCandidates are the lookup columns spec has whose key the scan
// reads whole up to models.MaxLabelBytes: the only ones either source
// may decide in Go.
func lookupCandidates(spec models.TableSpec) []lookupCandidate {
	var out []lookupCandidate
	for _, l := range lookupTables {
		col, key := spec.Column(l.column), spec.Column(l.key)
		if col < 0 || key < 0 {
			continue
		}
		if max := spec.Columns[key].MaxBytes; max != 0 && max < models.MaxLabelBytes {
			continue // the scan does not read every decidable key whole
		}
		out = append(out, lookupCandidate{l, col, key})
	}
	return out
}

// withLookups is fn after decideLookups.
func withLookups(table string, todo []goLookup, fn func(row []any) error) func(row []any) error {
	return func(row []any) error {
		if err := decideLookups(table, todo, row); err != nil {
			return err
		}
		return fn(row)
	}
}

// lookupsInGo renders spec's lookup columns for the reader to decide where
// it can (scans.LookupsInGo), and returns the row function that does so.
// Without a sqlitedrv.Conn, or when no lookup can be decided in Go, spec and fn
// are returned as they are.
func (s *sqliteSnapshot) lookupsInGo(ctx context.Context, spec models.TableSpec, fn func(row []any) error) (models.TableSpec, func(row []any) error, error) {
	if s.lite == nil {
		return spec, fn, nil
	}
	var (
		todo  []goLookup
		names []string
	)
	for _, l := range lookupCandidates(spec) {
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
		todo = append(todo, newGoLookup(l.column, l.col, l.keyCol, set, func(n int) any { return int64(n) }))
		names = append(names, l.column)
	}
	if len(todo) == 0 {
		return spec, fn, nil
	}
	return scans.LookupsInGo(spec, names...), withLookups(spec.Name, todo, fn), nil
}

// goLookup is one lookup column decided in Go (for either source): the
// cell it writes, the key cell it reads, the ids, its two answers typed as
// the source's SQL gives the column (SQLite int64, PostgreSQL int4), and
// the previous key's answer: rows come clustered (90 % of the large
// store's subagent rows repeat the previous row's session id), and a
// comparison is cheaper than two hashes and a search.
type goLookup struct {
	col, key       int
	set            idHashes
	found, missing any
	lastKey        string
	lastValue      any
	decided        bool
}

// newGoLookup: session_missing is 0 when found, 1 when missing;
// turn_attribution 1 (attributed) or 2 (missing turn).
func newGoLookup(column string, col, key int, set idHashes, typed func(int) any) goLookup {
	l := goLookup{col: col, key: key, set: set, found: typed(0), missing: typed(1)}
	if column == "turn_attribution" {
		l.found, l.missing = typed(1), typed(2)
	}
	return l
}

// decideLookups sets each lookup cell of row that the reader left to Go
// (scans.LookupInGo, an INTEGER on SQLite, an int4 on PostgreSQL).
func decideLookups(table string, todo []goLookup, row []any) error {
	for i := range todo {
		l := &todo[i]
		switch n := row[l.col].(type) {
		case int64:
			if n != scans.LookupInGo {
				continue
			}
		case int32:
			if n != scans.LookupInGo {
				continue
			}
		default:
			continue
		}
		k, ok := row[l.key].(string)
		if !ok {
			return fmt.Errorf("scan of %s: a key left to the reader is a %T, not text", table, row[l.key])
		}
		if !l.decided || k != l.lastKey {
			l.lastValue = l.missing
			if l.set.has(k) {
				l.lastValue = l.found
			}
			l.lastKey, l.decided = k, true
		}
		row[l.col] = l.lastValue
	}
	return nil
}

// lookupIDs reads the TEXT ids of table a key left to the reader can equal
// (at most models.MaxLabelBytes), once per snapshot.
func (s *sqliteSnapshot) lookupIDs(ctx context.Context, table string) (idHashes, error) {
	if set, ok := s.lookupSets[table]; ok {
		return set, nil
	}
	var keys []hashkey.Key
	q := fmt.Sprintf(`SELECT id FROM %s WHERE typeof(id) = 'text' AND octet_length(id) <= %d`, quoteIdent(table), models.MaxLabelBytes)
	err := s.lite.Query(ctx, q, nil, func(row []any) error {
		if id, ok := row[0].(string); ok {
			keys = append(keys, hashkey.String(id))
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
