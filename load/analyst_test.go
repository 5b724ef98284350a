package load_test

import (
	"testing"

	"github.com/kandev/kandev-extract/load"
)

// TestSingleCreate: an analyst's view is carried into the next build only
// when its text is exactly one CREATE VIEW statement (singleCreate), so no
// text can smuggle a second statement into the rebuild.
func TestSingleCreate(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]bool{
		`CREATE VIEW v AS SELECT 1;`:                                 true,
		`CREATE VIEW v AS SELECT 'a;b' AS s;`:                        true,
		`CREATE VIEW v AS SELECT "we;ird" FROM t`:                    true,
		`CREATE VIEW v AS SELECT 1; DELETE FROM runs`:                false,
		"CREATE VIEW v AS SELECT 1 -- it's\n; DELETE FROM runs; --'": false,
		`CREATE VIEW v AS SELECT E'a\'b' ; 'x'`:                      false,
		`CREATE VIEW v AS SELECT $$;$$`:                              false,
		`CREATE VIEW v AS SELECT 1 /* ; */`:                          false,
		`CREATE OR REPLACE VIEW runs AS SELECT 1`:                    false,
		`CREATE TABLE t(x INT)`:                                      false, // not a view
		`CREATE VIEW v AS SELECT 'unterminated`:                      false,
	} {
		if got := load.SingleCreate(q, "CREATE VIEW"); got != want {
			t.Errorf("singleCreate(%q) = %v, want %v", q, got, want)
		}
	}
}
