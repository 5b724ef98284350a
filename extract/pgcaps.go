package extract

import (
	"fmt"

	"github.com/kandev/kandev-extract/models"
)

// pgCapWhole is pgCap with a string-typed value within its cap handed over
// as it is, and only a longer one cut by left(): left() counts characters
// over the whole value even when it returns it whole, and was 1.5-2 s of
// the server's 4.3 s of CPU for the 1 M-row fact scan of the large store
// (`\copy` of its SQL to /dev/null, with left() and with this form). The
// value is the same: a value of at most MaxBytes bytes has at most
// MaxBytes characters, so left() returned it whole; both read the column
// as text.
func pgCapWhole(types map[string]pgColumnType) capRender {
	base := pgCap(types)
	return func(col string, c models.ColumnSpec) (string, string, bool) {
		value, length, ok := base(col, c)
		if ok && types[c.Name].text {
			value = fmt.Sprintf("CASE WHEN %s <= %d THEN %s::text ELSE %s END", length, c.MaxBytes, col, value)
		}
		return value, length, ok
	}
}
