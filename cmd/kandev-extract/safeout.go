package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-isatty"

	"github.com/kandev/kandev-extract/report"
)

// openWarehouse is how every command reads warehouse.duckdb (status,
// query; report through report.Load): attached read-only, with no access
// to any other file unless allowFiles, and with its configuration locked
// before any SQL of the caller's runs. See report.OpenWarehouse.
func openWarehouse(ctx context.Context, path string, allowFiles bool) (*sql.DB, error) {
	return report.OpenWarehouse(ctx, path, allowFiles)
}

// Text that reaches a terminal comes from stores, warehouses, paths and
// errors that quote them: a model name may hold "\x1b]0;pwned\x07" or a
// right-to-left override. Every human-readable line the CLI prints goes
// through termSafe, which writes each control character visibly instead.

// unsafeRune reports whether r must not reach a terminal raw: C0 controls
// (every one, tab and newline included), DEL, C1 controls, and the bidi
// embedding, override and isolate controls, which reorder what is shown.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// termSafe returns s with every unsafe rune written as an escape (\t, \n,
// \r, \x1b, \u009b, \u202e) and every byte that is not UTF-8 as \xNN.
// Anything else, backslashes included, is left as it is.
func termSafe(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r) || (r == utf8.RuneError && n == 1) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// termSafeLines is termSafe for a message of several lines (an error with
// DuckDB's "LINE 1:" context): each line is escaped, the line breaks kept.
func termSafeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termSafe(l)
	}
	return strings.Join(lines, "\n")
}

// safeArgs escapes every text argument of a print: strings (named string
// types too) and errors. Numbers, times and durations cannot carry a
// control character and are passed as they are.
func safeArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case nil:
			out[i] = a
		case string:
			out[i] = termSafe(x)
		case error:
			out[i] = termSafe(x.Error())
		case *string:
			if x == nil {
				out[i] = a
			} else {
				out[i] = termSafe(*x)
			}
		default:
			if v := reflect.ValueOf(a); v.Kind() != reflect.String {
				out[i] = a
			} else if st, ok := a.(fmt.Stringer); ok {
				out[i] = termSafe(st.String())
			} else {
				out[i] = termSafe(v.String())
			}
		}
	}
	return out
}

// printSafe is fmt.Fprintf for human-readable output: the format is the
// program's own text, every argument is escaped by termSafe.
func printSafe(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, format, safeArgs(args)...)
}

// printlnSafe is fmt.Fprintln with every argument escaped by termSafe.
func printlnSafe(w io.Writer, args ...any) {
	fmt.Fprintln(w, safeArgs(args)...)
}

// writeJSON writes v as indented JSON with the characters encoding/json
// leaves raw and a terminal would act on (DEL, C1 controls, bidi
// controls) written as \u escapes: the same JSON value, safe to print.
// encoding/json already escapes C0 controls and invalid UTF-8.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

// writeJSONLine writes v as one line of JSON (JSON Lines), escaped like
// writeJSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(jsonSafe(b), '\n'))
	return err
}

// jsonSafe rewrites, in encoded JSON, each unsafe rune as a \u escape.
// Such runes can only occur inside JSON strings (the syntax is ASCII), so
// the result decodes to the same value.
func jsonSafe(b []byte) []byte {
	var out []byte
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r >= 0x7f && unsafeRune(r) {
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		} else if out != nil {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

// jsonSafeWriter applies jsonSafe to each write of a JSON log handler (one
// record per write).
type jsonSafeWriter struct{ w io.Writer }

func (j jsonSafeWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(jsonSafe(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// stdoutTerminal reports whether stdout is a terminal.
func (g *globals) stdoutTerminal() bool {
	f, ok := g.stdout.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}
