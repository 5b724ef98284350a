package evidence

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Why not encoding/json: measured by removal (docs/benchmarks.md), a
// message pass validating and decoding each metadata with it makes the
// whole run 53 % slower on large and 21 % on grown (it checks 2 M values on
// large), and it would not be SQLite's JSON either (its keys match without
// regard to case, its last duplicate member wins).
//
// SQLite's JSON functions, as far as the message pass needs them, on a TEXT
// value already in the process: json_valid(X) (canonical RFC 8259 JSON as
// SQLite's parser accepts it) and json_extract(X, '$.normalized.kind') and
// json_extract(X, '$.tool_call_id') of a valid X. TestJSONScanMatchesSQLite
// compares them with SQLite on a corpus of edge cases and on random
// mutations of it. What SQLite does, and so what this does:
//
//   - the text ends at its first NUL byte, if any (SQLite's parser reads a
//     NUL-terminated string);
//   - whitespace is space, tab, LF and CR only; a value may be surrounded
//     by it; anything else after the value is an error;
//   - strings: no raw control character (0x00-0x1F), escapes \" \\ \/ \b
//     \f \n \r \t \uXXXX only; bytes from 0x80 are taken as they are (UTF-8
//     is not checked);
//   - numbers: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?;
//   - literals true, false, null; arrays and objects nested at most 1000
//     deep; object keys are strings;
//   - json_extract: the first member of a given name (after unescaping it);
//     a string is unescaped (a lone surrogate escape becomes the 3-byte
//     encoding of its code unit, as SQLite writes it); an integer that
//     fits in 64 bits is an INTEGER, any other number a REAL (+Inf beyond
//     the range of a double); true and false are 1 and 0; null is NULL; an
//     object or array is its text without the whitespace between tokens.

const jsonMaxDepth = 1000

// jsonValid is SQLite's json_valid(X) for a TEXT X.
func jsonValid(s string) bool {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	p := jsonParser{s: s}
	p.space()
	if !p.value(0) {
		return false
	}
	p.space()
	return p.i == len(p.s)
}

type jsonParser struct {
	s string
	i int
	// top, when set, is told of each member of the outermost object as
	// it is checked: the key as written (escapes not decoded) and where
	// its value begins.
	top func(key string, value int)
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// value checks one value at p.i; depth is the nesting of its container.
func (p *jsonParser) value(depth int) bool {
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		if depth >= jsonMaxDepth {
			return false
		}
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			return true
		}
		for {
			keyStart := p.i
			if p.i >= len(p.s) || p.s[p.i] != '"' || !p.str() {
				return false
			}
			keyEnd := p.i
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return false
			}
			p.i++
			p.space()
			if depth == 0 && p.top != nil {
				p.top(p.s[keyStart+1:keyEnd-1], p.i)
			}
			if !p.value(depth + 1) {
				return false
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
			case '}':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		if depth >= jsonMaxDepth {
			return false
		}
		p.i++
		p.space()
		if p.i < len(p.s) && p.s[p.i] == ']' {
			p.i++
			return true
		}
		for {
			if !p.value(depth + 1) {
				return false
			}
			p.space()
			if p.i >= len(p.s) {
				return false
			}
			switch p.s[p.i] {
			case ',':
				p.i++
				p.space()
			case ']':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

func (p *jsonParser) literal(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// strStop marks the bytes that end a run of plain string content: the
// quote, the backslash and the control characters.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str checks a string starting at the quote at p.i.
func (p *jsonParser) str() bool {
	p.i++
	for p.i < len(p.s) {
		// Plain content: eight bytes at a time while none can end it,
		// then byte by byte.
		i, s := skipPlain(p.s, p.i), p.s
		for i < len(s) && !strStop[s[i]] {
			i++
		}
		p.i = i
		if i >= len(s) {
			return false
		}
		c := s[i]
		switch {
		case c == '"':
			p.i++
			return true
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return false
			}
			switch p.s[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.s) || !isHex4(p.s[p.i+2:p.i+6]) {
					return false
				}
				p.i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
	return false
}

// skipPlain returns the index of the first 8-byte block of s from i that
// may hold a quote, a backslash or a control character (or the last
// index from which fewer than 8 bytes remain). Each test flags a byte when
// it is one of those, never missing one (the classic "has a zero byte"
// arithmetic: a block with no flag has none of them).
func skipPlain(s string, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ ('"' * ones)
		bs := x ^ ('\\' * ones)
		if ((q-ones)&^q|(bs-ones)&^bs|(x-0x20*ones)&^x)&highs != 0 {
			return i
		}
	}
	return i
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		if hexVal(s[i]) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func (p *jsonParser) number() bool {
	s, i := p.s, p.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		d := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	p.i = i
	return true
}

// skip moves past the value at p.i of a text already found valid, and
// returns where it started: strings by their closing quote, containers by
// counting brackets outside strings, without checking anything again.
func (p *jsonParser) skip() int {
	start := p.i
	s := p.s
	switch s[p.i] {
	case '"':
		p.i = skipString(s, p.i)
	case '{', '[':
		depth := 0
		for i := p.i; i < len(s); {
			switch s[i] {
			case '"':
				i = skipString(s, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					p.i = i + 1
					return start
				}
			}
			i++
		}
		p.i = len(s)
	default: // a number or a literal: up to the next delimiter
		i := p.i
		for i < len(s) {
			switch s[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				p.i = i
				return start
			}
			i++
		}
		p.i = i
	}
	return start
}

// skipString returns the index after the closing quote of the (valid)
// string whose opening quote is at i.
func skipString(s string, i int) int {
	i++
	for {
		// The next quote, then a backslash before it (rare): two
		// IndexByte calls are several times faster than IndexAny.
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		if k := strings.IndexByte(s[i:i+j], '\\'); k >= 0 {
			i += k + 2 // an escape: its next byte is never the closing quote
			continue
		}
		return i + j + 1
	}
}

// validSubagentTask is jsonValid(s) and, for a valid s, subagentTask(s),
// in one walk of the text: the check notes where the outermost object's
// first "normalized" and "tool_call_id" members begin, and only those
// values are read again.
func validSubagentTask(s string) (valid, kind bool, tc any) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	norm, call := -1, -1
	p := jsonParser{s: s, top: func(key string, value int) {
		if strings.IndexByte(key, '\\') >= 0 {
			key = unescapeJSON(key)
		}
		switch {
		case key == "normalized" && norm < 0:
			norm = value
		case key == "tool_call_id" && call < 0:
			call = value
		}
	}}
	p.space()
	if !p.value(0) {
		return false, false, nil
	}
	p.space()
	if p.i != len(p.s) {
		return false, false, nil
	}
	r := jsonParser{s: s}
	if norm >= 0 && s[norm] == '{' {
		r.i = norm
		kind = r.firstKind()
	}
	if call >= 0 {
		r.i = call
		tc = r.extractValue()
	}
	return true, kind, tc
}

// subagentTask reads, from a valid JSON text, whether
// json_extract(X, '$.normalized.kind') = 'subagent_task', and
// json_extract(X, '$.tool_call_id') as the driver would return it.
func subagentTask(s string) (bool, any) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	p := jsonParser{s: s}
	p.space()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return false, nil
	}
	var (
		kind           bool
		tc             any
		gotNorm, gotTC bool
	)
	p.members(func(key string) {
		switch {
		case key == "normalized" && !gotNorm:
			gotNorm = true
			if p.s[p.i] == '{' {
				kind = p.normalizedKind()
				return
			}
		case key == "tool_call_id" && !gotTC:
			gotTC = true
			tc = p.extractValue()
			return
		}
		p.skip()
	})
	return kind, tc
}

// normalizedKind reads the (valid) object at p.i, moving past it: whether
// its first "kind" member is the string subagent_task.
func (p *jsonParser) normalizedKind() bool {
	kind, found := false, false
	p.members(func(k string) {
		if k == "kind" && !found {
			found = true
			if p.s[p.i] == '"' {
				start := p.skip()
				kind = unescapeJSON(p.s[start+1:p.i-1]) == "subagent_task"
				return
			}
		}
		p.skip()
	})
	return kind
}

// firstKind is normalizedKind without moving past the object: it reads
// the (valid) object at p.i only up to its first "kind" member, where
// normalizedKind reads it to its end.
func (p *jsonParser) firstKind() bool {
	p.i++ // {
	p.space()
	for p.s[p.i] != '}' {
		start := p.i
		p.i = skipString(p.s, p.i)
		key := p.s[start+1 : p.i-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unescapeJSON(key)
		}
		p.space()
		p.i++ // :
		p.space()
		if key == "kind" {
			if p.s[p.i] != '"' {
				return false
			}
			start := p.skip()
			return unescapeJSON(p.s[start+1:p.i-1]) == "subagent_task"
		}
		p.skip()
		p.space()
		if p.s[p.i] == ',' {
			p.i++
			p.space()
		}
	}
	return false
}

// members calls fn for each member of the object at p.i with p.i at the
// member's value; fn must move past the value.
func (p *jsonParser) members(fn func(key string)) {
	p.i++ // {
	p.space()
	if p.s[p.i] == '}' {
		p.i++
		return
	}
	for {
		start := p.i
		p.str()
		key := p.s[start+1 : p.i-1]
		if strings.IndexByte(key, '\\') >= 0 {
			key = unescapeJSON(key)
		}
		p.space()
		p.i++ // :
		p.space()
		fn(key)
		p.space()
		if p.s[p.i] == '}' {
			p.i++
			return
		}
		p.i++ // ,
		p.space()
	}
}

// extractValue is json_extract's result for the value at p.i.
func (p *jsonParser) extractValue() any {
	switch c := p.s[p.i]; {
	case c == '"':
		start := p.skip()
		return unescapeJSON(p.s[start+1 : p.i-1])
	case c == 't':
		p.i += 4
		return int64(1)
	case c == 'f':
		p.i += 5
		return int64(0)
	case c == 'n':
		p.i += 4
		return nil
	case c == '{' || c == '[':
		start := p.skip()
		return minifyJSON(p.s[start:p.i])
	}
	start := p.skip()
	num := p.s[start:p.i]
	if !strings.ContainsAny(num, ".eE") {
		if n, err := strconv.ParseInt(num, 10, 64); err == nil {
			return n
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !math.IsInf(f, 0) {
		return nil
	}
	return f
}

// minifyJSON is a valid JSON text without the whitespace between tokens.
func minifyJSON(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	in := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in:
			b.WriteByte(c)
			if c == '\\' {
				i++
				b.WriteByte(s[i])
			} else if c == '"' {
				in = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			if c == '"' {
				in = true
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeJSON decodes the escapes of a valid JSON string's contents.
func unescapeJSON(s string) string {
	i := strings.IndexByte(s, '\\')
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(s[i+1 : i+5])
			i += 4
			if r >= 0xD800 && r <= 0xDBFF && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if lo := hex4(s[i+3 : i+7]); lo >= 0xDC00 && lo <= 0xDFFF {
					r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					i += 6
				}
			}
			b = appendCodeUnit(b, r)
		default: // " \ /
			b = append(b, s[i])
		}
	}
	return string(b)
}

func hex4(s string) rune {
	var r rune
	for i := 0; i < 4; i++ {
		r = r<<4 | rune(hexVal(s[i]))
	}
	return r
}

// appendCodeUnit writes r in UTF-8, a lone surrogate too (as SQLite does:
// three bytes, which Go's encoder would replace with U+FFFD).
func appendCodeUnit(b []byte, r rune) []byte {
	if r >= 0xD800 && r <= 0xDFFF {
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6)&0x3F, 0x80|byte(r)&0x3F)
	}
	return utf8.AppendRune(b, r)
}
