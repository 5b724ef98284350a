// Package transform turns source rows into classified warehouse rows: it
// reads instants exactly (internal/instant), applies the classification of
// docs/design.md §3 on those exact instants, and builds Arrow record
// batches in the catalog's columns (models.Table). It writes no SQL: the
// scans are extract's.
package transform

import (
	"time"

	"github.com/kandev/kandev-extract/internal/instant"
	"github.com/kandev/kandev-extract/models"
)

// ErrNotTimestamp is returned for text that is not a timestamp form Kandev
// writes (instant.ErrNotTimestamp).
var ErrNotTimestamp = instant.ErrNotTimestamp

// ParseStamp parses a timestamp column value as Kandev's drivers write it
// (instant.ParseStamp): the exact instant, in UTC, and the precision of
// its fraction.
func ParseStamp(s string) (time.Time, models.Precision, error) { return instant.ParseStamp(s) }

// ParseKey parses an activation key value (instant.ParseKey).
func ParseKey(s string) (time.Time, models.Precision, error) { return instant.ParseKey(s) }

// ReadKey classifies one kandev_meta activation key. raw is nil when the
// row is absent. allowEmpty is true for backfill_through, whose ” means
// "the backfill matched nothing" (AC-24f).
func ReadKey(name string, raw *string, allowEmpty bool) models.ActivationKey {
	k := models.ActivationKey{Name: name, Raw: raw}
	switch {
	case raw == nil:
		k.State = models.KeyAbsent
	case *raw == "" && allowEmpty:
		k.State = models.KeyNoneMatched
	default:
		t, p, err := ParseKey(*raw)
		if err != nil {
			k.State = models.KeyUnparseable
			k.Problem = err.Error()
			return k
		}
		k.State, k.At, k.Precision = models.KeyPresent, t, p
	}
	return k
}
