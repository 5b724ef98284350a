package location

import (
	"errors"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/models"
)

// Masking what the drivers say: a SQLite path that looks like it carries
// credentials (PathMask), and a PostgreSQL DSN's secrets (Scrub).

// PathMask replaces a path's raw forms with its printable form in text.
type PathMask struct {
	shown   string
	replace *strings.Replacer
}

// NewPathMask is the mask of a SQLite path (as given, and absolute), or
// nil when the path shows nothing that looks like credentials.
func NewPathMask(path, abs string) *PathMask {
	shown := printablePath(abs)
	if shown == abs && printablePath(path) == path {
		return nil
	}
	pairs := []string{abs, shown, path, printablePath(path)}
	// The masked parts themselves, wherever they appear (4 bytes or more:
	// shorter ones would mangle unrelated words).
	for _, raw := range []string{abs, path} {
		for _, secret := range maskedParts(raw) {
			if len(secret) >= 4 {
				pairs = append(pairs, secret, redactedMark, url.PathEscape(secret), redactedMark, url.QueryEscape(secret), redactedMark)
			}
		}
	}
	return &PathMask{shown: shown, replace: strings.NewReplacer(pairs...)}
}

// maskedParts are the substrings printablePath hides.
func maskedParts(p string) []string {
	var out []string
	if m := pathPassword.FindStringIndex(p); m != nil {
		out = append(out, p[m[1]:])
		p = p[:m[1]]
	}
	if at := strings.LastIndexByte(p, '@'); at > 0 {
		if c := strings.IndexByte(p[:at], ':'); c >= 0 {
			out = append(out, p[c+1:at])
		}
	}
	return out
}

// Shown is the path's printable form (the absolute path, masked).
func (m *PathMask) Shown() string { return m.shown }

func (m *PathMask) text(s string) string { return m.replace.Replace(s) }

// Err is err with the path masked in its text: a MissingTableError or
// MissingColumnError keeps its type, its Source masked; any other error
// whose text changes becomes a MaskedError.
func (m *PathMask) Err(err error) error {
	if err == nil {
		return nil
	}
	switch e := err.(type) {
	case *models.MissingTableError:
		c := *e
		c.Source = m.text(c.Source)
		return &c
	case *models.MissingColumnError:
		c := *e
		c.Source = m.text(c.Source)
		return &c
	}
	text := m.text(err.Error())
	if text == err.Error() {
		return err
	}
	return Masked(text, err)
}

// Masked is an error whose text is text, in place of orig's (which held
// something not to be shown): errors.Is still sees orig (context
// cancellation, say); orig's text is not exposed.
func Masked(text string, orig error) error { return &maskedError{text: text, orig: orig} }

// maskedError is Masked's error.
type maskedError struct {
	text string
	orig error
}

func (e *maskedError) Error() string        { return e.text }
func (e *maskedError) Is(target error) bool { return errors.Is(e.orig, target) }

// Scrub removes secrets (DSNSecrets) from text: a safety net, as driver
// errors are not meant to hold any. One shorter than 4 bytes is left
// alone: replacing it would mangle words.
func Scrub(text string, secrets []string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			text = strings.ReplaceAll(text, s, redactedMark)
		}
	}
	return text
}

// DSNSecrets are the parts of a parsed DSN no error may show: the password,
// and the names and values of parameters that are not common settings —
// the tail of a password written with a raw '&' or space becomes such a
// parameter, and the server names an unknown one in its error.
func DSNSecrets(cfg *pgx.ConnConfig) []string {
	out := []string{cfg.Password}
	for k, v := range cfg.RuntimeParams {
		if !commonSettings[k] {
			out = append(out, k, v)
		}
	}
	// Longest first, so that no secret is left half replaced.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// commonSettings are server settings a DSN commonly passes (options=-c…,
// application_name=…); their names and values are not secret.
var commonSettings = map[string]bool{
	"application_name": true, "client_encoding": true, "options": true, "search_path": true, "timezone": true,
	"datestyle": true, "intervalstyle": true, "statement_timeout": true, "lock_timeout": true,
	"idle_in_transaction_session_timeout": true, "default_transaction_read_only": true, "extra_float_digits": true,
}
