package extract

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// pgRowDecoder turns a pgx result's raw rows into the []any cells the
// scans hand on, as pgx's Rows.Values() does — the same Go values, the
// same errors — without its per-row costs: Values() allocates the row's
// slice, looks each field's type up in the type map by OID, and decodes
// every timestamp through a generic scan plan into a boxed pgtype value
// first. Here each field's decoding is chosen once per result, the row
// slice is reused (Scan's contract: models.Snapshot), and the common
// binary forms are read directly:
//
//   - a type pgx decodes with pgtype.TextCodec (text, varchar, bpchar,
//     name): string(raw), as TextCodec.DecodeValue; a value repeating the
//     previous row's in its column, or a short one of a column that
//     repeats few distinct values (states, models, sources), shares one
//     boxed string (pgIntern), which saves both allocations;
//   - bool, int2, int4 and int8 in binary: the Go type Values() gives
//     (bool, int16, int32, int64);
//   - timestamp (without time zone) in binary: time.Time in UTC, built
//     exactly as pgx's binary timestamp scan builds it (microseconds from
//     2000-01-01, no location applied: the wall clock is UTC by Kandev's
//     contract), for instants between the years 1 and 9999.
//
// Anything else — another type or format, an unexpected length, infinity,
// an instant outside those years — goes through the codec as Values()
// does, so its value or error is pgx's own.
type pgRowDecoder struct {
	typeMap *pgtype.Map
	fields  []pgconn.FieldDescription
	kinds   []pgFieldKind
	codecs  []pgtype.Codec // the field's codec, nil when the map has none
	interns []*pgIntern    // for pgFieldText fields
	row     []any
}

type pgFieldKind uint8

const (
	pgFieldCodec pgFieldKind = iota // the codec's DecodeValue (or raw, without one)
	pgFieldText
	pgFieldBool
	pgFieldInt2
	pgFieldInt4
	pgFieldInt8
	pgFieldTimestamp
)

func newPGRowDecoder(rows pgx.Rows) *pgRowDecoder {
	fds := rows.FieldDescriptions()
	d := &pgRowDecoder{
		typeMap: rows.Conn().TypeMap(),
		fields:  fds,
		kinds:   make([]pgFieldKind, len(fds)),
		codecs:  make([]pgtype.Codec, len(fds)),
		interns: make([]*pgIntern, len(fds)),
		row:     make([]any, len(fds)),
	}
	for i := range fds {
		fd := &fds[i]
		dt, ok := d.typeMap.TypeForOID(fd.DataTypeOID)
		if !ok {
			continue
		}
		d.codecs[i] = dt.Codec
		binary := fd.Format == pgtype.BinaryFormatCode
		switch c := dt.Codec.(type) {
		case pgtype.TextCodec:
			d.kinds[i] = pgFieldText
			d.interns[i] = &pgIntern{}
		case pgtype.BoolCodec:
			if binary {
				d.kinds[i] = pgFieldBool
			}
		case pgtype.Int2Codec:
			if binary {
				d.kinds[i] = pgFieldInt2
			}
		case pgtype.Int4Codec:
			if binary {
				d.kinds[i] = pgFieldInt4
			}
		case pgtype.Int8Codec:
			if binary {
				d.kinds[i] = pgFieldInt8
			}
		case *pgtype.TimestampCodec:
			if binary && c.ScanLocation == nil && fd.DataTypeOID == pgtype.TimestampOID {
				d.kinds[i] = pgFieldTimestamp
			}
		}
	}
	return d
}

// decode returns the current row's cells (the same slice every call).
func (d *pgRowDecoder) decode(raw [][]byte) ([]any, error) {
	if len(raw) != len(d.fields) {
		return nil, errors.New("pgx: row width differs from its field descriptions")
	}
	row := d.row
	for i, buf := range raw {
		v, err := d.value(i, buf)
		if err != nil {
			return nil, err
		}
		row[i] = v
	}
	return row, nil
}

// pgY2K is 2000-01-01 in microseconds from the Unix epoch; pgMinMicros and
// pgMaxMicros bound the instants (years 1 to 9999) read directly.
const (
	pgY2K       = 946684800 * 1_000_000
	pgMinMicros = (-62135596800 - 946684800) * 1_000_000 // 0001-01-01
	pgMaxMicros = (253402300800 - 946684800) * 1_000_000 // 10000-01-01
)

func (d *pgRowDecoder) value(i int, buf []byte) (any, error) {
	if buf == nil {
		return nil, nil
	}
	switch d.kinds[i] {
	case pgFieldText:
		return d.interns[i].get(buf), nil
	case pgFieldBool:
		if len(buf) == 1 {
			return buf[0] == 1, nil
		}
	case pgFieldInt2:
		if len(buf) == 2 {
			return int16(binary.BigEndian.Uint16(buf)), nil
		}
	case pgFieldInt4:
		if len(buf) == 4 {
			return int32(binary.BigEndian.Uint32(buf)), nil
		}
	case pgFieldInt8:
		if len(buf) == 8 {
			return int64(binary.BigEndian.Uint64(buf)), nil
		}
	case pgFieldTimestamp:
		if len(buf) == 8 {
			if us := int64(binary.BigEndian.Uint64(buf)); us >= pgMinMicros && us < pgMaxMicros {
				// pgx's scanPlanBinaryTimestampToTimestampScanner, term for term.
				return time.Unix(pgY2K/1_000_000+us/1_000_000, (pgY2K%1_000_000*1_000)+(us%1_000_000*1000)).UTC(), nil
			}
		}
	}
	return d.slow(i, buf)
}

// slow decodes one value as Values() does.
func (d *pgRowDecoder) slow(i int, buf []byte) (any, error) {
	fd := &d.fields[i]
	if c := d.codecs[i]; c != nil {
		return c.DecodeValue(d.typeMap, fd.DataTypeOID, fd.Format, buf)
	}
	switch fd.Format {
	case pgtype.TextFormatCode:
		return string(buf), nil
	case pgtype.BinaryFormatCode:
		return append([]byte(nil), buf...), nil
	}
	return nil, errors.New("unknown format code")
}

// pgIntern shares one boxed string among the repeats of a value in one
// column: the previous row's, when the value is the same (rows come
// clustered — a session's subagent rows, messages and turns together: 90 %
// of the large store's subagent rows repeat the previous row's session id,
// 68 % its turn id), else a short value's from a small table, while the
// column repeats few distinct values (states, models, sources): a column
// of ids stops trying after pgInternGiveUp misses with a full table. A
// string is immutable, so sharing it is invisible to the caller; each
// shared value saves the string's allocation and its boxing.
type pgIntern struct {
	last   any // the previous value, boxed (nil: none yet)
	lastS  string
	m      map[string]any
	misses int
	off    bool
}

const (
	pgInternMaxLen = 64
	pgInternMax    = 256
	pgInternGiveUp = 4096
)

func (c *pgIntern) get(b []byte) any {
	if c.last != nil && string(b) == c.lastS { // compares without allocating
		return c.last
	}
	v, s := c.lookup(b)
	c.last, c.lastS = v, s
	return v
}

func (c *pgIntern) lookup(b []byte) (any, string) {
	if !c.off && len(b) <= pgInternMaxLen {
		if v, ok := c.m[string(b)]; ok { // no allocation for the lookup
			return v, v.(string)
		}
	}
	s := string(b)
	v := any(s)
	if c.off || len(b) > pgInternMaxLen {
		return v, s
	}
	if len(c.m) < pgInternMax {
		if c.m == nil {
			c.m = make(map[string]any, 16)
		}
		c.m[s] = v
	} else if c.misses++; c.misses >= pgInternGiveUp {
		c.off, c.m = true, nil
	}
	return v, s
}

// pgTextField reports whether the result's field i is decoded as a string
// of its raw bytes (pgtype.TextCodec, as pgRowDecoder reads text).
func pgTextField(rows pgx.Rows, i int) bool {
	dt, ok := rows.Conn().TypeMap().TypeForOID(rows.FieldDescriptions()[i].DataTypeOID)
	if !ok {
		return false
	}
	_, text := dt.Codec.(pgtype.TextCodec)
	return text
}
