package load

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// A failure is recorded in its manifest (_runs/<i>/<r>.json) and, once
// warehouse.duckdb is rebuilt, in the runs table. On a full disk, or with
// _runs/ unwritable, neither can be written, and a failed night would be
// invisible: status would show the last good run as the latest. Such a
// failure goes to _attempts.journal instead, a file of fixed size allocated
// while there was room and only ever overwritten in place (a slot per
// record, the oldest reused), so writing it needs no new disk blocks. So
// does a rebuild of warehouse.duckdb that failed after the run's data
// committed. status reads it.
// JournalFile is the attempts journal, relative to the warehouse.
const JournalFile = "_attempts.journal"

const (
	journalFile = JournalFile
	// journalSlot bytes per record (one JSON line, padded with spaces),
	// journalSlots records kept: 32 KiB.
	journalSlot  = 1024
	journalSlots = 32
	// AttemptFormat names a journal record.
	AttemptFormat = "kandev-extract/attempt"
)

// Kinds of journal records.
const (
	// AttemptFailed: the installation's run failed and its manifest could
	// not be written.
	AttemptFailed = "failed"
	// AttemptRebuildFailed: the run's committed data is on disk, but
	// warehouse.duckdb could not be rebuilt; it still serves earlier runs
	// until the next run rebuilds it. Warehouse-wide (no installation).
	AttemptRebuildFailed = "rebuild_failed"
)

// Attempt is one journal record.
type Attempt struct {
	Format string `json:"format"`
	// Seq orders the journal's records (the newest has the highest).
	Seq          int64  `json:"seq"`
	Kind         string `json:"kind"`
	Installation string `json:"installation_id,omitempty"`
	RunID        string `json:"run_id"`
	// CommitSeq is the commit sequence the run took, or would have taken:
	// a later run that commits takes the same one.
	CommitSeq  int64     `json:"commit_seq,omitempty"`
	FinishedAt time.Time `json:"finished_at"`
	DurationMS int64     `json:"duration_ms,omitempty"`
	Error      string    `json:"error"`
}

// ensureJournal allocates _attempts.journal when it is missing or not the
// size this build writes (a temporary file renamed into place). Not
// having room is no error: the run goes on, and a failure it cannot record
// is said on stderr only, as before.
func (w *Warehouse) ensureJournal() error {
	p, err := w.inside(journalFile, false)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == journalSlot*journalSlots {
		return nil
	}
	blank := bytes.Repeat([]byte(" "), journalSlot*journalSlots)
	for i := journalSlot - 1; i < len(blank); i += journalSlot {
		blank[i] = '\n'
	}
	return writeFileAtomic(p, blank)
}

// RecordAttempt writes a record over the journal's oldest slot, in place.
// The caller holds the warehouse lock.
func (w *Warehouse) RecordAttempt(a Attempt) error {
	p, err := w.inside(journalFile, false)
	if err != nil {
		return err
	}
	old, err := ReadAttempts(w.Dir)
	if err != nil {
		return err
	}
	a.Format = AttemptFormat
	for _, o := range old {
		a.Seq = max(a.Seq, o.Seq)
	}
	a.Seq++
	a.FinishedAt = a.FinishedAt.UTC()
	line, err := attemptLine(a)
	if err != nil {
		return err
	}
	f, err := openJournal(p, os.O_WRONLY)
	if err != nil {
		return fmt.Errorf("attempts journal %s: %w", p, err)
	}
	if _, err := f.WriteAt(line, (a.Seq%journalSlots)*journalSlot); err != nil {
		f.Close()
		return fmt.Errorf("attempts journal %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("attempts journal %s: %w", p, err)
	}
	return f.Close()
}

// attemptLine is a record as one slot: JSON, spaces, a newline. A long
// error is cut to fit.
func attemptLine(a Attempt) ([]byte, error) {
	for {
		b, err := json.Marshal(a)
		if err != nil {
			return nil, err
		}
		if len(b) < journalSlot {
			line := append(b, bytes.Repeat([]byte(" "), journalSlot-1-len(b))...)
			return append(line, '\n'), nil
		}
		cut := len(a.Error) - (len(b) - journalSlot) - 8
		if cut <= 0 {
			return nil, errors.New("attempt record too long")
		}
		a.Error = trimUTF8(a.Error[:cut]) + "…"
	}
}

// trimUTF8 drops a rune cut in half at the end of s.
func trimUTF8(s string) string {
	for len(s) > 0 && s[len(s)-1]&0xc0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xc0 {
		s = s[:len(s)-1]
	}
	return s
}

// openJournal opens the journal without following a symbolic link and
// only when it is a regular file of the journal's size.
func openJournal(path string, flag int) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != journalSlot*journalSlots {
		return nil, fmt.Errorf("not a regular file of %d bytes", journalSlot*journalSlots)
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return nil, err
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, fmt.Errorf("%s changed while being opened", path)
	}
	return f, nil
}

// ReadAttempts reads the journal's records, oldest first (none when it
// does not exist). A slot that is not a valid record is skipped: the file
// is the warehouse's, and treated as hostile.
func ReadAttempts(dir string) ([]Attempt, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(abs, journalFile)
	f, err := openJournal(p, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("attempts journal %s: %w", p, err)
	}
	defer f.Close()
	buf := make([]byte, journalSlot*journalSlots)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("attempts journal %s: %w", p, err)
	}
	var out []Attempt
	for i := 0; i < journalSlots; i++ {
		slot := bytes.TrimSpace(buf[i*journalSlot : (i+1)*journalSlot])
		if len(slot) == 0 {
			continue
		}
		var a Attempt
		if json.Unmarshal(slot, &a) != nil || a.Format != AttemptFormat || a.Seq < 1 || ValidName(a.RunID) != nil {
			continue
		}
		switch {
		case a.Kind == AttemptFailed && ValidName(a.Installation) == nil:
		case a.Kind == AttemptRebuildFailed && a.Installation == "":
		default:
			continue
		}
		out = append(out, a)
	}
	sortAttempts(out)
	return out, nil
}

func sortAttempts(as []Attempt) {
	slices.SortFunc(as, func(a, b Attempt) int { return cmp.Compare(a.Seq, b.Seq) })
}
