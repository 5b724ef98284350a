package seams

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Each Set takes effect at once and its restore puts back what was in
// place, also when Sets nest; "" keeps a template key.
func TestSetAndRestore(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := CreateFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := CreateFile(p); !errors.Is(err, fs.ErrExist) {
		t.Errorf("CreateFile over an existing file: %v, want ErrExist", err)
	}
	full := errors.New("full")
	restore := SetCreateFile(func(string) (File, error) { return nil, full })
	if _, err := CreateFile(filepath.Join(t.TempDir(), "g")); err != full {
		t.Errorf("CreateFile with a fault set: %v", err)
	}
	restore()
	g, err := CreateFile(filepath.Join(t.TempDir(), "g"))
	if err != nil {
		t.Fatalf("CreateFile after restore: %v", err)
	}
	if _, ok := g.(*os.File); !ok {
		t.Errorf("CreateFile made a %T, want an *os.File", g)
	}
	g.Close()

	if RebuildMemoryLimit() != "" {
		t.Fatalf("RebuildMemoryLimit() = %q before any Set", RebuildMemoryLimit())
	}
	outer := SetRebuildMemoryLimit("1MB")
	inner := SetRebuildMemoryLimit("2MB")
	if got := RebuildMemoryLimit(); got != "2MB" {
		t.Errorf("limit %q, want 2MB", got)
	}
	inner()
	if got := RebuildMemoryLimit(); got != "1MB" {
		t.Errorf("limit after the inner restore %q, want 1MB", got)
	}
	outer()
	if got := RebuildMemoryLimit(); got != "" {
		t.Errorf("limit after both restores %q, want none", got)
	}

	outer = SetTemplateKeys("L", "")
	inner = SetTemplateKeys("", "S")
	if l, s := TemplateKeys(); l != "L" || s != "S" {
		t.Errorf("keys %q %q, want L S", l, s)
	}
	inner()
	if l, s := TemplateKeys(); l != "L" || s != "" {
		t.Errorf("keys after the inner restore %q %q, want L and none", l, s)
	}
	outer()
	if l, s := TemplateKeys(); l != "" || s != "" {
		t.Errorf("keys after both restores %q %q, want none", l, s)
	}
}
