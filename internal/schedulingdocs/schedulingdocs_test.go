package schedulingdocs

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	plistFile = "com.github.kandev.kandev-extract.plist"
	taskFile  = "kandev-extract-task.xml"
	taskNS    = "http://schemas.microsoft.com/windows/2004/02/mit/task"
)

// root is the repository root (this package is internal/schedulingdocs).
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func read(t *testing.T, rel ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(append([]string{root(t)}, rel...)...))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// node is a generic XML element.
type node struct {
	name     xml.Name
	attrs    []xml.Attr
	children []*node
	text     string
}

// parse reads a whole XML document strictly (encoding/xml's default) and
// returns its single root element.
func parse(t *testing.T, name, doc string) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	var stack []*node
	var top *node
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: not well-formed XML: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name, attrs: tok.Attr}
			if len(stack) == 0 {
				if top != nil {
					t.Fatalf("%s: more than one root element", name)
				}
				top = n
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text += string(tok)
			} else if strings.TrimSpace(string(tok)) != "" {
				t.Fatalf("%s: text outside the root element", name)
			}
		}
	}
	if top == nil {
		t.Fatalf("%s: no root element", name)
	}
	return top
}

func (n *node) attr(local string) string {
	for _, a := range n.attrs {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}

func (n *node) value() string { return strings.TrimSpace(n.text) }

// plistValue is a decoded property-list value.
type plistValue struct {
	kind  string // string, integer, real, true, false, date, data, array, dict
	str   string
	array []plistValue
	dict  map[string]plistValue
}

// plistDecode decodes a property-list value element, checking its type
// and, for a dict, that keys and values alternate and keys are unique.
func plistDecode(t *testing.T, n *node) plistValue {
	t.Helper()
	v := plistValue{kind: n.name.Local}
	switch n.name.Local {
	case "string", "date", "data":
		v.str = n.text
	case "integer":
		v.str = n.value()
		if _, err := strconv.ParseInt(v.str, 10, 64); err != nil {
			t.Fatalf("<integer>%s</integer>: %v", v.str, err)
		}
	case "real":
		v.str = n.value()
		if _, err := strconv.ParseFloat(v.str, 64); err != nil {
			t.Fatalf("<real>%s</real>: %v", v.str, err)
		}
	case "true", "false":
		if len(n.children) != 0 || n.value() != "" {
			t.Fatalf("<%s/> must be empty", n.name.Local)
		}
	case "array":
		for _, c := range n.children {
			v.array = append(v.array, plistDecode(t, c))
		}
	case "dict":
		v.dict = map[string]plistValue{}
		if len(n.children)%2 != 0 {
			t.Fatalf("<dict> has %d elements: keys and values must alternate", len(n.children))
		}
		for i := 0; i < len(n.children); i += 2 {
			k := n.children[i]
			if k.name.Local != "key" {
				t.Fatalf("<dict> element %d is <%s>, want <key>", i, k.name.Local)
			}
			if _, dup := v.dict[k.text]; dup {
				t.Fatalf("<dict> has key %q twice", k.text)
			}
			v.dict[k.text] = plistDecode(t, n.children[i+1])
		}
	default:
		t.Fatalf("<%s> is not a property-list value", n.name.Local)
	}
	return v
}

func checkCalendarInterval(t *testing.T, v plistValue) (hour, minute int) {
	t.Helper()
	if v.kind != "dict" {
		t.Fatalf("StartCalendarInterval is a %s, want a dict", v.kind)
	}
	limits := map[string]int{"Minute": 59, "Hour": 23, "Day": 31, "Weekday": 7, "Month": 12}
	for k, e := range v.dict {
		max, ok := limits[k]
		if !ok {
			t.Errorf("StartCalendarInterval has unknown key %q", k)
			continue
		}
		n, err := strconv.Atoi(e.str)
		if e.kind != "integer" || err != nil || n < 0 || n > max {
			t.Errorf("StartCalendarInterval.%s = %s %q, want an integer 0..%d", k, e.kind, e.str, max)
		}
	}
	hour, _ = strconv.Atoi(v.dict["Hour"].str)
	minute, _ = strconv.Atoi(v.dict["Minute"].str)
	if _, ok := v.dict["Hour"]; !ok {
		t.Error("StartCalendarInterval has no Hour: it would run every hour")
	}
	return hour, minute
}

// The launchd agent: a well-formed plist with the keys launchd needs, that
// runs `kandev-extract run` nightly on Kandev's default store.
func TestLaunchdAgent(t *testing.T) {
	doc := read(t, "docs", "scheduling", plistFile)
	top := parse(t, plistFile, doc)
	if top.name.Local != "plist" || top.attr("version") != "1.0" || len(top.children) != 1 {
		t.Fatalf("root is <%s version=%q> with %d children, want <plist version=\"1.0\"> holding one <dict>",
			top.name.Local, top.attr("version"), len(top.children))
	}
	if !strings.Contains(doc, `<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">`) {
		t.Error("the plist DOCTYPE is missing")
	}
	agent := plistDecode(t, top.children[0])
	if agent.kind != "dict" {
		t.Fatalf("the plist holds a %s, want a dict", agent.kind)
	}
	for _, k := range []string{"Label", "ProgramArguments", "StartCalendarInterval"} {
		if _, ok := agent.dict[k]; !ok {
			t.Errorf("required key %s is missing", k)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	label := agent.dict["Label"]
	if label.kind != "string" || label.str+".plist" != plistFile {
		t.Errorf("Label = %s %q, want the file's name without .plist (launchd's convention)", label.kind, label.str)
	}

	args := agent.dict["ProgramArguments"]
	if args.kind != "array" || len(args.array) == 0 {
		t.Fatalf("ProgramArguments is a %s of %d, want a non-empty array", args.kind, len(args.array))
	}
	var argv []string
	for i, a := range args.array {
		if a.kind != "string" {
			t.Fatalf("ProgramArguments[%d] is a %s, want a string", i, a.kind)
		}
		argv = append(argv, a.str)
	}
	if !strings.HasPrefix(argv[0], "/") {
		t.Errorf("ProgramArguments[0] = %q: launchd needs an absolute path", argv[0])
	}
	// launchd expands neither ~ nor $HOME, so a $HOME needs a shell.
	if argv[0] != "/bin/sh" && strings.Contains(strings.Join(argv, " "), "$HOME") {
		t.Errorf("ProgramArguments use $HOME without a shell: %q", argv)
	}
	command := strings.Join(argv, " ")
	for _, want := range []string{
		"kandev-extract\" run ",
		`--source "$HOME/.kandev/data/kandev.db"`, // Kandev's default store on macOS
		"--warehouse ",
		"--wait ",
	} {
		if !strings.Contains(command, want) {
			t.Errorf("the agent's command lacks %q:\n%s", want, command)
		}
	}

	hour, minute := checkCalendarInterval(t, agent.dict["StartCalendarInterval"])
	if hour != 2 || minute != 0 {
		t.Errorf("runs at %02d:%02d, want 02:00 (as the Windows task and the docs)", hour, minute)
	}
	for k, kind := range map[string]string{"RunAtLoad": "false", "ProcessType": "string", "LowPriorityIO": "true", "Nice": "integer"} {
		if v, ok := agent.dict[k]; ok && v.kind != kind {
			t.Errorf("%s is a %s, want %s", k, v.kind, kind)
		}
	}
}

// Task is the part of a Task Scheduler task definition the test checks.
type Task struct {
	XMLName  xml.Name `xml:"http://schemas.microsoft.com/windows/2004/02/mit/task Task"`
	Version  string   `xml:"version,attr"`
	Triggers struct {
		Calendar []struct {
			StartBoundary string `xml:"StartBoundary"`
			Enabled       string `xml:"Enabled"`
			DaysInterval  string `xml:"ScheduleByDay>DaysInterval"`
		} `xml:"CalendarTrigger"`
		Any []struct {
			XMLName xml.Name
		} `xml:",any"` // every other kind of trigger
	} `xml:"Triggers"`
	Principals struct {
		Principal []struct {
			ID        string `xml:"id,attr"`
			LogonType string `xml:"LogonType"`
			RunLevel  string `xml:"RunLevel"`
		} `xml:"Principal"`
	} `xml:"Principals"`
	Settings struct {
		MultipleInstancesPolicy    string `xml:"MultipleInstancesPolicy"`
		DisallowStartIfOnBatteries string `xml:"DisallowStartIfOnBatteries"`
		StartWhenAvailable         string `xml:"StartWhenAvailable"`
		ExecutionTimeLimit         string `xml:"ExecutionTimeLimit"`
		Enabled                    string `xml:"Enabled"`
	} `xml:"Settings"`
	Actions struct {
		Context string `xml:"Context,attr"`
		Exec    []struct {
			Command          string `xml:"Command"`
			Arguments        string `xml:"Arguments"`
			WorkingDirectory string `xml:"WorkingDirectory"`
		} `xml:"Exec"`
	} `xml:"Actions"`
}

func readTask(t *testing.T) (Task, string) {
	t.Helper()
	doc := read(t, "docs", "scheduling", taskFile)
	top := parse(t, taskFile, doc) // well-formed, one root
	if top.name.Space != taskNS || top.name.Local != "Task" {
		t.Fatalf("root is {%s}%s, want {%s}Task", top.name.Space, top.name.Local, taskNS)
	}
	var task Task
	if err := xml.Unmarshal([]byte(doc), &task); err != nil {
		t.Fatalf("%s: %v", taskFile, err)
	}
	return task, doc
}

// The Task Scheduler task: well-formed, in the task namespace, one daily
// calendar trigger at 02:00 and one action running `kandev-extract run` on
// Kandev's default store on Windows.
func TestWindowsTask(t *testing.T) {
	task, doc := readTask(t)
	if !strings.HasPrefix(doc, `<?xml version="1.0" encoding="UTF-8"?>`) {
		t.Error("the task file must declare its encoding (UTF-8) in an XML declaration")
	}
	if task.Version != "1.2" {
		t.Errorf("Task version %q, want 1.2 (Windows 7 and later)", task.Version)
	}

	if len(task.Triggers.Any) != 0 || len(task.Triggers.Calendar) != 1 {
		t.Fatalf("%d calendar triggers and %d others; want one calendar trigger", len(task.Triggers.Calendar), len(task.Triggers.Any))
	}
	tr := task.Triggers.Calendar[0]
	start, err := time.Parse("2006-01-02T15:04:05", tr.StartBoundary)
	if err != nil {
		t.Errorf("StartBoundary %q: want local time without an offset: %v", tr.StartBoundary, err)
	} else if start.Hour() != 2 || start.Minute() != 0 {
		t.Errorf("the trigger starts at %s, want 02:00 (as the launchd agent and the docs)", start.Format("15:04"))
	}
	if tr.DaysInterval != "1" || tr.Enabled != "true" {
		t.Errorf("trigger: DaysInterval %q, Enabled %q; want every day (1), enabled", tr.DaysInterval, tr.Enabled)
	}

	if len(task.Principals.Principal) != 1 || task.Principals.Principal[0].ID != task.Actions.Context {
		t.Errorf("want one principal whose id is the actions' Context %q", task.Actions.Context)
	}
	s := task.Settings
	if s.MultipleInstancesPolicy != "IgnoreNew" || s.DisallowStartIfOnBatteries != "false" || s.StartWhenAvailable != "true" {
		t.Errorf("settings: MultipleInstancesPolicy %q, DisallowStartIfOnBatteries %q, StartWhenAvailable %q; want IgnoreNew, false (laptops), true (catch up a missed night)",
			s.MultipleInstancesPolicy, s.DisallowStartIfOnBatteries, s.StartWhenAvailable)
	}

	if len(task.Actions.Exec) != 1 {
		t.Fatalf("%d Exec actions, want 1", len(task.Actions.Exec))
	}
	ex := task.Actions.Exec[0]
	if !strings.HasSuffix(ex.Command, `\kandev-extract.exe`) || strings.Contains(ex.Command, `"`) {
		t.Errorf("Command %q: want the path of kandev-extract.exe, unquoted (Task Scheduler quotes it)", ex.Command)
	}
	for _, want := range []string{
		"run ",
		`--source "%USERPROFILE%\.kandev\data\kandev.db"`, // Kandev's default store on Windows
		"--warehouse ",
		"--wait ",
	} {
		if !strings.Contains(ex.Arguments, want) {
			t.Errorf("Arguments lack %q: %s", want, ex.Arguments)
		}
	}
	if !strings.HasPrefix(ex.Arguments, "run ") {
		t.Errorf("Arguments %q: want the run command first", ex.Arguments)
	}
	if ex.WorkingDirectory == "" {
		t.Error("no WorkingDirectory: Task Scheduler would start in C:\\Windows\\System32")
	}
}

// fencedBlocks returns the contents of the markdown file's fenced code
// blocks with the given info string.
func fencedBlocks(md, info string) []string {
	var out []string
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " ") != "```"+info {
			continue
		}
		var b strings.Builder
		for i++; i < len(lines) && strings.TrimRight(lines[i], " ") != "```"; i++ {
			b.WriteString(lines[i])
			b.WriteByte('\n')
		}
		out = append(out, b.String())
	}
	return out
}

// docs/operations.md shows each file exactly as it is, so the page and
// the files cannot drift apart.
func TestOperationsEmbedsTheFiles(t *testing.T) {
	md := read(t, "docs", "operations.md")
	blocks := fencedBlocks(md, "xml")
	for _, f := range []string{plistFile, taskFile} {
		want := read(t, "docs", "scheduling", f)
		n := 0
		for _, b := range blocks {
			if b == want {
				n++
			}
		}
		if n != 1 {
			t.Errorf("docs/operations.md shows docs/scheduling/%s verbatim in %d ```xml blocks, want exactly 1; copy the file's contents into the page", f, n)
		}
		if !strings.Contains(md, "docs/scheduling/"+f) && !strings.Contains(md, "scheduling/"+f) {
			t.Errorf("docs/operations.md does not name scheduling/%s", f)
		}
	}
	if label := strings.TrimSuffix(plistFile, ".plist"); strings.Count(md, "gui/$(id -u)/"+label) < 1 {
		t.Errorf("docs/operations.md has no launchctl command for gui/$(id -u)/%s", label)
	}
}

// schtasksLine matches the one-line schtasks command in the docs.
var schtasksLine = regexp.MustCompile(`(?m)^schtasks /Create /TN kandev-extract /SC DAILY /ST (\d\d:\d\d) /TR "(.*)"$`)

// The one-line schtasks equivalent in the docs runs the same command as
// the task file's action, at the same time.
func TestSchtasksOneLinerMatchesTheTask(t *testing.T) {
	task, _ := readTask(t)
	md := read(t, "docs", "operations.md")
	m := schtasksLine.FindAllStringSubmatch(md, -1)
	if len(m) != 1 {
		t.Fatalf("docs/operations.md has %d lines `schtasks /Create /TN kandev-extract /SC DAILY /ST hh:mm /TR \"...\"`, want 1", len(m))
	}
	if m[0][1] != "02:00" {
		t.Errorf("the one-liner runs at %s, want 02:00", m[0][1])
	}
	tr := strings.ReplaceAll(m[0][2], `\"`, `"`)
	ex := task.Actions.Exec[0]
	if want := `"` + ex.Command + `" ` + ex.Arguments; tr != want {
		t.Errorf("the one-liner's /TR runs\n  %s\nthe task file runs\n  %s", tr, want)
	}
	if len(tr) > 261 {
		t.Errorf("/TR is %d characters; schtasks accepts at most 261", len(tr))
	}
	if !bytes.Contains([]byte(md), []byte("schtasks /Create /TN kandev-extract /XML")) {
		t.Error("docs/operations.md does not show how to register the task file (schtasks /Create ... /XML)")
	}
}
