package extract

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/extract/location"
	"github.com/kandev/kandev-extract/extract/location/locationtest"
	"github.com/kandev/kandev-extract/models"
)

// TestOpenFailsAsCheckSource: a source that fails before any network
// access fails in Open as location.CheckSource says (the same typed error,
// which names the printable form and holds no secret: the location
// package's TestClassifyAndPrintableLocation), and a SQLite path that is
// no store fails naming the path as printed, absolute, with nothing of a
// secret in it.
func TestOpenFailsAsCheckSource(t *testing.T) {
	locationtest.CleanPGEnv(t)
	t.Setenv("PGHOST", "pghost.test")
	tests := []struct{ in, secret string }{
		{`postgress://u:Hunter2LEAK@db/kandev`, "Hunter2LEAK"},
		{`mysql://u:MYSQLLEAK@h/db`, "MYSQLLEAK"},
		{`sqlite:///srv/SQLITELEAK.db`, "SQLITELEAK"},
		{`postgres:u:NOSLASHLEAK@h/db`, "NOSLASHLEAK"},
		{`postgres://u:p@ssRAWLEAK@h/db`, "ssRAWLEAK"},
		{`postgres://u:12/cdefLEAK@h/db`, "cdefLEAK"},
		{`postgres://h?password=sec@retLEAK`, "sec@retLEAK"},
		{`postgres://h:5432?password=QQab:cd@efLEAK/db`, "QQab:cd@efLEAK"},
		{`postgres://k@db/kandev?PASSWORD=UPQLEAK`, "UPQLEAK"},
		{`postgres://u:%zzBADPCTLEAK@db/kandev`, "BADPCTLEAK"},
		{`postgres://u:PORTLEAK@db:PORTX/kandev`, "PORTLEAK"},
		{`postgres://u@db/kandev?application_name=me@example.com`, ""},
		{`postgres://u:1234/cdef?e=QLEAKQ@h/db`, "QLEAKQ"},
		{`host=db user=u PASSWORD=UPPERLEAK dbname=k`, "UPPERLEAK"},
		{`HOST=db user=u password=XUPLEAKX`, "XUPLEAKX"},
		{`host=db user=u password=CERTPWLEAK sslmode=verify-full sslrootcert=/nonexistent/ca.pem`, "CERTPWLEAK"},
		{`host=db user=u password='UNTERMLEAK`, "UNTERMLEAK"},
		{`host=db user=u password=half SPACELEAK`, "SPACELEAK"},
		{"/home/u/.kandev/data/kandev.db", ""},
		{"kandev.db", ""},
		{"~/x.db", ""},
		{"a:b.db", ""},
		{"u:Hunter2PATHLEAK@db/kandev", "Hunter2PATHLEAK"},
		{"/srv/x password=PATHPWLEAK and more", "PATHPWLEAK"},
		{"file:///srv/kandev.db", ""},
		{"file:kandev%20copy.db", ""},
		{"file:/srv/kandev.db?mode=rwc", ""},
		{"file://u:FILEHOSTLEAK@nas/srv/kandev.db", "FILEHOSTLEAK"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Open(context.Background(), tt.in)
			if err == nil {
				t.Fatal("Open succeeded")
			}
			check := location.CheckSource(tt.in)
			if check != nil {
				if check.Error() != err.Error() {
					t.Errorf("Open: %v, want CheckSource's %v", err, check)
				}
				for _, kind := range []error{location.ErrUnsupportedSource, location.ErrBadDSN} {
					if errors.Is(err, kind) != errors.Is(check, kind) {
						t.Errorf("errors.Is(%v) = %v, CheckSource's %v", kind, errors.Is(err, kind), errors.Is(check, kind))
					}
				}
			} else if shown := absOrSame(location.ExpandHome(location.PrintableLocation(tt.in))); !strings.Contains(err.Error(), shown) {
				t.Errorf("error %q does not name the source as %q", err, shown)
			}
			if tt.secret != "" {
				if l := locationtest.Leaks(tt.secret, err.Error()); l != nil {
					t.Errorf("error %q leaks %q", err, l)
				}
			}
		})
	}
}

func absOrSame(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// TestCredentialLookingSQLitePath: a SQLite file whose path looks like it
// holds credentials is still read, but its Location and every error of its
// snapshot show the path masked.
func TestCredentialLookingSQLitePath(t *testing.T) {
	store := newStore(t, `CREATE TABLE kandev_meta (key TEXT PRIMARY KEY, val TEXT)`)
	dir := filepath.Join(t.TempDir(), "u:Hunter2MaskLEAK@db")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "kandev.db")
	b, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(what, text string) {
		t.Helper()
		if l := locationtest.Leaks("Hunter2MaskLEAK", text); l != nil {
			t.Errorf("%s %q leaks %q", what, text, l)
		}
	}
	if !location.InlinePassword(p) {
		t.Error("InlinePassword = false for a credential-looking path")
	}
	src, err := Open(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Dialect() != models.DialectSQLite || !strings.Contains(src.Location(), "u:REDACTED@db/kandev.db") {
		t.Errorf("source %s %q", src.Dialect(), src.Location())
	}
	check("Location", src.Location())
	snap, err := src.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	_, err = snap.Meta(context.Background())
	var mc *models.MissingColumnError
	if !errors.As(err, &mc) || mc.Source != src.Location() {
		t.Errorf("Meta: %v, want a MissingColumnError naming %q", err, src.Location())
	}
	check("Meta error", err.Error())
	err = snap.Scan(context.Background(), models.TableSpec{Name: "nope", Columns: []models.ColumnSpec{{Name: "id", Required: true}}}, func([]any) error { return nil })
	if err == nil {
		t.Fatal("Scan of a missing table succeeded")
	}
	check("Scan error", err.Error())
	// Not a SQLite file, at a credential-looking path.
	bad := filepath.Join(dir, "text.db")
	if err := os.WriteFile(bad, []byte("hello, this is not SQLite at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "not a SQLite database") || !strings.Contains(err.Error(), "u:REDACTED@db/text.db") {
		t.Errorf("not a SQLite file: %v", err)
	}
	check("not-SQLite error", err.Error())
}

// closedPort is a TCP port on 127.0.0.1 that refuses connections.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// TestRandomPasswordsNeverLeak: for random passwords made of letters and
// the characters that break naive redaction (space & ' \ @ : / % ? # = ,),
// embedded in every way an operator might write them — properly encoded
// or quoted, or raw — no 4-byte piece of the password is in Location()
// (PrintableLocation) or in the error extract.Open returns (parse errors,
// unsupported schemes, a refused connection).
func TestRandomPasswordsNeverLeak(t *testing.T) {
	locationtest.CleanPGEnv(t)
	port := strconv.Itoa(closedPort(t))
	const letters = "QXZJqxzj"
	const specials = " &'\\@:/%?#=,;\""
	rng := rand.New(rand.NewPCG(13, 2026))
	kvQuoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	kvEscaped := strings.NewReplacer(`\`, `\\`, `'`, `\'`, " ", `\ `)
	iterations := 150
	if testing.Short() {
		iterations = 30
	}
	for i := range iterations {
		n := 6 + rng.IntN(18)
		b := make([]byte, n)
		for j := range b {
			if j%3 == 0 || rng.IntN(2) == 0 {
				b[j] = letters[rng.IntN(len(letters))]
			} else {
				b[j] = specials[rng.IntN(len(specials))]
			}
		}
		pw := string(b)
		forms := map[string]string{
			"URL, encoded":          "postgres://reader:" + url.UserPassword("r", pw).String()[2:] + "@127.0.0.1:" + port + "/kandev?sslmode=disable",
			"URL, raw":              "postgres://reader:" + pw + "@127.0.0.1:" + port + "/kandev?sslmode=disable",
			"URL query, encoded":    "postgresql://reader@127.0.0.1:" + port + "/kandev?sslmode=disable&password=" + url.QueryEscape(pw),
			"URL query, raw":        "postgresql://reader@127.0.0.1:" + port + "/kandev?sslmode=disable&password=" + pw,
			"keyword, quoted":       "host=127.0.0.1 port=" + port + " user=reader password='" + kvQuoted.Replace(pw) + "' dbname=kandev sslmode=disable",
			"keyword, escaped":      "password=" + kvEscaped.Replace(pw) + " host=127.0.0.1 port=" + port + " user=reader dbname=kandev sslmode=disable",
			"keyword, raw":          "host=127.0.0.1 port=" + port + " user=reader password=" + pw + " dbname=kandev sslmode=disable",
			"keyword, raw quoted":   "host=127.0.0.1 port=" + port + " user=reader password='" + pw + "' dbname=kandev sslmode=disable",
			"no scheme":             "reader:" + pw + "@127.0.0.1/kandev",
			"mistyped scheme":       "postgress://reader:" + pw + "@127.0.0.1:" + port + "/kandev",
			"keyword, upper PASSWD": "host=127.0.0.1 port=" + port + " user=reader PASSWORD='" + kvQuoted.Replace(pw) + "'",
		}
		for form, dsn := range forms {
			loc := location.PrintableLocation(dsn)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			src, err := OpenWith(ctx, dsn, OpenOptions{ConnectTimeout: 3 * time.Second})
			cancel()
			text := loc
			if err != nil {
				text += "\n" + err.Error()
			} else {
				text += "\n" + src.Location()
				src.Close()
			}
			if l := locationtest.Leaks(pw, text); l != nil {
				t.Errorf("#%d %s: password %q leaks %q in:\n%s", i, form, pw, l, text)
			}
			if !location.InlinePassword(dsn) {
				t.Errorf("#%d %s: InlinePassword = false for %q", i, form, pw)
			}
		}
	}
}
