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

	"github.com/kandev/kandev-extract/models"
)

// cleanPGEnv pins the libpq environment pgx reads, so that parsing does
// not depend on the machine (PGHOST and the like, ~/.pgpass).
func cleanPGEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"PGHOST", "PGPORT", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGSERVICE", "PGSERVICEFILE",
		"PGPASSFILE", "PGSSLMODE", "PGSSLCERT", "PGSSLKEY", "PGSSLROOTCERT", "PGSSLPASSWORD", "PGCONNECT_TIMEOUT",
		"PGAPPNAME", "PGTARGETSESSIONATTRS", "PGOPTIONS"} {
		t.Setenv(k, "")
	}
	t.Setenv("HOME", t.TempDir())
}

// leaks returns the substrings of 4 bytes or more of secret (holding at
// least one letter or digit: bare punctuation such as "://" is everywhere)
// that text contains.
func leaks(secret, text string) []string {
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

// TestClassifyAndPrintableLocation: each location is classified by its
// form, printed from its parsed fields only, and nothing of a secret in it
// (marked LEAK) reaches the printable form or the error of a source that
// cannot be opened (issue 13: "Secrets").
func TestClassifyAndPrintableLocation(t *testing.T) {
	cleanPGEnv(t)
	t.Setenv("PGHOST", "pghost.test")
	// kind: the dialect, or "unsupported" (ErrUnsupportedSource) or
	// "unparseable" (a PostgreSQL DSN that cannot be read: an error, never
	// a path).
	tests := []struct {
		name, in, kind, printable string
		inline                    bool
		secret                    string // must appear nowhere
	}{
		// The cases.
		{"keyword password with &", `host=db user=u password=pw2&TAILLEAK2 dbname=k`, "postgres", "postgres://u:REDACTED@db:5432/k", true, "pw2&TAILLEAK2"},
		{"keyword password with escaped space", `host=db user=u password=pw3\ TAILLEAK3 dbname=k`, "postgres", "postgres://u:REDACTED@db:5432/k", true, "pw3 TAILLEAK3"},
		{"keyword quoted password with \\'", `host=db user=u password='pw4\'TAILLEAK4' dbname=k`, "postgres", "postgres://u:REDACTED@db:5432/k", true, "pw4'TAILLEAK4"},
		{"keyword quoted password with \\\\ and spaces", `host=db user=u password='pw5 \\ TAIL LEAK5' dbname=k`, "postgres", "postgres://u:REDACTED@db:5432/k", true, `pw5 \ TAIL LEAK5`},
		{"keyword DSN without host or dbname (PGHOST)", `user=r4 password=SECRETLEAK port=5432`, "postgres", "postgres://r4:REDACTED@pghost.test:5432", true, "SECRETLEAK"},
		{"keyword DSN starting with password", `password=FIRSTLEAK user=r4`, "postgres", "postgres://r4:REDACTED@pghost.test:5432", true, "FIRSTLEAK"},
		{"keyword DSN with spaces around =", `host = db user = u password = 'SPACED LEAK'`, "postgres", "postgres://u:REDACTED@db:5432", true, "SPACED LEAK"},
		{"mistyped scheme", `postgress://u:Hunter2LEAK@db/kandev`, "unsupported", "postgress://<not shown>", true, "Hunter2LEAK"},
		{"mysql URL", `mysql://u:MYSQLLEAK@h/db`, "unsupported", "mysql://<not shown>", true, "MYSQLLEAK"},
		{"sqlite URL", `sqlite:///srv/SQLITELEAK.db`, "unsupported", "sqlite://<not shown>", false, "SQLITELEAK"},
		{"postgres: without slashes", `postgres:u:NOSLASHLEAK@h/db`, "unsupported", "postgres://<not shown>", true, "NOSLASHLEAK"},
		{"raw @ in a URL password", `postgres://u:p@ssRAWLEAK@h/db`, "unparseable", unparseableURL, true, "ssRAWLEAK"},
		{"raw / and @ in a URL password", `postgres://u:12/cdefLEAK@h/db`, "unparseable", unparseableURL, true, "cdefLEAK"},
		{"raw @ in a query password", `postgres://h?password=sec@retLEAK`, "unparseable", unparseableURL, true, "sec@retLEAK"},
		{"raw ? in user info", `postgres://h:5432?password=QQab:cd@efLEAK/db`, "unparseable", unparseableURL, true, "QQab:cd@efLEAK"},
		// URLs.
		{"URL with password", `postgres://kandev:supersecretLEAK@db:5432/kandev`, "postgres", "postgres://kandev:REDACTED@db:5432/kandev", true, "supersecretLEAK"},
		{"URL-encoded password", `postgresql://kandev:s%40per%3A%2F%25%20%26LEAK@db/kandev?sslmode=disable`, "postgres", "postgres://kandev:REDACTED@db:5432/kandev", true, "s@per:/% &LEAK"},
		{"URL without password", `postgres://kandev@db/kandev`, "postgres", "postgres://kandev@db:5432/kandev", false, ""},
		{"upper-case scheme", `POSTGRESQL://kandev@db/kandev`, "postgres", "postgres://kandev@db:5432/kandev", false, ""},
		{"?password= query parameter", `postgres://db/kandev?password=QUERYLEAK&user=k`, "postgres", "postgres://k:REDACTED@db:5432/kandev", true, "QUERYLEAK"},
		{"encoded ?password= with & and space", `postgres://db/kandev?user=k&password=pw%26TAIL%20LEAK`, "postgres", "postgres://k:REDACTED@db:5432/kandev", true, "pw&TAIL LEAK"},
		{"?sslpassword= query parameter", `postgres://k@db/kandev?sslpassword=SSLPWLEAK&sslmode=disable`, "postgres", "postgres://k:REDACTED@db:5432/kandev", true, "SSLPWLEAK"},
		{"upper-case query key", `postgres://k@db/kandev?PASSWORD=UPQLEAK`, "unparseable", unparseableURL, true, "UPQLEAK"},
		{"multiple hosts in a URL", `postgres://u:MULTILEAK@h1:5433,h2/kandev`, "postgres", "postgres://u:REDACTED@h1:5433,h2:5432/kandev", true, "MULTILEAK"},
		{"IPv6 host", `postgres://u@[::1]:5433/kandev`, "postgres", "postgres://u@[::1]:5433/kandev", false, ""},
		{"unknown parameters are not shown", `postgres://u@db/kandev?application_name=APPLEAK&options=-csearch_path%3DOPTLEAK`, "postgres", "postgres://u@db:5432/kandev", false, "APPLEAK"},
		{"bad percent-encoding", `postgres://u:%zzBADPCTLEAK@db/kandev`, "unparseable", unparseableURL, true, "BADPCTLEAK"},
		{"bad port", `postgres://u:PORTLEAK@db:PORTX/kandev`, "unparseable", unparseableURL, true, "PORTLEAK"},
		{"raw @ in a parameter", `postgres://u@db/kandev?application_name=me@example.com`, "unparseable", unparseableURL, false, ""},
		{"raw / in a password, then a query", `postgres://u:1234/cdef?e=QLEAKQ@h/db`, "unparseable", unparseableURL, true, "QLEAKQ"},
		// Keyword/value DSNs.
		{"keyword multiple hosts", `host=h1,h2 port=5433,5434 user=u dbname=k password=KVMULTILEAK`, "postgres", "postgres://u:REDACTED@h1:5433,h2:5434/k", true, "KVMULTILEAK"},
		{"keyword Unix socket", `host=/var/run/postgresql user=u dbname=k`, "postgres", "postgres://u@%2Fvar%2Frun%2Fpostgresql:5432/k", false, ""},
		{"passfile and sslkey are not shown", `host=db user=u dbname=k passfile=/secret/PASSFILELEAK sslkey=/keys/SSLKEYLEAK.key sslmode=disable`, "postgres", "postgres://u@db:5432/k", false, "PASSFILELEAK"},
		{"sslpassword keyword", `host=db user=u dbname=k sslpassword='SSL KEY LEAK' sslmode=disable`, "postgres", "postgres://u:REDACTED@db:5432/k", true, "SSL KEY LEAK"},
		{"unknown keyword values are not shown", `host=db user=u dbname=k application_name=APPKVLEAK`, "postgres", "postgres://u@db:5432/k", false, "APPKVLEAK"},
		{"upper-case PASSWORD keyword", `host=db user=u PASSWORD=UPPERLEAK dbname=k`, "unparseable", unparseableKV, true, "UPPERLEAK"},
		{"upper-case HOST keyword", `HOST=db user=u password=XUPLEAKX`, "unparseable", unparseableKV, true, "XUPLEAKX"},
		{"missing sslrootcert", `host=db user=u password=CERTPWLEAK sslmode=verify-full sslrootcert=/nonexistent/ca.pem`, "unparseable", unparseableKV, true, "CERTPWLEAK"},
		{"unterminated quote", `host=db user=u password='UNTERMLEAK`, "unparseable", unparseableKV, true, "UNTERMLEAK"},
		{"unquoted space in a password", `host=db user=u password=half SPACELEAK`, "unparseable", unparseableKV, true, "SPACELEAK"},
		{"trailing backslash", `host=db user=u password=TRAILBSLEAK\`, "postgres", "postgres://u:REDACTED@db:5432", true, "TRAILBSLEAK"},
		// SQLite paths and file: URLs.
		{"SQLite path", "/home/u/.kandev/data/kandev.db", "sqlite", "/home/u/.kandev/data/kandev.db", false, ""},
		{"relative SQLite path", "kandev.db", "sqlite", "kandev.db", false, ""},
		{"home SQLite path", "~/x.db", "sqlite", "~/x.db", false, ""},
		{"a colon in a file name", "a:b.db", "sqlite", "a:b.db", false, ""},
		{"DSN without a scheme", "u:Hunter2PATHLEAK@db/kandev", "sqlite", "u:REDACTED@db/kandev", true, "Hunter2PATHLEAK"},
		{"password= inside a path", "/srv/x password=PATHPWLEAK and more", "sqlite", "/srv/x password=REDACTED", true, "PATHPWLEAK"},
		{"file:/// URL", "file:///srv/kandev.db", "sqlite", "/srv/kandev.db", false, ""},
		{"file: relative URL", "file:kandev%20copy.db", "sqlite", "kandev copy.db", false, ""},
		{"file: URL with a query", "file:/srv/kandev.db?mode=rwc", "unsupported", "file:<not shown>", false, ""},
		{"file: URL with a host", "file://u:FILEHOSTLEAK@nas/srv/kandev.db", "unsupported", "file:<not shown>", true, "FILEHOSTLEAK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dialect, err := Classify(tt.in)
			switch tt.kind {
			case "unsupported":
				if !errors.Is(err, ErrUnsupportedSource) {
					t.Errorf("Classify = %q, %v; want ErrUnsupportedSource", dialect, err)
				}
			case "unparseable":
				if err != nil || dialect != models.DialectPostgres {
					t.Errorf("Classify = %q, %v; want postgres", dialect, err)
				}
			default:
				if err != nil || string(dialect) != tt.kind {
					t.Errorf("Classify = %q, %v; want %s", dialect, err, tt.kind)
				}
			}
			if got := PrintableLocation(tt.in); got != tt.printable {
				t.Errorf("PrintableLocation = %q, want %q", got, tt.printable)
			}
			if got := RedactDSN(tt.in); got != tt.printable {
				t.Errorf("RedactDSN = %q, want %q", got, tt.printable)
			}
			if got := InlinePassword(tt.in); got != tt.inline {
				t.Errorf("InlinePassword = %v, want %v", got, tt.inline)
			}
			if got := IsPostgres(tt.in); got != (tt.kind == "postgres" || tt.kind == "unparseable") {
				t.Errorf("IsPostgres = %v", got)
			}
			if err := CheckSource(tt.in); tt.kind == "postgres" && err != nil {
				t.Errorf("CheckSource = %v", err)
			}
			if tt.secret != "" {
				if l := leaks(tt.secret, PrintableLocation(tt.in)); l != nil {
					t.Errorf("PrintableLocation %q leaks %q", PrintableLocation(tt.in), l)
				}
			}
			// Sources that fail before any network access: the error is
			// typed, names the printable form, and holds no secret.
			if tt.kind == "unsupported" || tt.kind == "unparseable" || tt.kind == "sqlite" {
				_, err := Open(context.Background(), tt.in)
				if err == nil {
					t.Fatal("Open succeeded")
				}
				if got := errors.Is(err, ErrUnsupportedSource); got != (tt.kind == "unsupported") {
					t.Errorf("errors.Is(ErrUnsupportedSource) = %v: %v", got, err)
				}
				if got := errors.Is(err, ErrBadDSN); got != (tt.kind == "unparseable") {
					t.Errorf("errors.Is(ErrBadDSN) = %v: %v", got, err)
				}
				// CheckSource refuses the same, without opening anything.
				check := CheckSource(tt.in)
				if tt.kind == "sqlite" {
					if check != nil {
						t.Errorf("CheckSource = %v, want nil (the path is opened later)", check)
					}
				} else if check == nil || check.Error() != err.Error() {
					t.Errorf("CheckSource = %v, want %v", check, err)
				}
				shown := tt.printable
				if tt.kind == "sqlite" {
					shown = absOrSame(ExpandHome(tt.printable))
				}
				if !strings.Contains(err.Error(), shown) {
					t.Errorf("error %q does not name the source as %q", err, shown)
				}
				if tt.secret != "" {
					if l := leaks(tt.secret, err.Error()); l != nil {
						t.Errorf("error %q leaks %q", err, l)
					}
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
		if l := leaks("Hunter2MaskLEAK", text); l != nil {
			t.Errorf("%s %q leaks %q", what, text, l)
		}
	}
	if !InlinePassword(p) {
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
	cleanPGEnv(t)
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
			loc := PrintableLocation(dsn)
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
			if l := leaks(pw, text); l != nil {
				t.Errorf("#%d %s: password %q leaks %q in:\n%s", i, form, pw, l, text)
			}
			if !InlinePassword(dsn) {
				t.Errorf("#%d %s: InlinePassword = false for %q", i, form, pw)
			}
		}
	}
}

func TestWindowsPathForms(t *testing.T) {
	if got, err := fileURLPath("file:///C:/Users/me/kandev.db"); err != nil || got != "C:/Users/me/kandev.db" {
		t.Errorf("file:///C:/… = %q, %v", got, err)
	}
	if got, err := fileURLPath("file:///home/me/kandev.db"); err != nil || got != "/home/me/kandev.db" {
		t.Errorf("file:///home/… = %q, %v", got, err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	if got := ExpandHome(`~\.kandev\data\kandev.db`); !strings.HasPrefix(got, home) {
		t.Errorf(`ExpandHome(~\…) = %q`, got)
	}
}
