package evidence

import (
	"database/sql"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// jsonCorpus: the edge cases of SQLite's JSON parser the message pass
// must agree with.
var jsonCorpus = []string{
	`{}`, ` {} `, "{}\n", "\t[1]\r\n", `{"a":1}`, `{"a" :1 , "b":[ ]}`, `[]`, `[1,2]`, `""`, `"x"`, `1`, `-0`, `-0.0`, `0.5e-3`,
	`1.5E+3`, `1e400`, `-1e400`, `1e-400`, `12345678901234567890`, `-9223372036854775808`, `9223372036854775807`,
	`9223372036854775808`, `-9223372036854775809`, `true`, `false`, `null`, `tru`, `nul`, `01`, `1.`, `.5`, `-`, `+1`,
	`1e`, `1e+`, `0x10`, `NaN`, `Infinity`, `[1,]`, `{"a":1,}`, `{a:1}`, `{'a':1}`, `{"a"}`, `{"a":}`, `{"a" 1}`, `[1 2]`,
	`"\x"`, `"\'"`, `"\u12"`, `"\uZZZZ"`, `"\u00e9"`, `"\/"`, `"a` + "\t" + `"`, `"a` + "\x01" + `"`, "\"\x7f\"",
	"\"\x80\xff\"", "[1]\x00garbage", "\x00", "", "  ", "\f[1]", "[1]\v", "\u00a0[1]", "\ufeff[1]", "// c\n[1]", "/*c*/[1]",
	`{"a":1}garbage`, `{"a":1}}`, `[[[]]]`, `{"a":{"b":{"c":[1,{"d":null}]}}}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"toolu_1"}`,
	`{"normalized":{"a":{"kind":"x"},"b":[1,"}\"kind\":"],"kind":"subagent_task"}}`,
	`{"normalized":{ "a" : 1 , "kind" : "subagent_task" , "z":2 }}`, `{"normalized":{ }}`, `{"normalized":{"a":1}}`,
	`{"normalized":{"a":{"kind":"subagent_task"}}}`, `{"normalized":{"ki\u006ed":"subagent_task"}}`,
	`{"normalized":{"kind":"subagent_task\u0000"}}`, `{"normalized":{"kind":"subagent_task"` + "\x00" + `"}}`,
	`{"normalized":{"kind":"subagent\u005ftask"},"tool_call_id":"t\u0041"}`,
	`{"normalized":{"kind":"subagent_task","kind":"other"},"tool_call_id":"first","tool_call_id":"second"}`,
	`{"normalized":{"kind":"other","kind":"subagent_task"}}`,
	`{"normalized":1,"normalized":{"kind":"subagent_task"}}`,
	`{"normalized":{"kind":"subagent_task"}}`, `{"tool_call_id":"x"}`, `{"normalized":["subagent_task"]}`,
	`{"normalized":{"kind":["subagent_task"]}}`, `{"normalized":{"kind":"subagent_task "}}`,
	`{"norm\u0061lized":{"k\u0069nd":"subagent_task"},"tool\u005fcall_id":"esc-key"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":42}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":-0}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":4.5e1}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":1e400}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":12345678901234567890}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":true}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":false}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":null}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":""}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id": { "a" : [ 1 , "b\"c" , {"d":"\u00e9\/"} ] } }`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":[ ]}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"\ud83d\ude00"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"\ud800x"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"\ud800\u0041"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"\udc00"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"\ud83d"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"a\u0000b"}`,
	`{"normalized":{"kind":"subagent_task"},"tool_call_id":"\b\f\n\r\t\"\\"}`,
	"{\"normalized\":{\"kind\":\"subagent_task\"},\"tool_call_id\":\"\xe9\xff\"}",
	`[{"normalized":{"kind":"subagent_task"},"tool_call_id":"in-array"}]`,
	`{"normalized":{"kind":"subagent_task","subagent_task":{"description":"Explore","prompt":"Search \"x\"","is_async":true}},"status":"complete","tool_call_id":"toolu_01b7GEE5lihXImmTDq3IXN8z"}`,
	strings.Repeat("[", 999) + strings.Repeat("]", 999), strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
	strings.Repeat("[", 1001) + strings.Repeat("]", 1001), strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000),
	strings.Repeat(`{"a":`, 1001) + "1" + strings.Repeat("}", 1001),
	`{"tool_call_id":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `,"normalized":{"kind":"subagent_task"}}`,
}

// sqliteJSON is what SQLite says of a TEXT value: json_valid, and for a
// valid one whether the kind is subagent_task and the tool_call_id.
func sqliteJSON(t *testing.T, db *sql.DB, s string) (bool, bool, any) {
	t.Helper()
	var valid int64
	var kind sql.NullInt64
	var tc any
	err := db.QueryRow(`SELECT json_valid(?1), CASE WHEN json_valid(?1) THEN json_extract(?1, '$.normalized.kind') = 'subagent_task' END,
		CASE WHEN json_valid(?1) THEN json_extract(?1, '$.tool_call_id') END`, s).Scan(&valid, &kind, &tc)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	if b, ok := tc.([]byte); ok {
		tc = string(b)
	}
	return valid == 1, kind.Valid && kind.Int64 == 1, tc
}

func checkJSON(t *testing.T, db *sql.DB, s string) bool {
	t.Helper()
	wantValid, wantKind, wantTC := sqliteJSON(t, db, s)
	if got := jsonValid(s); got != wantValid {
		t.Errorf("jsonValid(%q) = %v, SQLite says %v", clipText(s), got, wantValid)
		return false
	}
	if valid, k, v := validSubagentTask(s); valid != wantValid || (valid && (k != wantKind || !sameSQLValue(v, wantTC))) {
		t.Errorf("validSubagentTask(%q) = %v, %v, %#v; SQLite says %v, %v, %#v", clipText(s), valid, k, v, wantValid, wantKind, wantTC)
		return false
	}
	if !wantValid {
		return true
	}
	kind, tc := subagentTask(s)
	if kind != wantKind {
		t.Errorf("kind of %q: %v, SQLite says %v", clipText(s), kind, wantKind)
		return false
	}
	if !sameSQLValue(tc, wantTC) {
		t.Errorf("tool_call_id of %q: %#v, SQLite says %#v", clipText(s), tc, wantTC)
		return false
	}
	return true
}

// sameSQLValue compares as the message pass hashes: the storage class and
// the value (an integral REAL equals its INTEGER).
func sameSQLValue(a, b any) bool {
	x, y := classifyValue(a), classifyValue(b)
	return x.tag == y.tag && x.s == y.s && x.n == y.n && x.isNu == y.isNu
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}

func TestJSONScanMatchesSQLite(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, s := range jsonCorpus {
		checkJSON(t, db, s)
	}
	// Random mutations of the corpus: a deterministic stream, so a failure
	// is reproducible.
	r := rand.New(rand.NewPCG(18, 2026))
	alphabet := []string{`{`, `}`, `[`, `]`, `"`, `\`, `:`, `,`, ` `, "\t", "\n", "\x00", "\x01", `u`, `0`, `1`, `9`, `-`, `+`, `.`,
		`e`, `E`, `a`, `f`, `t`, `n`, `\u`, `\ud800`, `\udc00`, "\xc3\xa9", "\xff", `subagent_task`, `"kind"`, `"normalized"`, `"tool_call_id"`, `true`, `null`}
	n := 20000
	if testing.Short() {
		n = 2000
	}
	failures := 0
	for i := 0; i < n && failures < 10; i++ {
		s := jsonCorpus[r.IntN(len(jsonCorpus))]
		if len(s) > 600 {
			s = s[:r.IntN(600)]
		}
		for k := 1 + r.IntN(3); k > 0; k-- {
			pos := 0
			if len(s) > 0 {
				pos = r.IntN(len(s) + 1)
			}
			switch r.IntN(4) {
			case 0: // insert
				s = s[:pos] + alphabet[r.IntN(len(alphabet))] + s[pos:]
			case 1: // delete
				if pos < len(s) {
					s = s[:pos] + s[pos+1+r.IntN(min(3, len(s)-pos)):]
				}
			case 2: // replace a byte
				if pos < len(s) {
					s = s[:pos] + alphabet[r.IntN(len(alphabet))] + s[pos+1:]
				}
			case 3: // duplicate a span
				if pos < len(s) {
					end := pos + r.IntN(min(20, len(s)-pos)) + 1
					s = s[:end] + s[pos:end] + s[end:]
				}
			}
		}
		if !checkJSON(t, db, s) {
			failures++
		}
	}
	// Numbers in every shape.
	for _, x := range []float64{0, 1, -1, 0.1, 1e15, 1e16, 1e17, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, 123.456e-7} {
		for _, f := range []byte{'e', 'E', 'f', 'g'} {
			checkJSON(t, db, `{"normalized":{"kind":"subagent_task"},"tool_call_id":`+strings.TrimPrefix(fmt.Sprint(strconvFloat(x, f)), "+")+`}`)
		}
	}
}

func strconvFloat(x float64, f byte) string {
	s := fmt.Sprintf("%"+string(f), x)
	return s
}

// TestSkipPlainNeverSkipsAStop: the 8-byte skip of a string's plain
// content passes no quote, backslash or control character, wherever it
// stands among plain ASCII or UTF-8 bytes, and stops only within the last
// 8 bytes of a string that has none.
func TestSkipPlainNeverSkipsAStop(t *testing.T) {
	for _, fill := range []byte{'a', 0x7f, 0x80, 0xc3, 0xff, '!', '#', '[', ']'} {
		plain := strings.Repeat(string([]byte{fill}), 29)
		if got := skipPlain(plain, 0); got < len(plain)-7 {
			t.Fatalf("fill %#x: stopped at %d of %d with nothing to stop at", fill, got, len(plain))
		}
		for v := 0; v < 256; v++ {
			for pos := 0; pos < len(plain); pos++ {
				b := []byte(plain)
				b[pos] = byte(v)
				for start := 0; start <= pos; start++ {
					got := skipPlain(string(b), start)
					if strStop[v] && got > pos {
						t.Fatalf("fill %#x: %#x at %d skipped from %d to %d", fill, v, pos, start, got)
					}
					if !strStop[v] && got < len(b)-7 {
						t.Fatalf("fill %#x: plain %#x at %d: stopped at %d from %d", fill, v, pos, got, start)
					}
				}
			}
		}
	}
}
