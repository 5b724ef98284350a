package transform

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kandev/kandev-extract/models"
)

// The source hands cells as nil, string, int64, int32, float64 or
// time.Time; SQLite's dynamic typing means any of them can turn up in any
// column. These conversions say precisely what they refused and why.

func asText(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "", false
	case string:
		return x, true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), true
	case []byte:
		return string(x), true
	case models.Truncated:
		// An over-long value: its prefix, or nothing when none was read.
		return x.Prefix, x.HasPrefix
	}
	return fmt.Sprint(v), true
}

// asRef reads an id reference; Kandev defaults many to ” meaning none.
func asRef(v any) (string, bool) {
	s, ok := asText(v)
	if s == "" {
		return "", false
	}
	return s, ok
}

// asInt reads an INTEGER cell. problem is non-empty when the cell holds
// something that is not an integer.
func asInt(v any) (n int64, valid bool, problem string) {
	switch x := v.(type) {
	case nil:
		return 0, false, ""
	case int64:
		return x, true, ""
	case int32:
		return int64(x), true, ""
	case int:
		return int64(x), true, ""
	case bool:
		if x {
			return 1, true, ""
		}
		return 0, true, ""
	case float64:
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			return 0, false, ProblemNotInteger
		case x != math.Trunc(x):
			return 0, false, ProblemNotInteger
		// float64(math.MaxInt64) rounds up to 2^63, which int64 cannot
		// hold: the upper bound is exclusive.
		case x < -(1<<63) || x >= 1<<63:
			return 0, false, ProblemOutOfRange
		}
		return int64(x), true, ""
	case string:
		i, err := strconv.ParseInt(x, 10, 64)
		switch {
		case err == nil:
			return i, true, ""
		case errors.Is(err, strconv.ErrRange):
			return 0, false, ProblemOutOfRange
		}
		return 0, false, ProblemNotInteger
	case models.Truncated:
		return 0, false, fmt.Sprintf("%s: %d bytes of text, over the %d bytes read of an integer column", ProblemNotInteger, x.Bytes, x.Cap)
	}
	return 0, false, fmt.Sprintf("unexpected %T", v)
}

// Reasons asInt gives (they appear in the rejects table).
const (
	ProblemNotInteger = "not an integer"
	ProblemOutOfRange = "integer out of the 64-bit range"
	ProblemNegative   = "negative metric (a count or duration cannot be negative)"
	// ProblemImplausible: a metric above MaxMetric.
	ProblemImplausible = "implausibly large metric (above 2^53-1, the largest integer a double-precision reader holds exactly)"
)

// MaxMetric bounds total_tokens, tool_use_count and duration_ms: 2^53-1
// tokens or milliseconds (285 000 years) is no measurement, BI tools and
// JavaScript readers that hold numbers as doubles would round anything
// larger, and sums over a run stay far from the 64-bit limit.
const MaxMetric = 1<<53 - 1

// asStamp reads a TIMESTAMP cell: SQLite text in Kandev's forms, or the UTC
// wall clock PostgreSQL's timestamp without time zone holds.
func asStamp(v any) (t time.Time, valid bool, problem string) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, false, ""
	case time.Time:
		// timestamp without time zone: the wall clock is UTC by Kandev's
		// contract, whatever location the driver attached. A value already
		// in UTC (extract's PostgreSQL reader gives every one in UTC) is
		// that wall clock as it is: Round(0) only drops a monotonic reading,
		// as rebuilding it would.
		if x.Location() == time.UTC {
			return x.Round(0), true, ""
		}
		return time.Date(x.Year(), x.Month(), x.Day(), x.Hour(), x.Minute(), x.Second(), x.Nanosecond(), time.UTC), true, ""
	case string:
		t, _, err := ParseStamp(x)
		if err != nil {
			return time.Time{}, false, err.Error()
		}
		return t, true, ""
	case models.Truncated:
		// Never its prefix: a cut could leave a valid instant behind.
		return time.Time{}, false, fmt.Sprintf("not a timestamp: %d bytes, over the %d bytes read of a timestamp column", x.Bytes, x.Cap)
	}
	return time.Time{}, false, fmt.Sprintf("unexpected %T", v)
}

// offsetNote explains a timestamp text that parsed (to t) but carries an
// offset other than UTC. Kandev writes +00:00; the value is converted to
// the exact UTC instant it names, and flagged because its writer was not
// Kandev's.
func offsetNote(v any, t time.Time) string {
	s, ok := v.(string)
	if !ok || len(s) < 6 {
		return ""
	}
	off := s[len(s)-6:]
	if (off[0] != '+' && off[0] != '-') || off[3] != ':' || off == "+00:00" || off == "-00:00" {
		return ""
	}
	return fmt.Sprintf("timestamp carries the non-UTC offset %s (Kandev writes +00:00): converted to the exact UTC instant %s",
		off, t.UTC().Format(time.RFC3339Nano))
}

// rawText renders a refused value for the rejects table: its text, with
// any byte that is not valid UTF-8 written as \xNN (a Parquet string must
// be UTF-8), and clipped at a character boundary.
func rawText(v any) (string, bool) {
	s, ok := asText(v)
	if !ok {
		return "", false
	}
	if !utf8.ValidString(s) {
		s = escapeInvalidUTF8(s)
	}
	return clipRaw(s), true
}

// escapeInvalidUTF8 keeps valid characters and writes each invalid byte
// as \xNN.
func escapeInvalidUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			fmt.Fprintf(&b, "\\x%02x", s[i])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// maxRaw is how many bytes of a refused value the rejects table keeps.
const maxRaw = 256

// clipRaw cuts s to at most maxRaw bytes at a character boundary.
func clipRaw(s string) string {
	if len(s) <= maxRaw {
		return s
	}
	cut := maxRaw
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// validText repairs text that is not valid UTF-8: each run of invalid
// bytes becomes U+FFFD. SQLite stores any bytes in a TEXT column; Parquet
// strings and DuckDB require UTF-8.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
