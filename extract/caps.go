package extract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/models"
)

// Capped columns (models.ColumnSpec.MaxBytes) are bounded in the source
// query itself, so a huge value never enters the process:
//
//   - every capped column is read through an expression that hands over
//     the value when it is within the cap, else a bounded prefix of it;
//   - one extra column, NULL unless some capped value is over its cap,
//     lists "index:bytes," for each value that is (octet_length reads no
//     content: SQLite answers from the record header, PostgreSQL from the
//     TOAST header).
//
// On the 200,000-row subagent scan of a generated store this costs about
// 30 % more CPU in the scan's SQL (1.29 s → 1.68 s), a few per cent of a
// run; the price of never loading a value whole.
//
// SQLite's substr() loads the whole value into memory before cutting it
// (measured: 300 MB RSS for substr of a 300 MB value, 7.5 MB for
// octet_length or for a CASE on it that does not read the value), so
// SQLite reads a prefix only of values up to models.SQLitePrefixBytes;
// above that the cell is a Truncated without a prefix. PostgreSQL's left()
// runs in the server and always yields a prefix.
//
// capPlan.wrap turns the over-long cells into models.Truncated and drops
// the extra column before the row reaches the caller.
//
// SQLite reports an over-long value inline instead (sqliteCapSpec): the
// cell holds capMarker, the value's length in bytes and, when read, ':'
// and its prefix. That is one octet_length per capped column and row
// instead of two and the 21-way OR of the lengths column: on the 1 M-row
// fact of the large bench store the scan's SQL took 3.0–3.8 s instead of
// 4.1–5.1 s (a plain read of the same columns: 2.4–2.9 s). The marker is
// random per process, so no stored value can pose as one.

// capCol is one capped column of a scan.
type capCol struct {
	idx  int // in spec.Columns
	max  int
	kind models.ColumnKind
}

// capPlan is how one scan's capped columns are read back.
type capPlan struct {
	width int // len(spec.Columns); the lengths column follows unless inline
	cols  []capCol
	// inline: over-long cells hold capMarker and their length (SQLite),
	// and there is no lengths column.
	inline bool
}

// capRender renders, for one dialect, the read of a capped column col (an
// alias-qualified, quoted identifier): the value expression, and the
// expression of its length in bytes. ok is false when the column needs no
// cap (a fixed-width PostgreSQL type).
type capRender func(col string, c models.ColumnSpec) (value, length string, ok bool)

// capSpec returns a copy of spec in which each capped column the table has
// is read through its capped expression, the extra SELECT item that
// reports over-long values ("" when nothing is capped), and the plan that
// reads them back.
func capSpec(spec models.TableSpec, have map[string]bool, render capRender) (models.TableSpec, string, capPlan) {
	plan := capPlan{width: len(spec.Columns)}
	var lens, over []string
	out := eachCapped(spec, have, func(i int, col string, c models.ColumnSpec) (string, bool) {
		value, length, ok := render(col, c)
		if !ok {
			return "", false
		}
		plan.cols = append(plan.cols, capCol{idx: i, max: c.MaxBytes, kind: c.Kind})
		over = append(over, fmt.Sprintf("%s > %d", length, c.MaxBytes))
		lens = append(lens, fmt.Sprintf("CASE WHEN %s > %d THEN '%d:' || CAST(%s AS TEXT) || ',' ELSE '' END", length, c.MaxBytes, i, length))
		return value, true
	})
	if len(lens) == 0 {
		return spec, "", plan
	}
	// The list is built only for a row that has an over-long value (the
	// OR stops at the first): most rows pay one octet_length per column.
	return out, "CASE WHEN " + strings.Join(over, " OR ") + " THEN " + strings.Join(lens, " || ") + " END", plan
}

// capMarker begins a SQLite cell that stands for an over-long value. It is
// drawn at random once per process and only ever written into the query,
// so a stored value cannot begin with it except by a 2^-128 chance.
var capMarker = func() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("kandev-extract: no randomness for the cap marker: " + err.Error())
	}
	return "kx!cap:" + hex.EncodeToString(b[:]) + ":"
}()

// sqliteCapSpec returns a copy of spec in which each capped column the
// table has is read, on SQLite, as the value when it is within the cap,
// else as capMarker, the value's length in bytes and, when the value is at
// most bound bytes, ':' and its first MaxBytes bytes (substr loads the
// whole value, so a longer one is only measured). octet_length reads no
// content: SQLite answers it from the record header.
func sqliteCapSpec(spec models.TableSpec, have map[string]bool, bound int) (models.TableSpec, capPlan) {
	plan := capPlan{width: len(spec.Columns), inline: true}
	out := eachCapped(spec, have, func(i int, col string, c models.ColumnSpec) (string, bool) {
		read := col
		if c.Kind == models.KindStamp {
			read = "CAST(" + col + " AS TEXT)"
		}
		length := "octet_length(" + col + ")"
		measured := "'" + capMarker + "' || " + length
		plan.cols = append(plan.cols, capCol{idx: i, max: c.MaxBytes, kind: c.Kind})
		return fmt.Sprintf("CASE WHEN %s > %d THEN CASE WHEN %s <= %d THEN %s || ':' || substr(CAST(%s AS BLOB), 1, %d) ELSE %s END ELSE %s END",
			length, c.MaxBytes, length, bound, measured, col, c.MaxBytes, measured, read), true
	})
	return out, plan
}

// eachCapped returns a copy of spec in which each capped column the table
// has (col: its alias-qualified, quoted name) is read through the
// expression render gives, unless render declines it.
func eachCapped(spec models.TableSpec, have map[string]bool, render func(i int, col string, c models.ColumnSpec) (string, bool)) models.TableSpec {
	out := spec
	out.Columns = append([]models.ColumnSpec(nil), spec.Columns...)
	for i, c := range spec.Columns {
		if c.MaxBytes <= 0 || c.Expr != "" || !have[c.Name] {
			continue
		}
		col := quoteIdent(c.Name)
		if spec.Alias != "" {
			col = spec.Alias + "." + col
		}
		if expr, ok := render(i, col, c); ok {
			out.Columns[i].Expr = expr
		}
	}
	return out
}

// pgColumnType is what capping needs to know of a PostgreSQL column type.
type pgColumnType struct {
	varlena bool // variable length: may hold a huge value
	text    bool // a string type: left() cuts it
}

// pgCap reads a capped PostgreSQL column: a string type through left()
// (its first MaxBytes characters, which hold the first MaxBytes bytes, cut
// to them in Go); another variable-length type as is when within the cap,
// else NULL; a fixed-width type is never capped.
func pgCap(types map[string]pgColumnType) capRender {
	return func(col string, c models.ColumnSpec) (string, string, bool) {
		t := types[c.Name]
		if !t.varlena {
			return "", "", false
		}
		length := "octet_length(" + col + "::text)"
		if t.text {
			return fmt.Sprintf("left(%s::text, %d)", col, c.MaxBytes), length, true
		}
		return fmt.Sprintf("CASE WHEN %s <= %d THEN %s END", length, c.MaxBytes, col), length, true
	}
}

// pgColumnTypes reads the type class of every column of a table.
func (p *pgSnapshot) pgColumnTypes(ctx context.Context, table string) (map[string]pgColumnType, error) {
	rows, err := p.tx.Query(ctx, `SELECT a.attname::text, t.typlen < 0, t.typcategory = 'S'
		FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
		WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND NOT a.attisdropped`, table)
	if err != nil {
		return nil, p.src.wrap("column types of", table, err)
	}
	out := map[string]pgColumnType{}
	var (
		name          string
		varlena, text bool
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &varlena, &text}, func() error {
		out[name] = pgColumnType{varlena: varlena, text: text}
		return nil
	})
	if err != nil {
		return nil, p.src.wrap("column types of", table, err)
	}
	return out, nil
}

// wrap returns fn behind the plan: each over-long cell becomes a
// models.Truncated and the lengths column is dropped.
func (p capPlan) wrap(fn func(row []any) error) func(row []any) error {
	if len(p.cols) == 0 {
		return fn
	}
	if p.inline {
		return func(row []any) error {
			if len(row) != p.width {
				return fmt.Errorf("capped scan: %d columns, want %d", len(row), p.width)
			}
			for _, c := range p.cols {
				if s, ok := row[c.idx].(string); ok && strings.HasPrefix(s, capMarker) {
					t, err := c.marked(s[len(capMarker):])
					if err != nil {
						return err
					}
					row[c.idx] = t
				}
			}
			return fn(row)
		}
	}
	return func(row []any) error {
		if len(row) != p.width+1 {
			return fmt.Errorf("capped scan: %d columns, want %d", len(row), p.width+1)
		}
		if lens := row[p.width]; lens != nil {
			if err := p.apply(row, lens); err != nil {
				return err
			}
		}
		return fn(row[:p.width])
	}
}

// apply reads the lengths column ("index:bytes," per over-long value).
func (p capPlan) apply(row []any, lens any) error {
	s, ok := lens.(string)
	if !ok {
		if b, isBytes := lens.([]byte); isBytes {
			s, ok = string(b), true
		}
	}
	if !ok {
		return fmt.Errorf("capped scan: lengths column holds %T", lens)
	}
	for _, item := range strings.Split(strings.TrimSuffix(s, ","), ",") {
		i, n, found := strings.Cut(item, ":")
		if !found {
			return fmt.Errorf("capped scan: bad lengths item %q", item)
		}
		idx, err1 := strconv.Atoi(i)
		bytes, err2 := strconv.ParseInt(n, 10, 64)
		if err1 != nil || err2 != nil || idx < 0 || idx >= p.width {
			return fmt.Errorf("capped scan: bad lengths item %q", item)
		}
		c, known := p.col(idx)
		if !known {
			return fmt.Errorf("capped scan: column %d is not capped", idx)
		}
		t := models.Truncated{Bytes: bytes, Cap: c.max, Kind: c.kind}
		switch v := row[idx].(type) {
		case string:
			t.Prefix, t.HasPrefix = CutUTF8(v, c.max), true
		case []byte:
			t.Prefix, t.HasPrefix = CutUTF8(string(v), c.max), true
		}
		row[idx] = t
	}
	return nil
}

// marked reads an inline over-long cell after its marker: the length,
// then ':' and the prefix when the value was read.
func (c capCol) marked(s string) (models.Truncated, error) {
	n, prefix, hasPrefix := strings.Cut(s, ":")
	bytes, err := strconv.ParseInt(n, 10, 64)
	if err != nil || bytes <= int64(c.max) {
		return models.Truncated{}, fmt.Errorf("capped scan: bad over-long cell in column %d", c.idx)
	}
	t := models.Truncated{Bytes: bytes, Cap: c.max, Kind: c.kind, HasPrefix: hasPrefix}
	if hasPrefix {
		t.Prefix = CutUTF8(prefix, c.max)
	}
	return t, nil
}

func (p capPlan) col(idx int) (capCol, bool) {
	for _, c := range p.cols {
		if c.idx == idx {
			return c, true
		}
	}
	return capCol{}, false
}

// CutUTF8 returns the prefix of a value that was cut: at most max bytes of
// s, not ending inside a UTF-8 sequence (s may already be cut, by the
// query, inside one). Bytes that are not UTF-8 are kept as they are (the
// transformer repairs them); only a trailing sequence that the cut left
// incomplete is dropped.
func CutUTF8(s string, max int) string {
	if len(s) > max {
		s = s[:max]
	}
	// Back up over at most utf8.UTFMax-1 continuation bytes to the start
	// of the last sequence; drop it if it is incomplete.
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}

// metaReader collects kandev_meta rows: one entry per key (the first row
// read; the others only counted), each value capped.
type metaReader struct {
	out []models.MetaEntry
}

// add records one row: its key, the value or prefix the query read (nil
// when none), and the stored value's length in bytes.
func (m *metaReader) add(key string, v any, bytes int64) {
	for i := range m.out {
		if m.out[i].Key == key {
			m.out[i].Rows++
			return
		}
	}
	e := models.MetaEntry{Key: key, Bytes: bytes, Rows: 1}
	switch x := v.(type) {
	case string:
		e.Value, e.HasPrefix = x, true
	case []byte:
		e.Value, e.HasPrefix = string(x), true
	case nil:
		e.HasPrefix = bytes == 0 // a NULL value is read as '', as it always was
	}
	if e.Bytes > int64(len(e.Value)) || len(e.Value) > models.MaxLabelBytes {
		e.Value = CutUTF8(e.Value, models.MaxLabelBytes)
	}
	m.out = append(m.out, e)
}
