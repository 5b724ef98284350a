package pipeline

import (
	"testing"

	"github.com/kandev/kandev-extract/models"
)

// The ids are remembered only for a comparison that will be made: not on
// an installation's first run, not on the run that rebinds it.
func TestComparesDeletionsOnlyWithAPreviousRun(t *testing.T) {
	prev := &models.Manifest{RunID: "r1"}
	for _, c := range []struct {
		a    acrossRuns
		want bool
	}{
		{acrossRuns{}, false},
		{acrossRuns{previous: prev, reboundNow: true}, false},
		{acrossRuns{previous: prev}, true},
	} {
		if got := c.a.comparesDeletions(); got != c.want {
			t.Errorf("previous %v, rebound %v: comparesDeletions() = %v, want %v", c.a.previous != nil, c.a.reboundNow, got, c.want)
		}
	}
}
