// Package instant parses the instants a Kandev store holds — timestamp
// columns as Kandev's drivers write them, and the activation keys —
// exactly, to the nanosecond. extract (SQLite's kx_instant function, the
// message pass) and transform (classification) both use it.
package instant

import (
	"errors"
	"fmt"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// ErrNotTimestamp is returned for text that is not a timestamp form Kandev writes.
var ErrNotTimestamp = errors.New("not a timestamp")

// ParseStamp parses a timestamp column value as Kandev's drivers write it:
//
//	2026-11-30 06:13:38.331223024+00:00   mattn/go-sqlite3, 0-9 fraction digits
//	2026-11-30 06:13:38                   SQLite CURRENT_TIMESTAMP (UTC, no offset)
//	2026-11-30T06:13:38.5Z                RFC 3339 (also accepted)
//
// A missing offset means UTC. Any other offset is honoured, so the result is
// always the exact instant, in UTC. The precision reports the fraction
// digits present.
func ParseStamp(s string) (time.Time, models.Precision, error) {
	return parseInstant(s, true)
}

// ParseKey parses an activation key value: RFC 3339 with an explicit offset
// (Kandev writes time.RFC3339Nano; older builds time.RFC3339).
func ParseKey(s string) (time.Time, models.Precision, error) {
	return parseInstant(s, false)
}

func parseInstant(s string, column bool) (time.Time, models.Precision, error) {
	// Fixed positions: YYYY-MM-DD?HH:MM:SS
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q", ErrNotTimestamp, clip(s))
	}
	if s[10] != 'T' && !(column && s[10] == ' ') {
		return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: bad date/time separator", ErrNotTimestamp, clip(s))
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q", ErrNotTimestamp, clip(s))
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: field out of range", ErrNotTimestamp, clip(s))
	}
	rest := s[19:]
	nanos, nd := 0, 0
	if len(rest) > 0 && rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			if nd < 9 {
				nanos = nanos*10 + int(rest[i]-'0')
				nd++
			} else {
				return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: more than 9 fraction digits", ErrNotTimestamp, clip(s))
			}
			i++
		}
		if nd == 0 {
			return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: empty fraction", ErrNotTimestamp, clip(s))
		}
		for k := nd; k < 9; k++ {
			nanos *= 10
		}
		rest = rest[i:]
	}
	offset := 0
	switch {
	case rest == "":
		if !column {
			return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: no UTC offset", ErrNotTimestamp, clip(s))
		}
	case rest == "Z":
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:3])
		om, ok2 := digits(rest[4:6])
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: bad offset", ErrNotTimestamp, clip(s))
		}
		offset = oh*3600 + om*60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: trailing text", ErrNotTimestamp, clip(s))
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nanos, time.UTC)
	if offset != 0 {
		t = t.Add(-time.Duration(offset) * time.Second)
	}
	// Only instants that a four-digit year can write back (0001-9999 UTC);
	// an offset can push 0000-01-01 or 9999-12-31 outside them.
	if t.Year() < 1 || t.Year() > 9999 {
		return time.Time{}, models.PrecisionNone, fmt.Errorf("%w: %q: the instant is outside the years 0001-9999", ErrNotTimestamp, clip(s))
	}
	return t, precisionOf(nd), nil
}

func precisionOf(fractionDigits int) models.Precision {
	switch {
	case fractionDigits == 0:
		return models.PrecisionSecond
	case fractionDigits <= 3:
		return models.PrecisionMillisecond
	case fractionDigits <= 6:
		return models.PrecisionMicrosecond
	default:
		return models.PrecisionNanosecond
	}
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
