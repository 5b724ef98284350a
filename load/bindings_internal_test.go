package load

import (
	"testing"

	"github.com/kandev/kandev-extract/extract/location"
)

// A binding compares PostgreSQL locations without the password marker:
// the same role on the same server and database is the same store whether
// the password is in the DSN or in PGPASSWORD; anything else still differs.
func TestBindingIgnoresWherePasswordComesFrom(t *testing.T) {
	pg := func(dsn string) SourceIdentity {
		return SourceIdentity{Dialect: "postgres", Location: location.PrintableLocation(dsn)}
	}
	inline := pg("postgres://kandev_reader:s3cret@db.example:5432/kandev?sslmode=disable")
	if inline.Location != "postgres://kandev_reader:REDACTED@db.example:5432/kandev" {
		t.Fatalf("printable location %q: the marker changed?", inline.Location)
	}
	for _, c := range []struct {
		name string
		b    SourceIdentity
		same bool
	}{
		{"the password in PGPASSWORD", pg("postgres://kandev_reader@db.example:5432/kandev"), true},
		{"a keyword DSN without the password", pg("host=db.example port=5432 user=kandev_reader dbname=kandev"), true},
		{"another password inline", pg("postgres://kandev_reader:other@db.example/kandev"), true},
		{"another role", pg("postgres://kandev_admin@db.example:5432/kandev"), false},
		{"another database", pg("postgres://kandev_reader@db.example:5432/kandev2"), false},
		{"another host", pg("postgres://kandev_reader@db2.example:5432/kandev"), false},
		{"another port", pg("postgres://kandev_reader@db.example:5433/kandev"), false},
		{"a SQLite file", SourceIdentity{Dialect: "sqlite", Location: "postgres://kandev_reader@db.example:5432/kandev"}, false},
	} {
		if got := inline.Same(c.b); got != c.same {
			t.Errorf("%s (%s): Same = %v, want %v", c.name, c.b.Location, got, c.same)
		}
		if got := c.b.Same(inline); got != c.same {
			t.Errorf("%s, the other way: Same = %v, want %v", c.name, got, c.same)
		}
	}
	// A SQLite path is compared whole, whatever it holds.
	a := SourceIdentity{Dialect: "sqlite", Location: "/srv/u:REDACTED@x/kandev.db"}
	b := SourceIdentity{Dialect: "sqlite", Location: "/srv/u@x/kandev.db"}
	if a.Same(b) {
		t.Error("two SQLite paths compared as the same store")
	}
}
