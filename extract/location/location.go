// Package location reads the locations kandev-extract is given (--source,
// source_env): it tells a PostgreSQL URL or keyword/value DSN from a SQLite
// path or file: URL, parses a DSN as libpq does, and redacts: the printable
// form of a location, and of the errors about it, never holds a password.
// It opens nothing; extract opens the store a location names.
package location

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kandev/kandev-extract/models"
)

// ErrUnsupportedSource is wrapped by the error for a source that is a URL
// whose scheme kandev-extract does not read (mysql://, a mistyped
// postgress://, ...), or a malformed postgres: or file: URL. It is a usage
// error. The error names the scheme and never the rest of the text.
var ErrUnsupportedSource = errors.New("unsupported source")

// ErrBadDSN is wrapped by the error for a PostgreSQL URL or keyword/value
// DSN that cannot be read unambiguously (bad quoting or percent-encoding,
// a raw '@' in a URL's password, an upper-case keyword, a file it names
// missing). It is a usage error; the error never quotes the DSN.
var ErrBadDSN = errors.New("unreadable PostgreSQL DSN")

// Classification and printable locations.
//
// A location is never masked by pattern: a PostgreSQL DSN is parsed (by pgx,
// like libpq) and its printable form is built from the parsed user, hosts,
// ports and database only; a DSN that cannot be parsed, or parses
// ambiguously, prints as its scheme and nothing more. Only SQLite paths,
// which carry no secret by design, are printed as given, with anything that
// looks like credentials masked.

// Printable forms of locations that cannot be shown.
const (
	redactedMark      = "REDACTED"
	unparseableURL    = "postgres://<unparseable URL>"
	unparseableKV     = "postgres (keyword/value DSN) <unparseable>"
	notShownLocation  = "<source not shown>"
	maxSchemeShown    = 32
	postgresURLHint   = "the DSN is not shown, as it may hold a password. In a URL, percent-encode special characters in the user name, password and parameters (@ as %40, : as %3A, / as %2F, ? as %3F, # as %23, % as %25, space as %20)"
	postgresKVHint    = "the DSN is not shown, as it may hold a password. In keyword/value form, put a value with spaces or quotes in single quotes, with \\' and \\\\ inside"
	postgresNoPwHint  = ". Better: leave the password out and use PGPASSWORD, ~/.pgpass or source_env (docs/postgres.md)"
	postgresURLPrefix = "postgres://"
)

var (
	urlScheme  = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.\-]*):`)
	keywordDSN = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*[ \t\n\r\v\f]*=`)
	// pathPassword is a password setting inside text read as a path: masked
	// from its value to the end of the text.
	pathPassword = regexp.MustCompile(`(?i)(?:ssl)?pass(?:word|wd)?[ \t]*[=:]|pwd[ \t]*=`)
)

// classified is a location sorted by Classify.
type classified struct {
	dialect models.Dialect
	dsn     string // PostgreSQL: trimmed, the URL scheme in lower case
	isURL   bool   // PostgreSQL: URL form (else keyword/value)
	path    string // SQLite
}

// sourceError is an error about a location that prints it as shown.
type sourceError struct {
	shown, msg string
	kind       error // ErrUnsupportedSource, ErrBadDSN, or nil
}

func (e *sourceError) Error() string { return "source " + e.shown + ": " + e.msg }
func (e *sourceError) Unwrap() error { return e.kind }

func classify(location string) (classified, error) {
	loc := strings.TrimSpace(location)
	if loc == "" {
		return classified{}, errors.New("no source given")
	}
	if m := urlScheme.FindStringSubmatch(loc); m != nil {
		scheme := strings.ToLower(m[1])
		rest := loc[len(m[0]):]
		slashes := strings.HasPrefix(rest, "//")
		switch {
		case scheme == "postgres" || scheme == "postgresql":
			if !slashes {
				return classified{}, unsupportedError(scheme, "a PostgreSQL URL begins with "+scheme+":// (two slashes)")
			}
			return classified{dialect: models.DialectPostgres, dsn: scheme + ":" + rest, isURL: true}, nil
		case scheme == "file":
			p, err := fileURLPath(loc)
			if err != nil {
				return classified{}, err
			}
			return classified{dialect: models.DialectSQLite, path: p}, nil
		case slashes:
			return classified{}, unsupported(scheme, schemeHint(scheme))
		}
		// a:b.db is a file name, not a URL.
	}
	if keywordDSN.MatchString(loc) {
		return classified{dialect: models.DialectPostgres, dsn: loc}, nil
	}
	return classified{dialect: models.DialectSQLite, path: location}, nil
}

func shownScheme(scheme string) string {
	if len(scheme) > maxSchemeShown {
		return notShownLocation
	}
	return scheme + "://<not shown>"
}

func unsupported(scheme, hint string) error {
	name := strconv.Quote(scheme)
	if len(scheme) > maxSchemeShown {
		name = "of this URL"
	}
	return unsupportedError(scheme, "the URL scheme "+name+" is not one kandev-extract reads ("+hint+
		"). A PostgreSQL source is postgres://… or postgresql://…, or libpq keyword/value pairs (host=… dbname=…); a SQLite source is a file path")
}

func unsupportedError(scheme, why string) error {
	return &sourceError{shown: shownScheme(scheme), kind: ErrUnsupportedSource,
		msg: ErrUnsupportedSource.Error() + ": " + why + ". The rest of the text is not shown: it may hold a password"}
}

func schemeHint(scheme string) string {
	switch {
	case scheme == "pg" || scheme == "pgsql" || scheme == "psql" || strings.HasPrefix(scheme, "postg") || strings.HasPrefix(scheme, "potsg"):
		return "did you mean postgres://?"
	case strings.HasPrefix(scheme, "sqlite"):
		return "for SQLite give the file's path, or file:PATH"
	}
	return "only PostgreSQL and SQLite stores are"
}

// fileURLPath is the path a file: URL names. A query (SQLite URI
// parameters such as mode=rwc) is refused: the file is always opened
// read-only, with kandev-extract's own parameters.
func fileURLPath(loc string) (string, error) {
	fail := func(why string) (string, error) {
		return "", &sourceError{shown: "file:<not shown>", kind: ErrUnsupportedSource,
			msg: ErrUnsupportedSource.Error() + ": " + why + "; give the SQLite file's path (or file:PATH, file:///PATH)"}
	}
	u, err := url.Parse(loc)
	switch {
	case err != nil:
		return fail("the file: URL cannot be parsed")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fail("a file: URL with a query or fragment is not supported (the store is always opened read-only)")
	case u.User != nil || (u.Host != "" && !strings.EqualFold(u.Host, "localhost")):
		return fail("a file: URL naming a host is not supported")
	case u.Opaque != "":
		p, err := url.PathUnescape(u.Opaque)
		if err != nil {
			return fail("the file: URL's path is not validly percent-encoded")
		}
		return p, nil
	case u.Path == "":
		return fail("the file: URL has no path")
	}
	// file:///C:/x.db names C:/x.db (a Windows drive), not /C:/x.db.
	if len(u.Path) >= 3 && u.Path[0] == '/' && u.Path[2] == ':' && ('A' <= u.Path[1]&^0x20 && u.Path[1]&^0x20 <= 'Z') {
		return u.Path[1:], nil
	}
	return u.Path, nil
}

// PrintableLocation is a location as kandev-extract prints and stores it
// (logs, errors, provenance, manifests, the runs table):
//
//   - PostgreSQL: postgres://USER[:REDACTED]@HOST:PORT[,HOST:PORT…][/DB],
//     built from the parsed DSN (environment variables such as PGHOST
//     included). It never holds the password (":REDACTED" only says one was
//     given inline) nor any other parameter; a DSN that cannot be parsed
//     unambiguously prints as "postgres://<unparseable URL>" or
//     "postgres (keyword/value DSN) <unparseable>".
//   - an unsupported URL: its scheme only ("mysql://<not shown>").
//   - a SQLite path: the path, with anything that looks like credentials
//     masked (USER:REDACTED@…, password=REDACTED to the end).
func PrintableLocation(location string) string {
	c, err := classify(location)
	if err != nil {
		var se *sourceError
		if errors.As(err, &se) {
			return se.shown
		}
		return notShownLocation
	}
	if c.dialect == models.DialectPostgres {
		_, shown, _ := parsePostgres(c.dsn, c.isURL)
		return shown
	}
	return printablePath(c.path)
}

// RedactDSN is PrintableLocation.
//
// Deprecated: use PrintableLocation.
func RedactDSN(dsn string) string { return PrintableLocation(dsn) }

// InlinePassword reports whether a location carries a password in its own
// text — a URL's user-info password, a password or sslpassword keyword
// (any case) or query parameter, or what looks like one in a path — and
// so is visible to other users of the machine in ps, /proc and shell
// history. A password from PGPASSWORD, ~/.pgpass or a service file is not
// inline.
func InlinePassword(location string) bool {
	loc := strings.TrimSpace(location)
	if m := urlScheme.FindStringSubmatch(loc); m != nil && strings.HasPrefix(loc[len(m[0]):], "//") {
		rest := loc[len(m[0])+2:]
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			if _, pw, ok := strings.Cut(rest[:i], ":"); ok && pw != "" {
				return true
			}
		}
		// Read the other way (the last '@' ends the user info), a raw '@'
		// or '/' in a password still counts.
		if at := strings.LastIndexByte(rest, '@'); at >= 0 && strings.Contains(rest[:at], ":") && urlAmbiguity(rest) != "" {
			return true
		}
		if _, query, ok := strings.Cut(rest, "?"); ok {
			for _, pair := range strings.Split(query, "&") {
				key, _, _ := strings.Cut(pair, "=")
				if k, err := url.PathUnescape(strings.TrimSpace(key)); err == nil {
					key = k
				}
				if isPasswordKey(key) {
					return true
				}
			}
		}
		return false
	}
	if keywordDSN.MatchString(loc) {
		pairs, err := kvPairs(loc)
		if err != nil {
			return pathPassword.MatchString(loc)
		}
		for _, p := range pairs {
			if isPasswordKey(p.key) && p.val != "" {
				return true
			}
		}
		return false
	}
	return printablePath(loc) != loc
}

func isPasswordKey(k string) bool {
	k = strings.ToLower(k)
	return k == "password" || k == "sslpassword"
}

// printablePath masks what looks like credentials in text read as a path:
// a password setting to the end of the text, and USER:SECRET@ (from the
// first ':' to the last '@').
func printablePath(p string) string {
	if m := pathPassword.FindStringIndex(p); m != nil {
		p = p[:m[1]] + redactedMark
	}
	if at := strings.LastIndexByte(p, '@'); at > 0 {
		if c := strings.IndexByte(p[:at], ':'); c >= 0 {
			p = p[:c+1] + redactedMark + p[at:]
		}
	}
	return p
}

// parsePostgres parses a PostgreSQL DSN with pgx (libpq's syntax, the
// environment included) and returns its config and printable form. Its
// error names the DSN only as that form and never quotes the DSN.
func parsePostgres(dsn string, isURL bool) (*pgx.ConnConfig, string, error) {
	shown, hint := unparseableKV, postgresKVHint
	if isURL {
		shown, hint = unparseableURL, postgresURLHint
	}
	fail := func(why string) (*pgx.ConnConfig, string, error) {
		return nil, shown, &sourceError{shown: shown, kind: ErrBadDSN, msg: ErrBadDSN.Error() + ": " + why + "; " + hint + postgresNoPwHint}
	}
	failCase := func(why string) (*pgx.ConnConfig, string, error) {
		return nil, shown, &sourceError{shown: shown, kind: ErrBadDSN, msg: ErrBadDSN.Error() + ": " + why + "; the DSN is not shown, as it may hold a password"}
	}
	var keys []string
	if isURL {
		rest := dsn[strings.Index(dsn, "://")+3:]
		if why := urlAmbiguity(rest); why != "" {
			return fail(why)
		}
		if _, query, ok := strings.Cut(rest, "?"); ok {
			for _, pair := range strings.Split(query, "&") {
				key, _, _ := strings.Cut(pair, "=")
				if k, err := url.PathUnescape(strings.TrimSpace(key)); err == nil {
					keys = append(keys, k)
				}
			}
		}
	} else {
		pairs, err := kvPairs(dsn)
		if err != nil {
			return fail(err.Error())
		}
		for _, p := range pairs {
			keys = append(keys, p.key)
		}
	}
	// libpq's keywords are case-sensitive, and pgx would send PASSWORD=…
	// to the server as a setting: refuse it, naming the keyword only.
	for _, k := range keys {
		if l := strings.ToLower(k); l != k && libpqKeywords[l] {
			return failCase(fmt.Sprintf("the keyword %q must be written in lower case (%q): libpq keywords are case-sensitive", k, l))
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's text quotes (a best-effort redaction of) the DSN: never
		// shown. Only a cause that holds no part of it is named.
		return fail(parseCause(err))
	}
	for _, h := range append([]*pgconn.FallbackConfig{{Host: cfg.Host}}, cfg.Fallbacks...) {
		if strings.ContainsAny(h.Host, "@ \t\r\n") {
			return fail("a host name holds '@' or a space, so the text was read ambiguously")
		}
	}
	return cfg, printableConfig(&cfg.Config, InlinePassword(dsn)), nil
}

// parseCause names why pgx refused a DSN without quoting any of it.
func parseCause(err error) string {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		return "a file it names (sslrootcert, sslcert, sslkey or a service file) cannot be read: " + pathErr.Err.Error()
	}
	return "it is not a valid libpq URL or keyword/value string (check its quoting and percent-encoding, its port, and its keywords' values)"
}

// urlAmbiguity says why a URL's text after "scheme://" cannot be read one
// way only, or "". libpq and pgx end the user info at the first '@' before
// any '/', so a raw '@', '/', '?' or '#' in a password moves part of it into
// the host, port, database or query, where a printed form would show it. A
// URL may hold one raw '@' only: the one that ends its user info.
func urlAmbiguity(rest string) string {
	at := strings.IndexByte(rest, '@')
	switch {
	case at < 0:
		return ""
	case strings.Count(rest, "@") > 1:
		return "it holds more than one raw '@' (a raw '@' in the password, or in a parameter?)"
	case strings.IndexAny(rest, "@/") != at:
		return "it holds a raw '@' after a '/' (a raw '/' in the password, or a raw '@' in the database name or a parameter?)"
	case strings.ContainsAny(rest[:at], "?#"):
		return "its user name or password holds a raw '?' or '#'"
	}
	return ""
}

// printableConfig is postgres://USER[:REDACTED]@HOST:PORT,…[/DB] from a
// parsed config; nothing else of the DSN.
func printableConfig(cfg *pgconn.Config, inline bool) string {
	var b strings.Builder
	b.WriteString(postgresURLPrefix)
	if cfg.User != "" || inline {
		b.WriteString(url.User(cfg.User).String())
		if inline {
			b.WriteString(":" + redactedMark)
		}
		b.WriteByte('@')
	}
	seen := map[string]bool{}
	var hosts []string
	add := func(host string, port uint16) {
		h := url.PathEscape(host)
		if strings.Contains(host, ":") && !strings.HasPrefix(host, "/") {
			h = "[" + host + "]" // IPv6
		}
		h += ":" + strconv.Itoa(int(port))
		if !seen[h] {
			seen[h] = true
			hosts = append(hosts, h)
		}
	}
	add(cfg.Host, cfg.Port)
	for _, f := range cfg.Fallbacks {
		add(f.Host, f.Port)
	}
	b.WriteString(strings.Join(hosts, ","))
	if cfg.Database != "" {
		b.WriteString("/" + url.PathEscape(cfg.Database))
	}
	return b.String()
}

// libpqKeywords are libpq's connection keywords (and pgx's database).
var libpqKeywords = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`host hostaddr port dbname database user password passfile require_auth
		channel_binding connect_timeout client_encoding options application_name fallback_application_name
		keepalives keepalives_idle keepalives_interval keepalives_count tcp_user_timeout replication gssencmode
		sslmode sslnegotiation sslcompression sslcert sslkey sslpassword sslcertmode sslrootcert sslcrl sslcrldir
		sslsni requirepeer ssl_min_protocol_version ssl_max_protocol_version min_protocol_version
		max_protocol_version krbsrvname gsslib gssdelegation service servicefile target_session_attrs
		load_balance_hosts`) {
		libpqKeywords[k] = true
	}
}

type kvPair struct{ key, val string }

// kvPairs splits a libpq keyword/value string as libpq and pgx do
// (values unquoted with backslash escapes, or in single quotes with \' and
// \\). Its errors hold byte offsets, never the text.
func kvPairs(s string) ([]kvPair, error) {
	const spaces = " \t\n\r\v\f"
	var out []kvPair
	n := len(s)
	s = strings.TrimLeft(s, spaces)
	for len(s) > 0 {
		at := n - len(s)
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return nil, fmt.Errorf("the text at byte %d is not keyword=value", at)
		}
		key := strings.Trim(s[:eq], spaces)
		if key == "" || strings.ContainsAny(key, spaces) {
			return nil, fmt.Errorf("the text at byte %d is not keyword=value (a value with spaces must be quoted)", at)
		}
		s = strings.TrimLeft(s[eq+1:], spaces)
		var val strings.Builder
		switch {
		case s == "":
		case s[0] != '\'':
			i := 0
			for ; i < len(s) && !strings.ContainsRune(spaces, rune(s[i])); i++ {
				if s[i] == '\\' {
					i++
					if i == len(s) {
						break
					}
				}
				val.WriteByte(s[i])
			}
			s = strings.TrimLeft(s[min(i, len(s)):], spaces)
		default:
			i := 1
			for ; i < len(s) && s[i] != '\''; i++ {
				if s[i] == '\\' {
					i++
					if i == len(s) {
						break
					}
				}
				val.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("the quoted value of keyword %d is not terminated", len(out)+1)
			}
			s = strings.TrimLeft(s[i+1:], spaces)
		}
		out = append(out, kvPair{key: key, val: val.String()})
	}
	return out, nil
}

// Classify tells which kind of store a location names, without opening it:
//
//   - scheme://… is a URL: postgres:// and postgresql:// (any case) are
//     PostgreSQL; file: (file:PATH, file:///PATH, file://localhost/PATH,
//     no query) names a SQLite file; any other scheme is an error wrapping
//     ErrUnsupportedSource that names only the scheme. So are postgres: or
//     postgresql: without the two slashes.
//   - text whose first token is word= (host=db dbname=kandev, or just
//     user=r4 port=5432 with PGHOST set) is a libpq keyword/value DSN:
//     PostgreSQL.
//   - anything else is a SQLite file path (a path that begins with such a
//     word=, or with scheme://, is written ./word=… or ./scheme://…).
func Classify(location string) (models.Dialect, error) {
	c, err := classify(location)
	if err != nil {
		return "", err
	}
	return c.dialect, nil
}

// CheckSource reports, without connecting or opening a store (pgx may
// read ~/.pgpass and the certificate files a DSN names), whether a
// location can be opened at all: an error wrapping
// ErrUnsupportedSource (a URL scheme kandev-extract does not read) or
// ErrBadDSN (a PostgreSQL DSN that cannot be parsed), or nil. Both are
// usage errors; neither holds more of the location than
// PrintableLocation.
func CheckSource(location string) error {
	c, err := classify(location)
	if err != nil || c.dialect != models.DialectPostgres {
		return err
	}
	_, _, err = parsePostgres(c.dsn, c.isURL)
	return err
}

// Parsed is a location as Classify sorts it.
type Parsed struct {
	Dialect models.Dialect
	// DSN is a PostgreSQL location, trimmed, its URL scheme in lower case
	// (ParsePostgres reads it).
	DSN string
	// Path is a SQLite location's path: a file: URL's, else the location
	// as given ("~/" is not expanded: ExpandHome).
	Path string
}

// Parse classifies a location as Classify does, and returns what a store
// is opened from.
func Parse(location string) (Parsed, error) {
	c, err := classify(location)
	if err != nil {
		return Parsed{}, err
	}
	return Parsed{Dialect: c.dialect, DSN: c.dsn, Path: c.path}, nil
}

// ParsePostgres parses a PostgreSQL location with pgx (libpq's syntax, the
// environment included) and returns its config and printable form
// (PrintableLocation's). Its error, for a location that is not PostgreSQL
// or cannot be read unambiguously (ErrUnsupportedSource, ErrBadDSN), names
// the location only as that form and never quotes it.
func ParsePostgres(location string) (*pgx.ConnConfig, string, error) {
	c, err := classify(location)
	if err != nil {
		return nil, "", err
	}
	if c.dialect != models.DialectPostgres {
		return nil, "", &sourceError{shown: PrintableLocation(location), msg: "not a PostgreSQL URL or keyword/value DSN"}
	}
	return parsePostgres(c.dsn, c.isURL)
}

// IsPostgres reports whether a location names a PostgreSQL database.
func IsPostgres(location string) bool {
	d, err := Classify(location)
	return err == nil && d == models.DialectPostgres
}

// ExpandHome expands a leading "~/" to the user's home directory.
func ExpandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`) {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}
