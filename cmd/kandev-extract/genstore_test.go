package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// genStore runs gen-store on its own command (the root registers it too).
func genStore(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	g := &globals{stdout: &out, stderr: &errb}
	cmd := newGenStoreCmd(g)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	code := exitCode(cmd.ExecuteContext(context.Background()), &errb)
	return out.String(), errb.String(), code
}

func TestGenStoreDemoMatchesBundledStore(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "demo.db")
	out, errOut, code := genStore(t, "--out", path, "--demo")
	if code != 0 {
		t.Fatalf("gen-store --demo: code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"wrote " + path, "subagent rows: 253", "subagent_context_capture_since"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(repoFile(t, repoDemoStore))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("gen-store --demo differs from %s (%d vs %d bytes)", repoDemoStore, len(got), len(want))
	}
	// An existing file is kept unless --overwrite.
	if _, errOut, code := genStore(t, "--out", path, "--demo"); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("existing file: code %d, stderr %q", code, errOut)
	}
	if _, errOut, code := genStore(t, "--out", path, "--demo", "--overwrite"); code != 0 {
		t.Errorf("--overwrite: code %d, stderr %q", code, errOut)
	}
}

func TestGenStoreScaled(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "small.db")
	out, errOut, code := genStore(t, "--out", path, "--scale", "0.0005")
	if code != 0 {
		t.Fatalf("gen-store --scale: code %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "scale 0.0005") || !strings.Contains(out, "task_session_messages:") {
		t.Errorf("output:\n%s", out)
	}
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Errorf("store not written: %v", err)
	}
}

func TestGenStoreUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{},
		{"--out", filepath.Join(dir, "a.db"), "--demo", "--scale", "1"},
		{"--out", filepath.Join(dir, "b.db"), "--scale", "0"},
		{"--out", filepath.Join(dir, "c.db"), "--scale", "-1"},
		{"--out", filepath.Join(dir, "d.db"), "--scale", "NaN"},
	} {
		if _, errOut, code := genStore(t, args...); code != exitUsage || !strings.Contains(errOut, "--help") {
			t.Errorf("%v: code %d, stderr %q", args, code, errOut)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("usage errors wrote files: %v", entries)
	}
}
