package extract

import (
	"strings"
	"testing"
)

func TestRedactDSN(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://kandev:supersecret@db:5432/kandev", "postgres://kandev:REDACTED@db:5432/kandev"},
		{"postgresql://kandev:s%40per@db/kandev?sslmode=disable", "postgresql://kandev:REDACTED@db/kandev?sslmode=disable"},
		{"postgres://kandev@db/kandev", "postgres://kandev@db/kandev"},
		{"host=db user=kandev password=supersecret dbname=kandev", "host=db user=kandev password=REDACTED dbname=kandev"},
		{"host=db password='super secret' dbname=kandev", "host=db password=REDACTED dbname=kandev"},
		{"postgres://db/kandev?password=supersecret&user=k", "postgres://db/kandev?password=REDACTED&user=k"},
	}
	for _, tt := range tests {
		got := RedactDSN(tt.in)
		if got != tt.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "supersecret") || strings.Contains(got, "super secret") {
			t.Errorf("password leaked: %q", got)
		}
	}
}

func TestIsPostgres(t *testing.T) {
	for s, want := range map[string]bool{
		"postgres://h/db": true, "POSTGRESQL://h/db": true, "host=h dbname=d": true,
		"/home/u/.kandev/data/kandev.db": false, "kandev.db": false, "~/x.db": false,
	} {
		if got := IsPostgres(s); got != want {
			t.Errorf("IsPostgres(%q) = %v", s, got)
		}
	}
}
