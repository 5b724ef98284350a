package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kandev/kandev-extract/internal/testkit"
)

// statusOf runs status --json on a warehouse of one installation and
// decodes its line.
func statusOf(t *testing.T, wh string) (installStatus, int) {
	t.Helper()
	out, errOut, code := cli(t, "status", "-w", wh, "--json", "--last", "10")
	var st installStatus
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &st) != nil {
		t.Fatalf("status --json: code %d, not one JSON line:\n%s%s", code, out, errOut)
	}
	return st, code
}

// The nightly order is run, then health: the run that sees a changed
// activation key records it, so health and status must go on reporting it
// (exit 9, both raw values, the run that first saw it) at every later run,
// until a run acknowledges it; that is disclosed for ever after.
func TestKeyChangeAlarmLastsUntilAcknowledged(t *testing.T) {
	t.Parallel()
	store := testkit.CopyFixture(t, "fresh-activated.db")
	wh := filepath.Join(t.TempDir(), "wh")
	run := func(extra ...string) {
		t.Helper()
		if out, errOut, code := cli(t, append([]string{"run", "-s", store, "-w", wh, "-i", "lab", "-q"}, extra...)...); code != 0 {
			t.Fatalf("run %v: code %d\n%s%s", extra, code, out, errOut)
		}
	}
	// The fixture's newest row is months old: a threshold that keeps the
	// writer fresh, so that only the key decides.
	health := func() (string, int) {
		out, _, code := cli(t, "health", "-s", store, "-w", wh, "-i", "lab", "--stale-after", "1000000h")
		return out, code
	}
	run()
	first, _ := statusOf(t, wh)
	testkit.SQLiteExec(t, store, `UPDATE kandev_meta SET value = '2026-08-05T00:00:00Z' WHERE key = 'subagent_context_capture_since'`)
	run() // sees the change
	seen, _ := statusOf(t, wh)
	run() // the next night: the store equals the previous run
	for _, after := range []string{"the run that saw it", "a later run"} {
		st, code := statusOf(t, wh)
		if after == "the run that saw it" {
			st = seen
		}
		if code != 9 || len(st.KeyChanges) != 1 {
			t.Fatalf("status after %s: code %d, key_changes %+v", after, code, st.KeyChanges)
		}
		k := st.KeyChanges[0]
		if k.Key != "subagent_context_capture_since" || k.Before == nil || *k.Before != "2026-08-03T15:00:00.123456789Z" ||
			k.After == nil || *k.After != "2026-08-05T00:00:00Z" || k.PreviousRun != first.CurrentRun.RunID ||
			k.SeenByRun != seen.CurrentRun.RunID || k.AcknowledgedByRun != "" || st.ExitStatus != 9 {
			t.Errorf("key change after %s: %+v", after, k)
		}
		if strings.Join(st.Alarms, ",") != "activation_key_changed" {
			t.Errorf("alarms after %s: %v", after, st.Alarms)
		}
	}
	out, code := health()
	if code != 9 || !strings.Contains(out, `"2026-08-03T15:00:00.123456789Z"`) || !strings.Contains(out, `"2026-08-05T00:00:00Z"`) ||
		!strings.Contains(out, "first seen by run "+seen.CurrentRun.RunID) || !strings.Contains(out, "--acknowledge-key-change") {
		t.Errorf("health after the run that saw the change: code %d\n%s", code, out)
	}

	run("--acknowledge-key-change")
	st, code := statusOf(t, wh)
	if code != 0 || len(st.KeyChanges) != 1 || st.KeyChanges[0].AcknowledgedByRun != st.CurrentRun.RunID || len(st.Alarms) != 0 {
		t.Errorf("status after the acknowledgement: code %d, %+v, alarms %v", code, st.KeyChanges, st.Alarms)
	}
	if _, code := health(); code != 0 {
		t.Errorf("health after the acknowledgement: code %d", code)
	}
	run() // disclosed for ever after, as a warning
	st, _ = statusOf(t, wh)
	var ack []string
	for _, d := range st.Disclosures {
		if d.Rule == "activation_key_change_acknowledged" && d.Severity == "warning" &&
			strings.Contains(d.Text, seen.CurrentRun.RunID) && strings.Contains(d.Text, st.KeyChanges[0].AcknowledgedByRun) {
			ack = append(ack, d.Rule)
		}
	}
	if len(ack) != 1 || st.ExitStatus != 0 {
		t.Errorf("after the acknowledgement, a later run: exit %d, disclosures %+v", st.ExitStatus, st.Disclosures)
	}
}
