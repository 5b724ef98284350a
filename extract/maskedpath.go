package extract

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/kandev/kandev-extract/models"
)

// SQLite paths that look like credentials.

// openSQLite opens a SQLite path. A path that looks like it carries
// credentials (a DSN without its scheme, say) is shown masked in the
// Source's Location and in every error, the snapshot's included.
func openSQLite(ctx context.Context, path string) (models.Source, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	m := newPathMask(path, abs)
	if m == nil {
		s, err := OpenSQLite(ctx, path)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		return nil, m.err(err)
	}
	return &maskedSQLite{SQLiteSource: s, mask: m}, nil
}

// pathMask replaces a path's raw forms with its printable form in text.
type pathMask struct {
	shown   string
	replace *strings.Replacer
}

func newPathMask(path, abs string) *pathMask {
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
	return &pathMask{shown: shown, replace: strings.NewReplacer(pairs...)}
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

// maskedError is an error whose text had a path masked. errors.Is still
// sees the original (context cancellation, say); its text is not exposed.
type maskedError struct {
	text string
	orig error
}

func (e *maskedError) Error() string        { return e.text }
func (e *maskedError) Is(target error) bool { return errors.Is(e.orig, target) }
func (m *pathMask) text(s string) string    { return m.replace.Replace(s) }
func (s *maskedSQLite) Location() string    { return s.mask.shown }
func (p *maskedSnapshot) Close() error      { return p.mask.err(p.Snapshot.Close()) }
func (s *maskedSQLite) Close() error        { return s.mask.err(s.SQLiteSource.Close()) }

func (m *pathMask) err(err error) error {
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
	return &maskedError{text: text, orig: err}
}

type maskedSQLite struct {
	*SQLiteSource
	mask *pathMask
}

func (s *maskedSQLite) Begin(ctx context.Context) (models.Snapshot, error) {
	snap, err := s.SQLiteSource.Begin(ctx)
	if err != nil {
		return nil, s.mask.err(err)
	}
	return &maskedSnapshot{Snapshot: snap, mask: s.mask}, nil
}

type maskedSnapshot struct {
	models.Snapshot
	mask *pathMask
}

func (p *maskedSnapshot) Meta(ctx context.Context) ([]models.MetaEntry, error) {
	out, err := p.Snapshot.Meta(ctx)
	return out, p.mask.err(err)
}

func (p *maskedSnapshot) TableExists(ctx context.Context, table string) (bool, error) {
	ok, err := p.Snapshot.TableExists(ctx, table)
	return ok, p.mask.err(err)
}

func (p *maskedSnapshot) Columns(ctx context.Context, table string) ([]string, error) {
	cols, err := p.Snapshot.Columns(ctx, table)
	return cols, p.mask.err(err)
}

func (p *maskedSnapshot) SubagentSchema(ctx context.Context) (models.SubagentSchema, error) {
	s, err := p.Snapshot.SubagentSchema(ctx)
	return s, p.mask.err(err)
}

func (p *maskedSnapshot) Scan(ctx context.Context, spec models.TableSpec, fn func(row []any) error) error {
	return p.mask.err(p.Snapshot.Scan(ctx, spec, fn))
}

func (p *maskedSnapshot) Query(ctx context.Context, query string, args []any, fn func(row []any) error) error {
	return p.mask.err(p.Snapshot.Query(ctx, query, args, fn))
}
