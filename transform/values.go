package transform

import (
	"fmt"
	"math"
	"strconv"
	"time"
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
		if x == math.Trunc(x) && x >= math.MinInt64 && x <= math.MaxInt64 {
			return int64(x), true, ""
		}
		return 0, false, "not an integer"
	case string:
		if i, err := strconv.ParseInt(x, 10, 64); err == nil {
			return i, true, ""
		}
		return 0, false, "not an integer"
	}
	return 0, false, fmt.Sprintf("unexpected %T", v)
}

// asStamp reads a TIMESTAMP cell: SQLite text in Kandev's forms, or the UTC
// wall clock PostgreSQL's timestamp without time zone holds.
func asStamp(v any) (t time.Time, valid bool, problem string) {
	switch x := v.(type) {
	case nil:
		return time.Time{}, false, ""
	case time.Time:
		// timestamp without time zone: the wall clock is UTC by Kandev's
		// contract, whatever location the driver attached.
		return time.Date(x.Year(), x.Month(), x.Day(), x.Hour(), x.Minute(), x.Second(), x.Nanosecond(), time.UTC), true, ""
	case string:
		t, _, err := ParseStamp(x)
		if err != nil {
			return time.Time{}, false, err.Error()
		}
		return t, true, ""
	}
	return time.Time{}, false, fmt.Sprintf("unexpected %T", v)
}
