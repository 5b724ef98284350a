package models

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The data dictionary's "Reason codes" section lists every code, in its
// order, with the meaning the code states.
func TestReasonCodesMatchDataDictionary(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "docs", "warehouse.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Reason
	in := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Reason codes"
			continue
		}
		if m := docReasonRow(line); in && m != nil {
			got = append(got, *m)
		}
	}
	want := append(append([]Reason{}, CompletenessReasonList...), ExecutionReasonList...)
	if len(got) != len(want) {
		t.Fatalf("docs/warehouse.md lists %d reason codes, models %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("reason %d:\n docs   %q\n models %q", i, got[i], want[i])
		}
	}
}

func docReasonRow(line string) *Reason {
	if !strings.HasPrefix(line, "| `") {
		return nil
	}
	cells := strings.SplitN(strings.Trim(line, "| "), "` | ", 2)
	if len(cells) != 2 {
		return nil
	}
	return &Reason{Code: ReasonCode(strings.TrimPrefix(cells[0], "`")), Meaning: unescapeCell(cells[1])}
}

// Each bit is its list's entry at the same position, and a stored list
// reads back as the codes it was written from.
func TestReasonSetsAreOrderedLists(t *testing.T) {
	if int(ReasonNoEvidence) != 1<<(len(CompletenessReasonList)-1) || int(ReasonNoExecutionSinceKey) != 1<<(len(ExecutionReasonList)-1) {
		t.Fatal("a reason bit has no entry in its list, or an entry no bit")
	}
	if got := (ReasonNoCaptureKey | ReasonFeatureAbsent | ReasonNoEvidence).String(); got != "feature_absent,no_capture_key,no_evidence" {
		t.Errorf("String = %q", got)
	}
	if got := CompletenessReasons(0).Codes(); got == nil || len(got) != 0 {
		t.Errorf("no reasons = %#v, want an empty list", got)
	}
	if got := (ReasonBackfillSource | ReasonExecutionIDSentinel).Codes(); strings.Join(got, " ") != "execution_id_sentinel backfill_source" {
		t.Errorf("Codes = %q", got)
	}
	seen := map[ReasonCode]bool{}
	for _, r := range append(append([]Reason{}, CompletenessReasonList...), ExecutionReasonList...) {
		if seen[r.Code] || strings.Contains(string(r.Code), ReasonSep) || r.Meaning == "" {
			t.Errorf("reason %q: duplicated, holds the separator, or has no meaning", r.Code)
		}
		seen[r.Code] = true
	}
}
