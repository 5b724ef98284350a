package report

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Store text — step names, subagent types, run errors, disclosure texts
// quoting raw keys — is hostile: it may carry bidirectional controls that
// would reorder the page around it, or other invisible controls. Every such
// string goes through visible() before it is escaped: each bidi control
// (U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates, the
// marks U+200E, U+200F, U+061C) and every other control character except
// tab and newline is replaced by a visible ⟦U+XXXX⟧. In HTML the result is
// then wrapped in <bdi>, so even strong right-to-left letters in it cannot
// move the text around it; in SVG each store string is a <text> element of
// its own.

// visible replaces bidi and other control characters with a visible code.
func visible(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	clean := true
	for _, r := range s {
		if hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			fmt.Fprintf(&b, "⟦U+%04X⟧", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// hidden reports whether r must not reach the page as itself.
func hidden(r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return true
	case unicode.IsControl(r):
		return true
	}
	return false
}

// esc escapes text for HTML or SVG markup, controls made visible.
func esc(s string) string { return html.EscapeString(visible(s)) }

// storeHTML is store text for the page: controls made visible, escaped,
// and isolated in <bdi>.
func storeHTML(s string) template.HTML {
	return template.HTML("<bdi>" + esc(s) + "</bdi>")
}

// textWidth estimates the rendered width of s at px pixels in the page's
// sans-serif font (DejaVu Sans on Debian, one of the widest common ones),
// erring wide: layout reserves room from it, and the Chromium test checks
// on the rendered page that no two labels overlap.
func textWidth(s string, px float64) float64 {
	w := 0.0
	for _, r := range visible(s) {
		switch {
		case r == ' ':
			w += 0.33
		case strings.ContainsRune("il.,:;'|!", r):
			w += 0.32
		case strings.ContainsRune("fjrt()[]-", r):
			w += 0.45
		case r >= '0' && r <= '9':
			w += 0.64
		case r == 'm' || r == 'w':
			w += 0.98
		case r >= 'a' && r <= 'z':
			w += 0.63
		case r >= 'A' && r <= 'Z':
			w += 0.78
		case r < 0x80:
			w += 0.7
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hangul, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r):
			w += 1.05
		default:
			w += 1.0
		}
	}
	return w*px*1.06 + 2
}
