package models

import (
	"testing"
	"time"
)

func TestQuietWriter(t *testing.T) {
	now := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	after := 36 * time.Hour
	at := func(d time.Duration) *time.Time { v := now.Add(-d); return &v }
	for _, c := range []struct {
		name   string
		status HealthStatus
		newest *time.Time
		want   bool
	}{
		{"healthy, newest row older than the threshold", HealthHealthy, at(after + time.Microsecond), true},
		{"healthy, newest row exactly at the threshold", HealthHealthy, at(after), false},
		{"healthy, newest row recent", HealthHealthy, at(time.Hour), false},
		{"healthy, no row", HealthHealthy, nil, false},
		{"shortfall is its own verdict", HealthShortfall, at(100 * after), false},
		{"nothing since activation is its own verdict", HealthNothingSinceActivation, at(100 * after), false},
	} {
		if got := QuietWriter(c.status, c.newest, now, after); got != c.want {
			t.Errorf("%s: QuietWriter = %v, want %v", c.name, got, c.want)
		}
	}
}
