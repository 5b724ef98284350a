package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/kandev/kandev-extract/models"
)

// An installation name is bound to its source on first commit, so two
// stores never silently merge into one history (every Kandev store is
// called kandev.db). The binding lives in _installations/<name>.json,
// outside the runs, so retention never loses it.
const bindingsDir = "_installations"

// BindingFormat names an installation binding document.
const BindingFormat = "kandev-extract/installation-binding"

// SourceIdentity is what identifies a store: its dialect, its redacted
// location, and the store's own fingerprint (kandev_meta's
// schema_initialized_at, raw; nil when the store has none).
type SourceIdentity struct {
	Dialect     string  `json:"dialect"`
	Location    string  `json:"location"`
	Fingerprint *string `json:"fingerprint"`
}

// Same reports whether two identities name the same store: everything
// must match, so a moved store is a rebind too (the operator says so).
func (a SourceIdentity) Same(b SourceIdentity) bool {
	fa, fb := "", ""
	if a.Fingerprint != nil {
		fa = *a.Fingerprint
	}
	if b.Fingerprint != nil {
		fb = *b.Fingerprint
	}
	return a.Dialect == b.Dialect && a.boundLocation() == b.boundLocation() && fa == fb && (a.Fingerprint == nil) == (b.Fingerprint == nil)
}

// boundLocation is the location a binding compares: a PostgreSQL
// location without its password marker (postgres://USER:REDACTED@… and
// postgres://USER@… are the same server, role and database: taking the
// password out of the DSN, as the warning on an inline password advises,
// changes how the run authenticates, not which store it reads).
func (a SourceIdentity) boundLocation() string {
	const scheme, marker = "postgres://", ":" + redactedMarker + "@"
	if a.Dialect != string(models.DialectPostgres) || !strings.HasPrefix(a.Location, scheme) {
		return a.Location
	}
	rest := a.Location[len(scheme):]
	at := strings.IndexByte(rest, '@')
	if at < 0 || !strings.HasSuffix(rest[:at+1], marker) {
		return a.Location
	}
	return scheme + rest[:at+1-len(marker)] + "@" + rest[at+1:]
}

// redactedMarker stands for a password in a printed PostgreSQL location
// (location.PrintableLocation).
const redactedMarker = "REDACTED"

// sameAsLegacy compares with a source recorded before fingerprints were
// (a nil fingerprint on a's side is not a difference).
func (a SourceIdentity) sameAsLegacy(b SourceIdentity) bool {
	if a.Fingerprint == nil {
		return a.Dialect == b.Dialect && a.boundLocation() == b.boundLocation()
	}
	return a.Same(b)
}

func (a SourceIdentity) String() string {
	f := "no fingerprint"
	if a.Fingerprint != nil {
		f = "schema_initialized_at " + *a.Fingerprint
	}
	return a.Dialect + " " + a.Location + " (" + f + ")"
}

// Binding is an installation's bound source and every rebind since.
type Binding struct {
	Format       string         `json:"format"`
	Version      int            `json:"version"`
	Installation string         `json:"installation_id"`
	Source       SourceIdentity `json:"source"`
	BoundAt      time.Time      `json:"bound_at"`
	BoundByRun   string         `json:"bound_by_run"`
	Rebinds      []Rebind       `json:"rebinds,omitempty"`
	// KeyChanges are the write-once activation keys seen to change, kept
	// here (outside the runs, so retention never loses them) until and
	// after the operator acknowledges them.
	KeyChanges []KeyChange `json:"key_changes,omitempty"`
}

// KeyChange is a write-once activation key that differed from the previous
// committed run's raw value: an alarm until acknowledged
// (run --acknowledge-key-change), and disclosed for ever after.
type KeyChange struct {
	Key string `json:"key"`
	// Before and After are the raw values (nil: the key was absent).
	Before *string `json:"before"`
	After  *string `json:"after"`
	// PreviousRun read Before; SeenByRun, the first run to read After,
	// committed at SeenAt.
	PreviousRun string    `json:"previous_run"`
	SeenByRun   string    `json:"seen_by_run"`
	SeenAt      time.Time `json:"seen_at"`
	// AcknowledgedByRun is the run given --acknowledge-key-change after
	// the change was recorded ("" while the alarm stands).
	AcknowledgedByRun string     `json:"acknowledged_by_run,omitempty"`
	AcknowledgedAt    *time.Time `json:"acknowledged_at,omitempty"`
}

// Unacknowledged lists the key changes whose alarm still stands.
func (b *Binding) Unacknowledged() []KeyChange {
	if b == nil {
		return nil
	}
	var out []KeyChange
	for _, k := range b.KeyChanges {
		if k.AcknowledgedByRun == "" {
			out = append(out, k)
		}
	}
	return out
}

// Rebind is one explicit change of an installation's source.
type Rebind struct {
	From  SourceIdentity `json:"from"`
	To    SourceIdentity `json:"to"`
	At    time.Time      `json:"at"`
	ByRun string         `json:"by_run"`
}

// ErrSourceChanged is returned when a run's source is not the one its
// installation is bound to (a usage error: the operator rebinds or names
// the installation differently).
var ErrSourceChanged = errors.New("the installation is bound to another source")

// ReadBinding reads an installation's binding; nil when it has none yet.
// A binding file that is not valid is an error: the identity cannot be
// checked, so nothing is merged.
func ReadBinding(dir, installation string) (*Binding, error) {
	if err := ValidName(installation); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, bindingsDir, installation+".json")
	f, err := openNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("installation binding %s: %w", path, err)
	}
	defer f.Close()
	var b Binding
	if err := json.NewDecoder(io.LimitReader(f, maxManifestBytes)).Decode(&b); err != nil {
		return nil, fmt.Errorf("installation binding %s: not valid JSON: %v", path, err)
	}
	if b.Format != BindingFormat || b.Version != 1 || b.Installation != installation {
		return nil, fmt.Errorf("installation binding %s: not a binding of installation %s this kandev-extract knows", path, installation)
	}
	return &b, nil
}

// CheckBinding compares a run's source with its installation's binding.
// It returns the binding to save at commit (nil when nothing changes). A
// different source is refused with ErrSourceChanged unless rebind is set;
// a rebind is recorded in the binding for ever after.
func (w *Warehouse) CheckBinding(installation string, id SourceIdentity, rebind bool, run string, now time.Time) (*Binding, error) {
	b, err := ReadBinding(w.Dir, installation)
	if err != nil && !rebind {
		return nil, fmt.Errorf("%w (use --rebind to bind it anew)", err)
	}
	if b == nil || err != nil {
		nb := &Binding{Format: BindingFormat, Version: 1, Installation: installation, Source: id, BoundAt: now.UTC(), BoundByRun: run}
		if b == nil && err == nil {
			// First binding: a warehouse from before bindings existed
			// binds to the source of its latest committed run if it
			// differs, so that a first run from another store is caught too.
			if prev := w.lastCommittedSource(installation); prev != nil && !prev.sameAsLegacy(id) {
				if !rebind {
					return nil, sourceChanged(installation, *prev, id)
				}
				nb.Rebinds = []Rebind{{From: *prev, To: id, At: now.UTC(), ByRun: run}}
			}
		}
		return nb, nil
	}
	if b.Source.Same(id) {
		return nil, nil
	}
	if !rebind {
		return nil, sourceChanged(installation, b.Source, id)
	}
	nb := *b
	nb.Rebinds = append(append([]Rebind(nil), b.Rebinds...), Rebind{From: b.Source, To: id, At: now.UTC(), ByRun: run})
	nb.Source = id
	return &nb, nil
}

func sourceChanged(installation string, bound, now SourceIdentity) error {
	return fmt.Errorf("installation %q: %w: it was bound to %s, and this run reads %s. "+
		"If this is another store, give it its own name (--installation, or name = in the config file); "+
		"if the store moved or was replaced on purpose, run once with --rebind (or rebind = true for the installation in the config file)",
		installation, ErrSourceChanged, bound, now)
}

// lastCommittedSource is the source of an installation's latest valid
// committed run (fingerprint unknown), or nil.
func (w *Warehouse) lastCommittedSource(installation string) *SourceIdentity {
	ms, err := w.Manifests()
	if err != nil {
		return nil
	}
	var last *SourceIdentity
	for _, m := range ms {
		if m.InstallationID == installation && m.Provenance != nil {
			p := m.Provenance
			id := SourceIdentity{Dialect: string(p.SourceDialect), Location: p.SourceLocation, Fingerprint: p.SourceFingerprint}
			last = &id
		}
	}
	return last
}

// CaseTwin names a known installation (bound, or with a manifest) whose
// name equals installation but for case: on macOS and Windows both would be
// one directory. "" when none.
func (w *Warehouse) CaseTwin(installation string) string {
	names, _ := readDirEntries(w.Dir, bindingsDir, func(fs.DirEntry) bool { return true })
	for _, n := range names {
		if n = strings.TrimSuffix(n, ".json"); n != installation && strings.EqualFold(n, installation) {
			return n
		}
	}
	insts, _ := w.realDirEntries(runsDir)
	for _, n := range insts {
		if n != installation && strings.EqualFold(n, installation) {
			return n
		}
	}
	return ""
}

// SaveBindingUndoable saves b (nothing when nil) and returns how to put the
// previous binding back, for a commit that fails after it.
func (w *Warehouse) SaveBindingUndoable(b *Binding) (undo func(), err error) {
	if b == nil {
		return func() {}, nil
	}
	prev, perr := ReadBinding(w.Dir, b.Installation)
	if err := w.SaveBinding(b); err != nil {
		return nil, err
	}
	return func() {
		switch {
		case perr != nil:
		case prev == nil:
			w.remove(filepath.Join(bindingsDir, b.Installation+".json"))
		default:
			w.SaveBinding(prev)
		}
	}, nil
}

// SaveBinding writes an installation's binding atomically.
func (w *Warehouse) SaveBinding(b *Binding) error {
	if b == nil {
		return nil
	}
	if err := ValidName(b.Installation); err != nil {
		return err
	}
	dir, err := w.mkdirs(bindingsDir)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, b.Installation+".json"), data)
}
