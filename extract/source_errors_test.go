package extract

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kandev/kandev-extract/models"
)

func TestRenderOptional(t *testing.T) {
	have := map[string]bool{"agent_execution_id": true}
	tests := []struct {
		in   string
		have map[string]bool
		want string
	}{
		{"no placeholder", have, "no placeholder"},
		{"{{agent_execution_id}} AS ke", have, `"agent_execution_id" AS ke`},
		{"dk.ke = {{t.agent_execution_id}}", have, `dk.ke = t."agent_execution_id"`},
		{"{{agent_execution_id}} AS ke", nil, "'' AS ke"},
		{"dk.ke = {{t.agent_execution_id}}", nil, "dk.ke = ''"},
		{"{{a}}, {{b}}", map[string]bool{"b": true}, `'', "b"`},
	}
	for _, tt := range tests {
		if got := renderOptional(tt.in, tt.have); got != tt.want {
			t.Errorf("renderOptional(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPostgresMissingRelationMessage(t *testing.T) {
	for msg, want := range map[string]string{
		`relation "task_sessions" does not exist`:        "task_sessions",
		`relation "public.task_sessions" does not exist`: "task_sessions",
		`column "x" does not exist`:                      "",
	} {
		got := ""
		if m := pgNoSuchTable.FindStringSubmatch(msg); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%q -> %q, want %q", msg, got, want)
		}
	}
}

// newStore writes a small SQLite file with the given statements.
func newStore(t *testing.T, stmts ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.db")
	db, err := sql.Open("sqlite", "file:"+p)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// A query that names a table the store lacks (here through a spec's
// expression) becomes a typed MissingTableError naming store and table.
func TestSQLiteNoSuchTableIsTyped(t *testing.T) {
	p := newStore(t, `CREATE TABLE a (id TEXT)`, `INSERT INTO a VALUES ('x')`)
	src, err := OpenSQLite(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	spec := models.TableSpec{Name: "a", Alias: "t", Columns: []models.ColumnSpec{
		{Name: "id", Required: true},
		{Name: "gone", Kind: models.KindCount, Expr: "(SELECT count(*) FROM b WHERE b.id = t.id)"},
	}}
	err = snap.Scan(context.Background(), spec, func([]any) error { return nil })
	var mt *models.MissingTableError
	if !errors.As(err, &mt) || mt.Table != "b" || mt.Source != p {
		t.Fatalf("error = %v, want a MissingTableError for b in %s", err, p)
	}
	// kandev_meta without a value column is a MissingColumnError.
	if _, err := snap.Meta(context.Background()); err == nil || !strings.Contains(err.Error(), "required table kandev_meta is missing") {
		t.Errorf("Meta without kandev_meta: %v", err)
	}
}

func TestSQLiteMetaNeedsKeyAndValue(t *testing.T) {
	p := newStore(t, `CREATE TABLE kandev_meta (key TEXT PRIMARY KEY, val TEXT)`)
	src, err := OpenSQLite(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	snap, err := src.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	_, err = snap.Meta(context.Background())
	var mc *models.MissingColumnError
	if !errors.As(err, &mc) || mc.Table != "kandev_meta" || mc.Column != "value" {
		t.Fatalf("error = %v, want a missing kandev_meta.value", err)
	}
}

// The busy timeout is what the DSN asks SQLite for.
func TestBusyTimeoutInDSN(t *testing.T) {
	saved := BusyTimeout
	t.Cleanup(func() { BusyTimeout = saved })
	BusyTimeout = 1500 * time.Millisecond
	if dsn := sqliteDSN("/x.db", false); !strings.Contains(dsn, "busy_timeout%281500%29") {
		t.Errorf("dsn %s does not carry busy_timeout(1500)", dsn)
	}
}
