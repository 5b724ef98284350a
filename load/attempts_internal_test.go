package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The journal keeps its size: records overwrite the oldest slot, a long
// error is cut to fit, and a slot that is not a record is skipped.
func TestAttemptsJournalIsFixedSize(t *testing.T) {
	t.Parallel()
	w := &Warehouse{Dir: t.TempDir()}
	if err := w.ensureJournal(); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	for i := range journalSlots + 5 {
		a := Attempt{Kind: AttemptFailed, Installation: "lab", RunID: "r" + string(rune('a'+i%26)), CommitSeq: 7, FinishedAt: at,
			Error: "write /wh/_runs/lab/x.json.tmp: no space left on device"}
		if i == journalSlots+4 {
			a.Error = strings.Repeat("é", 2*journalSlot) // cut to fit, whole runes
		}
		if err := w.RecordAttempt(a); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(w.Dir, JournalFile)
	if fi, err := os.Stat(p); err != nil || fi.Size() != journalSlot*journalSlots {
		t.Fatalf("journal size %v, %v", fi.Size(), err)
	}
	// A hostile slot: not JSON.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("{not a record"), 10*journalSlot)
	f.Close()
	as, err := ReadAttempts(w.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != journalSlots-1 || as[0].Seq != 6 || as[len(as)-1].Seq != journalSlots+5 {
		t.Fatalf("%d records, seq %d..%d; want %d, the newest kept", len(as), as[0].Seq, as[len(as)-1].Seq, journalSlots-1)
	}
	last := as[len(as)-1]
	if !strings.HasSuffix(last.Error, "…") || !strings.HasPrefix(last.Error, "éé") || strings.ContainsRune(last.Error, '\uFFFD') {
		t.Errorf("long error not cut to fit on a rune boundary: %q", last.Error)
	}
	// A file of another size is not read as a journal (the next run
	// allocates it anew).
	os.WriteFile(p, []byte("short"), 0o644)
	if _, err := ReadAttempts(w.Dir); err == nil {
		t.Error("a journal of the wrong size was read")
	}
	if err := w.ensureJournal(); err != nil {
		t.Fatal(err)
	}
	if as, err := ReadAttempts(w.Dir); err != nil || len(as) != 0 {
		t.Errorf("reallocated journal: %d records, %v", len(as), err)
	}
}
