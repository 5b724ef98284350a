package extract

import (
	"context"
	"path/filepath"

	"github.com/kandev/kandev-extract/extract/evidence"
	"github.com/kandev/kandev-extract/extract/location"
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
	m := location.NewPathMask(path, abs)
	if m == nil {
		s, err := OpenSQLite(ctx, path)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		return nil, m.Err(err)
	}
	return &maskedSQLite{SQLiteSource: s, mask: m}, nil
}

func (s *maskedSQLite) Location() string { return s.mask.Shown() }
func (p *maskedSnapshot) Close() error   { return p.mask.Err(p.Snapshot.Close()) }
func (s *maskedSQLite) Close() error     { return s.mask.Err(s.SQLiteSource.Close()) }

type maskedSQLite struct {
	*SQLiteSource
	mask *location.PathMask
}

func (s *maskedSQLite) Begin(ctx context.Context) (models.Snapshot, error) {
	snap, err := s.SQLiteSource.Begin(ctx)
	if err != nil {
		return nil, s.mask.Err(err)
	}
	return &maskedSnapshot{Snapshot: snap, mask: s.mask}, nil
}

type maskedSnapshot struct {
	models.Snapshot
	mask *location.PathMask
}

func (p *maskedSnapshot) Meta(ctx context.Context) ([]models.MetaEntry, error) {
	out, err := p.Snapshot.Meta(ctx)
	return out, p.mask.Err(err)
}

func (p *maskedSnapshot) TableExists(ctx context.Context, table string) (bool, error) {
	ok, err := p.Snapshot.TableExists(ctx, table)
	return ok, p.mask.Err(err)
}

func (p *maskedSnapshot) Columns(ctx context.Context, table string) ([]string, error) {
	cols, err := p.Snapshot.Columns(ctx, table)
	return cols, p.mask.Err(err)
}

func (p *maskedSnapshot) SubagentSchema(ctx context.Context) (models.SubagentSchema, error) {
	s, err := p.Snapshot.SubagentSchema(ctx)
	return s, p.mask.Err(err)
}

func (p *maskedSnapshot) Scan(ctx context.Context, spec models.TableSpec, fn func(row []any) error) error {
	return p.mask.Err(p.Snapshot.Scan(ctx, spec, fn))
}

func (p *maskedSnapshot) Query(ctx context.Context, query string, args []any, fn func(row []any) error) error {
	return p.mask.Err(p.Snapshot.Query(ctx, query, args, fn))
}

// A masked snapshot is an evidence.Snapshot as the one it wraps is, its
// location and errors masked. Stream's errors go unmasked to Wrap, which
// masks them, so that Wrap still reads the driver's error.

func (p *maskedSnapshot) Dialect() models.Dialect { return p.Snapshot.(evidence.Snapshot).Dialect() }
func (p *maskedSnapshot) Location() string        { return p.mask.Shown() }

func (p *maskedSnapshot) Stream(ctx context.Context, q string, args []any, borrow bool, fn func(row []any) error) error {
	return p.Snapshot.(evidence.Snapshot).Stream(ctx, q, args, borrow, fn)
}

func (p *maskedSnapshot) Wrap(op, table string, err error) error {
	return p.mask.Err(p.Snapshot.(evidence.Snapshot).Wrap(op, table, err))
}
