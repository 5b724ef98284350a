package transform

import (
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAsInt(t *testing.T) {
	tests := []struct {
		in      any
		want    int64
		valid   bool
		problem string
	}{
		{nil, 0, false, ""},
		{int64(42), 42, true, ""},
		{int64(-5), -5, true, ""}, // negative metrics are refused by the fact, not here
		{int32(7), 7, true, ""},
		{true, 1, true, ""},
		{"12", 12, true, ""},
		{"-0", 0, true, ""},
		{"12abc", 0, false, ProblemNotInteger},
		{"many", 0, false, ProblemNotInteger},
		{" 12", 0, false, ProblemNotInteger},
		{"", 0, false, ProblemNotInteger},
		{"99999999999999999999", 0, false, ProblemOutOfRange},
		{float64(12), 12, true, ""},
		{12.5, 0, false, ProblemNotInteger},
		{math.NaN(), 0, false, ProblemNotInteger},
		{math.Inf(1), 0, false, ProblemNotInteger},
		{1e30, 0, false, ProblemOutOfRange},
		// 2^63 is what float64(math.MaxInt64) rounds to: not an int64.
		{float64(math.MaxInt64), 0, false, ProblemOutOfRange},
		{-float64(1 << 63), math.MinInt64, true, ""},
		{time.Now(), 0, false, "unexpected time.Time"},
	}
	for _, tt := range tests {
		n, valid, problem := asInt(tt.in)
		if n != tt.want || valid != tt.valid || problem != tt.problem {
			t.Errorf("asInt(%#v) = %d, %v, %q; want %d, %v, %q", tt.in, n, valid, problem, tt.want, tt.valid, tt.problem)
		}
	}
}

func TestAsStampAndOffsets(t *testing.T) {
	tests := []struct {
		in      any
		want    string // RFC 3339 UTC, "" when invalid
		problem bool
		flagged bool
	}{
		{nil, "", false, false},
		{"2026-11-30 06:13:38.331223024+00:00", "2026-11-30T06:13:38.331223024Z", false, false},
		{"2026-11-30 06:13:38", "2026-11-30T06:13:38Z", false, false},
		{"2026-11-30T06:13:38Z", "2026-11-30T06:13:38Z", false, false},
		{"2026-11-30 06:13:38-00:00", "2026-11-30T06:13:38Z", false, false},
		{"2026-11-30 08:13:38.5+02:00", "2026-11-30T06:13:38.5Z", false, true},
		{"2026-11-29 23:13:38-07:00", "2026-11-30T06:13:38Z", false, true},
		{"yesterday", "", true, false},
		{int64(1764483218), "", true, false},
		{time.Date(2026, 8, 3, 15, 0, 0, 123456000, time.FixedZone("X", 3600)), "2026-08-03T15:00:00.123456Z", false, false},
		{time.Date(2026, 8, 3, 15, 0, 0, 123456000, time.UTC), "2026-08-03T15:00:00.123456Z", false, false},
		{time.Unix(1785769200, 123456000).UTC(), "2026-08-03T15:00:00.123456Z", false, false},
		{time.Unix(1785769200, 123456000).In(time.Local), time.Unix(1785769200, 123456000).In(time.Local).Format("2006-01-02T15:04:05.999999999") + "Z", false, false},
	}
	for _, tt := range tests {
		got, valid, problem := asStamp(tt.in)
		if (problem != "") != tt.problem || valid != (tt.want != "") {
			t.Errorf("asStamp(%#v) = %v, %v, %q", tt.in, got, valid, problem)
			continue
		}
		if valid {
			if s := got.Format(time.RFC3339Nano); s != tt.want || got.Location() != time.UTC {
				t.Errorf("asStamp(%#v) = %s (%s), want %s UTC", tt.in, s, got.Location(), tt.want)
			}
			note := offsetNote(tt.in, got)
			if (note != "") != tt.flagged {
				t.Errorf("offsetNote(%#v) = %q, flagged want %v", tt.in, note, tt.flagged)
			}
			if tt.flagged && !strings.Contains(note, tt.want) {
				t.Errorf("offsetNote(%#v) = %q does not name the instant %s", tt.in, note, tt.want)
			}
		}
	}
}

func TestRawTextForRejects(t *testing.T) {
	tests := []struct {
		in   any
		want string
		ok   bool
	}{
		{nil, "", false},
		{"plain", "plain", true},
		{"opus\xff", `opus\xff`, true},
		{"K-\xfe1", `K-\xfe1`, true},
		{"\xe2\x82", `\xe2\x82`, true}, // a truncated euro sign
		{"é€", "é€", true},
		{int64(-5), "-5", true},
		{1e30, "1e+30", true},
	}
	for _, tt := range tests {
		got, ok := rawText(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("rawText(%#v) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	// Clipping keeps whole characters: 255 ASCII bytes then a 3-byte euro
	// sign must not be cut in the middle.
	long := strings.Repeat("a", 255) + "€€"
	got, _ := rawText(long)
	if !utf8.ValidString(got) || got != strings.Repeat("a", 255)+"…" {
		t.Errorf("clipped = %q (valid UTF-8: %v)", got[250:], utf8.ValidString(got))
	}
}

func TestValidText(t *testing.T) {
	for in, want := range map[string]string{
		"ok": "ok", "opus\xff": "opus\uFFFD", "\xff\xfe": "\uFFFD", "a\xc0b": "a\uFFFDb",
	} {
		if got := validText(in); got != want || !utf8.ValidString(got) {
			t.Errorf("validText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStepAtStartProblems(t *testing.T) {
	tests := []struct {
		in      any
		step    string
		ok      bool
		problem string
	}{
		{nil, "", false, ""},
		{"", "", false, ""},
		{"  ", "", false, ""},
		{"null", "", false, ""},
		{"{}", "", false, ""},
		{`{"workflow_step_id_at_start":"6c03cfa7"}`, "6c03cfa7", true, ""},
		{` {"workflow_step_id_at_start": "s", "other": [1, {"x": null}]} `, "s", true, ""},
		{`{"workflow_step_id_at_start":""}`, "", false, ""},
		{`{"workflow_step_id_at_start":null}`, "", false, ""},
		{`{"workflow_step_id_at_start":7}`, "", false, ProblemStepNotString},
		{`{"workflow_step_id_at_start":{"id":"s"}}`, "", false, ProblemStepNotString},
		{"{not json", "", false, ProblemMetadataNotJSON},
		{`{"a":1}}`, "", false, ProblemMetadataNotJSON},
		{"[1, 2]", "", false, ProblemMetadataNotObject},
		{`"a string"`, "", false, ProblemMetadataNotObject},
		{"42", "", false, ProblemMetadataNotObject},
		{"true", "", false, ProblemMetadataNotObject},
		{"{\"workflow_step_id_at_start\":\"step\x9f\"}", "step\uFFFD", true, ""},
		// The key is exact (encoding/json would match a struct field in
		// any case); found by FuzzStepAtStart.
		{`{"workflow_step_id_At_stArt":"s"}`, "", false, ""},
		{`{"WORKFLOW_STEP_ID_AT_START":"s","workflow_step_id_at_start":"t"}`, "t", true, ""},
		{int64(5), "", false, ProblemMetadataNotObject},
	}
	for _, tt := range tests {
		step, ok, problem := StepAtStart(tt.in)
		if step != tt.step || ok != tt.ok || problem != tt.problem {
			t.Errorf("StepAtStart(%#v) = %q, %v, %q; want %q, %v, %q", tt.in, step, ok, problem, tt.step, tt.ok, tt.problem)
		}
	}
}

// An offset may not push an instant out of the years a four-digit year can
// write (found by FuzzParseKey: 0000-01-01T00:00:00+00:01 is year -1).
func TestInstantYearRange(t *testing.T) {
	for _, in := range []string{"0000-01-01T00:00:00+00:01", "9999-12-31T23:59:59-00:01"} {
		if got, _, err := ParseKey(in); err == nil {
			t.Errorf("ParseKey(%q) = %v, want an error", in, got)
		}
	}
	for _, in := range []string{"0000-01-01 00:00:00+00:01", "9999-12-31 23:59:59-23:59"} {
		if got, _, err := ParseStamp(in); err == nil {
			t.Errorf("ParseStamp(%q) = %v, want an error", in, got)
		}
	}
	for _, in := range []string{"0001-01-01 00:00:00+00:00", "0000-12-31 23:00:00-01:00", "9999-12-31 23:59:59+00:00"} {
		if _, _, err := ParseStamp(in); err != nil {
			t.Errorf("ParseStamp(%q): %v", in, err)
		}
	}
}

// BenchmarkAsStamp is the stamp cell conversion the transformers use.
func BenchmarkAsStamp(b *testing.B) {
	var v any = "2026-11-30 06:13:38.331223024+00:00"
	b.SetBytes(int64(len(v.(string))))
	for b.Loop() {
		if _, ok, _ := asStamp(v); !ok {
			b.Fatal("not a stamp")
		}
	}
}

// TestAsStampUTCAsIs: a time.Time already in UTC is read as the same
// value (==, location and all) that rebuilding its wall clock in UTC gives.
func TestAsStampUTCAsIs(t *testing.T) {
	for _, v := range []time.Time{
		time.Now().UTC(), time.Unix(-62135596800, 0).UTC(), time.Unix(253402300799, 999999000).UTC(),
		time.Date(2026, 2, 24, 7, 12, 0, 123457000, time.UTC), {},
	} {
		got, ok, problem := asStamp(v)
		want := time.Date(v.Year(), v.Month(), v.Day(), v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
		if !ok || problem != "" || got != want {
			t.Errorf("asStamp(%#v) = %#v, %v, %q; want %#v", v, got, ok, problem, want)
		}
	}
}
