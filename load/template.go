package load

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kandev/kandev-extract/internal/seams"
	"github.com/kandev/kandev-extract/models"
)

// The built-in empty warehouse. A first build (no warehouse.duckdb yet)
// used to create every view and every comment before it could serve a run:
// ~500 COMMENT ON statements and 41 views, 0.25–0.30 s of CPU that does not
// depend on the data, most of a small store's first run. The binary carries
// instead the database a build makes from empty files of the catalog's
// tables (1.3 MB, ~55 KB gzipped), with its layout and schema keys, and a first
// build is an update of it (incremental.go): the same checks (the DuckDB
// library and storage options, every table's columns against the served
// files) and, when they pass, only the runs' rows inserted and the
// disclosing comments set. When any check fails, or the update does, the
// build is a full one, as before, so a stale template costs time only;
// TestBuiltInTemplateIsCurrent keeps it from being stale.

//go:embed template/warehouse.duckdb.gz
var templateDatabase []byte

//go:embed template/warehouse.json
var templateStampJSON []byte

// templateStamp is the built-in template's record: its layout and schema
// keys (Bytes and SHA256 are those of the uncompressed file).
func templateStamp() (databaseStamp, error) {
	var s databaseStamp
	if err := json.Unmarshal(templateStampJSON, &s); err != nil {
		return s, fmt.Errorf("the built-in template's record: %w", err)
	}
	if layout, schema := seams.TemplateKeys(); layout != "" || schema != "" {
		// A test's older template (internal/seams).
		s.Layout, s.Schema = cmp.Or(layout, s.Layout), cmp.Or(schema, s.Schema)
	}
	if s.Format != stampFormat || s.Layout == "" || s.Schema == "" || !validSHA256(s.SHA256) || s.Bytes <= 0 {
		return s, errors.New("the built-in template's record is incomplete")
	}
	return s, nil
}

// writeTemplate writes the built-in template, uncompressed, to path (a new
// file in this build's own directory) and checks it against its record.
func writeTemplate(path string) (databaseStamp, error) {
	stamp, err := templateStamp()
	if err != nil {
		return stamp, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(templateDatabase))
	if err != nil {
		return stamp, fmt.Errorf("the built-in template: %w", err)
	}
	out, err := seams.CreateFile(path)
	if err != nil {
		return stamp, err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(zr, stamp.Bytes+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && (n != stamp.Bytes || hex.EncodeToString(h.Sum(nil)) != stamp.SHA256) {
		err = errors.New("the built-in template does not match its record")
	}
	return stamp, err
}

// makeTemplate builds the template into dir: empty Parquet files of every
// base table, written as a run writes them, and a full build of them with
// no run. It returns the database's path and record.
func makeTemplate(ctx context.Context, dir string) (string, databaseStamp, error) {
	var stamp databaseStamp
	files := map[string][]string{}
	for _, name := range baseTables {
		t := models.Lookup(name)
		if t == nil {
			return "", stamp, fmt.Errorf("no catalog table %s", name)
		}
		p := filepath.Join(dir, "files", name+".parquet")
		f, err := CreateParquet(p, t.Schema(), "kandev-extract template")
		if err != nil {
			return "", stamp, err
		}
		if err := f.Close(nil); err != nil {
			return "", stamp, err
		}
		files[name] = []string{p}
	}
	path := filepath.Join(dir, DatabaseFile)
	_, layout, schema, err := buildInto(ctx, path, "", nil, nil, files, DefaultStaleAfter, buildInfo{ID: "template"}, DuckDBMemoryLimit)
	if err != nil {
		return "", stamp, err
	}
	sum, err := summarize(path)
	if err != nil {
		return "", stamp, err
	}
	return path, databaseStamp{Format: stampFormat, Layout: layout, Schema: schema, BuildID: "template", Bytes: sum.Bytes, SHA256: sum.SHA256}, nil
}
