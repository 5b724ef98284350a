package transform

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzStepAtStart: turn metadata is whatever a store holds. StepAtStart
// never panics; it returns a step or a problem, never both; a step is
// non-empty valid UTF-8 and is exactly what the JSON says; a problem only
// for text that is not a JSON object or whose step is not a string.
func FuzzStepAtStart(f *testing.F) {
	for _, s := range []string{
		`{"workflow_step_id_at_start":"6c03cfa7-11d1-4cd2-9b37-09dfa8713268"}`, `{}`, ``, `null`, `{not json`,
		`[1,2]`, `"s"`, `{"workflow_step_id_at_start":7}`, `{"workflow_step_id_at_start":null}`,
		`{"workflow_step_id_at_start":"","x":1}`, "{\"workflow_step_id_at_start\":\"s\xff\"}",
		`{"workflow_step_id_at_start":"\u00e9\ud800"}`, `{"a":{"workflow_step_id_at_start":"nested"}}`,
		`{"workflow_step_id_at_start":"a","workflow_step_id_at_start":"b"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		step, ok, problem := StepAtStart(s)
		if ok && problem != "" {
			t.Fatalf("%q: both a step %q and a problem %q", s, step, problem)
		}
		if ok != (step != "") {
			t.Fatalf("%q: ok=%v with step %q", s, ok, step)
		}
		if !utf8.ValidString(step) {
			t.Fatalf("%q: step %q is not UTF-8", s, step)
		}
		trimmed := strings.TrimSpace(s)
		isObject := json.Valid([]byte(trimmed)) && strings.HasPrefix(trimmed, "{")
		switch problem {
		case "":
			if trimmed != "" && trimmed != "null" && !isObject {
				t.Fatalf("%q is not a JSON object but no problem was reported", s)
			}
		case ProblemMetadataNotJSON:
			if json.Valid([]byte(trimmed)) {
				t.Fatalf("%q is JSON but was reported as not JSON", s)
			}
		case ProblemMetadataNotObject:
			if isObject {
				t.Fatalf("%q is a JSON object but was reported as not one", s)
			}
		case ProblemStepNotString:
			if !isObject {
				t.Fatalf("%q: step-type problem for something that is not an object", s)
			}
		default:
			t.Fatalf("%q: unknown problem %q", s, problem)
		}
		if ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(trimmed), &m); err != nil {
				t.Fatalf("%q gave a step but does not decode: %v", s, err)
			}
			if want, _ := m["workflow_step_id_at_start"].(string); validText(want) != step {
				t.Fatalf("%q: step %q, the JSON says %q", s, step, want)
			}
		}
	})
}

// FuzzAsInt: any cell SQLite's dynamic typing can put in an INTEGER column
// (text, integer, real). asInt never panics; it returns a value or a
// problem (or neither, for NULL), and a value is exactly the cell's.
func FuzzAsInt(f *testing.F) {
	f.Add(uint8(0), "12", int64(0), 0.0)
	f.Add(uint8(0), "99999999999999999999", int64(0), 0.0)
	f.Add(uint8(0), "-9223372036854775808", int64(0), 0.0)
	f.Add(uint8(0), "12abc", int64(0), 0.0)
	f.Add(uint8(1), "", int64(-5), 0.0)
	f.Add(uint8(1), "", int64(math.MaxInt64), 0.0)
	f.Add(uint8(2), "", int64(0), 12.5)
	f.Add(uint8(2), "", int64(0), 9.223372036854775807e18)
	f.Add(uint8(2), "", int64(0), -9.223372036854775808e18)
	f.Add(uint8(2), "", int64(0), 1e30)
	f.Add(uint8(2), "", int64(0), math.NaN())
	f.Add(uint8(3), "", int64(0), 0.0)
	f.Fuzz(func(t *testing.T, kind uint8, s string, i int64, x float64) {
		var cell any
		switch kind % 4 {
		case 0:
			cell = s
		case 1:
			cell = i
		case 2:
			cell = x
		case 3:
			cell = nil
		}
		n, valid, problem := asInt(cell)
		if valid && problem != "" {
			t.Fatalf("%#v: valid with problem %q", cell, problem)
		}
		if !valid && n != 0 {
			t.Fatalf("%#v: invalid but n = %d", cell, n)
		}
		switch c := cell.(type) {
		case nil:
			if valid || problem != "" {
				t.Fatalf("NULL: %d %v %q", n, valid, problem)
			}
		case int64:
			if !valid || n != c {
				t.Fatalf("%d: got %d %v", c, n, valid)
			}
		case string:
			want, err := strconv.ParseInt(c, 10, 64)
			if (err == nil) != valid || (valid && n != want) {
				t.Fatalf("%q: got %d %v %q, ParseInt %d %v", c, n, valid, problem, want, err)
			}
			if !valid && problem == "" {
				t.Fatalf("%q: refused without a problem", c)
			}
		case float64:
			if valid && float64(n) != c {
				t.Fatalf("%v: got %d, which is not the same number", c, n)
			}
			inRange := c >= -(1<<63) && c < 1<<63
			if valid != (c == math.Trunc(c) && inRange) {
				t.Fatalf("%v: valid=%v", c, valid)
			}
			if !valid && problem == "" {
				t.Fatalf("%v: refused without a problem", c)
			}
		}
	})
}

// FuzzAsStamp: a TIMESTAMP cell holding any text. asStamp never panics;
// it returns a UTC instant or a problem; it agrees with ParseStamp; and a
// non-UTC offset is flagged exactly when the text carries one.
func FuzzAsStamp(f *testing.F) {
	for _, s := range []string{
		"2026-11-30 06:13:38.331223024+00:00", "2026-08-10 09:00:00+00:00", "2026-11-30 06:13:38",
		"2026-11-30T06:13:38.305686895Z", "2026-11-30 08:13:38+02:00", "2026-11-29 23:13:38-07:00",
		"2026-11-30 06:13:38-00:00", "0001-01-01 00:00:00+01:00", "9999-12-31 23:59:59-23:59",
		"yesterday", "", "1764483218", "2026-02-29 00:00:00+00:00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, valid, problem := asStamp(s)
		want, _, err := ParseStamp(s)
		if valid != (err == nil) || valid == (problem != "") {
			t.Fatalf("%q: valid=%v problem=%q, ParseStamp err=%v", s, valid, problem, err)
		}
		if !valid {
			return
		}
		if !got.Equal(want) || got.Location() != time.UTC {
			t.Fatalf("%q: %v, ParseStamp %v", s, got, want)
		}
		note := offsetNote(s, got)
		off := ""
		if len(s) >= 6 && (s[len(s)-6] == '+' || s[len(s)-6] == '-') {
			off = s[len(s)-6:]
		}
		if flagged := off != "" && off != "+00:00" && off != "-00:00"; (note != "") != flagged {
			t.Fatalf("%q: note %q, flagged want %v", s, note, flagged)
		}
	})
}
