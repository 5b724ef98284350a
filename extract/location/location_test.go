package location

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/extract/location/locationtest"
	"github.com/kandev/kandev-extract/models"
)

// TestClassifyAndPrintableLocation: each location is classified by its
// form, printed from its parsed fields only, and nothing of a secret in it
// (marked LEAK) reaches the printable form or the error of a source that
// cannot be opened (issue 13: "Secrets").
func TestClassifyAndPrintableLocation(t *testing.T) {
	locationtest.CleanPGEnv(t)
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
				if l := locationtest.Leaks(tt.secret, PrintableLocation(tt.in)); l != nil {
					t.Errorf("PrintableLocation %q leaks %q", PrintableLocation(tt.in), l)
				}
			}
			// Sources that fail before any network access (extract.Open
			// fails as CheckSource does: TestOpenFailsAsCheckSource): the
			// error is typed, names the printable form, and holds no secret.
			if tt.kind == "unsupported" || tt.kind == "unparseable" {
				err := CheckSource(tt.in)
				if err == nil {
					t.Fatal("CheckSource = nil")
				}
				if got := errors.Is(err, ErrUnsupportedSource); got != (tt.kind == "unsupported") {
					t.Errorf("errors.Is(ErrUnsupportedSource) = %v: %v", got, err)
				}
				if got := errors.Is(err, ErrBadDSN); got != (tt.kind == "unparseable") {
					t.Errorf("errors.Is(ErrBadDSN) = %v: %v", got, err)
				}
				if !strings.Contains(err.Error(), tt.printable) {
					t.Errorf("error %q does not name the source as %q", err, tt.printable)
				}
				if tt.secret != "" {
					if l := locationtest.Leaks(tt.secret, err.Error()); l != nil {
						t.Errorf("error %q leaks %q", err, l)
					}
				}
			} else if err := CheckSource(tt.in); tt.kind == "sqlite" && err != nil {
				t.Errorf("CheckSource = %v, want nil (the path is opened later)", err)
			}
		})
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
