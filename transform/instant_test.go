package transform

import (
	"testing"
	"time"

	"github.com/kandev/kandev-extract/models"
)

func TestParseStamp(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		prec models.Precision
	}{
		{"2026-11-30 06:13:38.331223024+00:00", time.Date(2026, 11, 30, 6, 13, 38, 331223024, time.UTC), models.PrecisionNanosecond},
		{"2026-08-05 09:59:59.999999+00:00", time.Date(2026, 8, 5, 9, 59, 59, 999999000, time.UTC), models.PrecisionMicrosecond},
		{"2026-08-10 09:00:00+00:00", time.Date(2026, 8, 10, 9, 0, 0, 0, time.UTC), models.PrecisionSecond},
		{"2026-11-30 06:35:59.5159118+00:00", time.Date(2026, 11, 30, 6, 35, 59, 515911800, time.UTC), models.PrecisionNanosecond},
		{"2026-11-30 06:35:59.5+00:00", time.Date(2026, 11, 30, 6, 35, 59, 500000000, time.UTC), models.PrecisionMillisecond},
		{"2026-11-30 06:13:38", time.Date(2026, 11, 30, 6, 13, 38, 0, time.UTC), models.PrecisionSecond}, // CURRENT_TIMESTAMP
		{"2026-11-30T06:13:38.1Z", time.Date(2026, 11, 30, 6, 13, 38, 100000000, time.UTC), models.PrecisionMillisecond},
		{"2026-11-30 08:13:38+02:00", time.Date(2026, 11, 30, 6, 13, 38, 0, time.UTC), models.PrecisionSecond},
		{"2026-11-29 23:13:38-07:00", time.Date(2026, 11, 30, 6, 13, 38, 0, time.UTC), models.PrecisionSecond},
		{"2024-02-29 00:00:00+00:00", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), models.PrecisionSecond},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, prec, err := ParseStamp(tt.in)
			if err != nil {
				t.Fatalf("ParseStamp(%q): %v", tt.in, err)
			}
			if !got.Equal(tt.want) || got.Location() != time.UTC {
				t.Errorf("ParseStamp(%q) = %v, want %v (UTC)", tt.in, got, tt.want)
			}
			if prec != tt.prec {
				t.Errorf("precision = %q, want %q", prec, tt.prec)
			}
		})
	}
}

func TestParseStampRejects(t *testing.T) {
	for _, in := range []string{
		"", "yesterday", "2026-11-30", "2026-13-01 00:00:00+00:00", "2026-02-30 00:00:00+00:00",
		"2023-02-29 00:00:00+00:00", "2026-11-30 24:00:00+00:00", "2026-11-30 06:13:38.+00:00",
		"2026-11-30 06:13:38.1234567891+00:00", "2026-11-30 06:13:38+0000", "2026-11-30 06:13:38 UTC",
		"2026/11/30 06:13:38", "1764483218", "2026-11-30x06:13:38", "2026-11-30 06:13:38+00:00junk",
	} {
		if got, _, err := ParseStamp(in); err == nil {
			t.Errorf("ParseStamp(%q) = %v, want an error", in, got)
		}
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		prec models.Precision
		ok   bool
	}{
		{"2026-11-30T06:13:38.305686895Z", time.Date(2026, 11, 30, 6, 13, 38, 305686895, time.UTC), models.PrecisionNanosecond, true},
		{"2026-08-03T15:00:00.123456789Z", time.Date(2026, 8, 3, 15, 0, 0, 123456789, time.UTC), models.PrecisionNanosecond, true},
		{"2026-08-12T19:40:58.661138Z", time.Date(2026, 8, 12, 19, 40, 58, 661138000, time.UTC), models.PrecisionMicrosecond, true},
		{"2026-08-05T10:00:00Z", time.Date(2026, 8, 5, 10, 0, 0, 0, time.UTC), models.PrecisionSecond, true},
		{"2026-08-05T12:00:00+02:00", time.Date(2026, 8, 5, 10, 0, 0, 0, time.UTC), models.PrecisionSecond, true},
		// A key is RFC 3339: the column forms are not accepted for it.
		{"2026-08-05 10:00:00+00:00", time.Time{}, "", false},
		{"2026-08-05T10:00:00", time.Time{}, "", false},
		{"not a time", time.Time{}, "", false},
	}
	for _, tt := range tests {
		got, prec, err := ParseKey(tt.in)
		if (err == nil) != tt.ok {
			t.Fatalf("ParseKey(%q) err = %v, want ok=%v", tt.in, err, tt.ok)
		}
		if tt.ok && (!got.Equal(tt.want) || prec != tt.prec) {
			t.Errorf("ParseKey(%q) = %v %s, want %v %s", tt.in, got, prec, tt.want, tt.prec)
		}
	}
}

func TestReadKey(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name       string
		raw        *string
		allowEmpty bool
		want       models.KeyState
	}{
		{"absent", nil, true, models.KeyAbsent},
		{"empty backfill_through", s(""), true, models.KeyNoneMatched},
		{"empty capture_since is unparseable, not absent", s(""), false, models.KeyUnparseable},
		{"garbage", s("2026-08-05"), true, models.KeyUnparseable},
		{"nano", s("2026-08-03T15:00:00.123456789Z"), false, models.KeyPresent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadKey("k", tt.raw, tt.allowEmpty)
			if got.State != tt.want {
				t.Errorf("state = %s, want %s", got.State, tt.want)
			}
			if got.State == models.KeyUnparseable && got.Problem == "" {
				t.Error("unparseable key without a problem text")
			}
			if got.Raw != tt.raw {
				t.Error("raw value not kept verbatim")
			}
		})
	}
}

// FuzzParseStamp: never panics, and whatever parses re-parses to the same
// instant from its canonical column form.
func FuzzParseStamp(f *testing.F) {
	for _, s := range []string{
		"2026-11-30 06:13:38.331223024+00:00", "2026-08-10 09:00:00+00:00", "2026-11-30 06:13:38",
		"2026-11-30T06:13:38.305686895Z", "2026-08-05T10:00:00Z", "2026-08-05 09:59:59.999999+00:00",
		"", "null", "2026-02-30 00:00:00+00:00", "2026-11-30 06:13:38+14:00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _, err := ParseStamp(s)
		if err != nil {
			return
		}
		again, _, err := ParseStamp(got.Format("2006-01-02 15:04:05.999999999-07:00"))
		if err != nil || !again.Equal(got) {
			t.Fatalf("%q parsed to %v but its canonical form re-parses to %v (%v)", s, got, again, err)
		}
	})
}

// FuzzParseKey: never panics; a parsed key round-trips through RFC3339Nano.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"2026-08-03T15:00:00.123456789Z", "2026-08-05T10:00:00Z", "", "garbage", "2026-08-05T10:00:00+02:00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _, err := ParseKey(s)
		if err != nil {
			return
		}
		again, _, err := ParseKey(got.Format(time.RFC3339Nano))
		if err != nil || !again.Equal(got) {
			t.Fatalf("%q parsed to %v but RFC3339Nano re-parses to %v (%v)", s, got, again, err)
		}
	})
}

func BenchmarkParseStamp(b *testing.B) {
	s := "2026-11-30 06:13:38.331223024+00:00"
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if _, _, err := ParseStamp(s); err != nil {
			b.Fatal(err)
		}
	}
}
