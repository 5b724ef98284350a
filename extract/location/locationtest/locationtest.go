// Package locationtest helps the tests of redaction (extract/location, and
// extract's opening of sources) check that no secret reaches what is
// printed.
package locationtest

import (
	"strings"
	"testing"
)

// CleanPGEnv pins the libpq environment pgx reads, so that parsing does
// not depend on the machine (PGHOST and the like, ~/.pgpass).
func CleanPGEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSERVICE", "PGSERVICEFILE",
		"PGPASSFILE", "PGSSLMODE", "PGSSLCERT", "PGSSLKEY", "PGSSLROOTCERT", "PGSSLPASSWORD", "PGCONNECT_TIMEOUT",
		"PGAPPNAME", "PGTARGETSESSIONATTRS", "PGOPTIONS"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
}

// Leaks returns the substrings of 4 bytes or more of secret (holding at
// least one letter or digit: bare punctuation such as "://" is everywhere)
// that text contains.
func Leaks(secret, text string) []string {
	var out []string
	for i := 0; i+4 <= len(secret); i++ {
		for j := i + 4; j <= len(secret); j++ {
			s := secret[i:j]
			if strings.IndexFunc(s, func(r rune) bool {
				return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
			}) < 0 {
				continue
			}
			if strings.Contains(text, s) {
				out = append(out, s)
				break
			}
		}
	}
	return out
}
