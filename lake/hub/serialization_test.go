package hub

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5"

	"github.com/kandev/kandev-extract/internal/pgtest"
)

// serializationFailure makes PostgreSQL refuse a transaction the way it
// refuses the catalog's: two serializable transactions each read what the
// other then writes (write skew); the second to commit gets SQLSTATE 40001.
func serializationFailure(t *testing.T, dsn string) error {
	t.Helper()
	ctx := context.Background()
	conns := make([]*pgx.Conn, 2)
	for i := range conns {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(ctx) })
		conns[i] = c
	}
	must := func(c *pgx.Conn, q string) {
		t.Helper()
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	must(conns[0], `CREATE TABLE skew (k TEXT)`)
	a, b := conns[0], conns[1]
	must(a, `BEGIN ISOLATION LEVEL SERIALIZABLE`)
	must(b, `BEGIN ISOLATION LEVEL SERIALIZABLE`)
	must(a, `SELECT count(*) FROM skew WHERE k = 'a'`)
	must(b, `SELECT count(*) FROM skew WHERE k = 'b'`)
	must(a, `INSERT INTO skew VALUES ('b')`)
	must(b, `INSERT INTO skew VALUES ('a')`)
	must(a, `COMMIT`)
	_, err := b.Exec(ctx, `COMMIT`)
	if err == nil {
		t.Fatal("the write skew committed: no serialization failure to test with")
	}
	return err
}

// TestSerializationFailureIsRetried: PostgreSQL's real serialization
// failure, wrapped as iceberg-go and the hub wrap it, is recognised as
// one (and as a conflict for the commits); other errors are not. A table
// creation that meets it is done again until it lands; one that meets
// any other error fails at once.
func TestSerializationFailureIsRetried(t *testing.T) {
	ctx := context.Background()
	c := pgtest.Shared(t)
	dsn := c.DSN(pgtest.NewDatabase(t, c, ""))
	lost := serializationFailure(t, dsn)
	wrapped := fmt.Errorf("create kandev.x: %w", lost)
	if !isSerializationFailure(wrapped) || !isConflict(wrapped) {
		t.Fatalf("not recognised: %v", wrapped)
	}
	for _, err := range []error{errors.New("could not serialize access (SQLSTATE 40001)"), errors.New("connection refused"), nil} {
		if isSerializationFailure(err) {
			t.Errorf("isSerializationFailure(%v) = true", err)
		}
	}

	h, err := Open(ctx, Config{Bucket: "file://" + filepath.ToSlash(t.TempDir()), Catalog: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "n", Type: iceberg.PrimitiveTypes.Int64})
	var calls int
	fail := func(times int, with error) {
		calls = 0
		testHookCreateTable = func(create createTableFunc) createTableFunc {
			return func(ctx context.Context, id table.Identifier, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
				if calls++; calls <= times {
					return nil, with
				}
				return create(ctx, id, sc, opts...)
			}
		}
	}
	t.Cleanup(func() { testHookCreateTable = nil })

	fail(2, lost)
	id := table.Identifier{h.ns[0], "retried"}
	if _, err := h.createTable(ctx, id, sc, "table created"); err != nil || calls != 3 {
		t.Fatalf("after two serialization failures: %v, %d calls, want the third to create it", err, calls)
	}
	if ok, err := h.cat.CheckTableExists(ctx, id); err != nil || !ok {
		t.Fatalf("table exists: %v %v", ok, err)
	}
	fail(1, errors.New("connection refused"))
	if _, err := h.createTable(ctx, table.Identifier{h.ns[0], "refused"}, sc, "table created"); err == nil || calls != 1 {
		t.Errorf("another error: %v after %d calls, want it returned at once", err, calls)
	}
}
