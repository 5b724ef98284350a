// Command kxmem is the child process of the membound tests, built by them
// without the race detector so that the peak RSS it reports is the
// extractor's own (the race detector's shadow memory, and its slowness in
// SQLite's transpiled C, would swamp both figures).
//
//	kxmem sqlite FILE   runs the SQL statements read from stdin (one per
//	                    line group, separated by a line "--;") on FILE
//	kxmem run JOB       runs one extraction (JOB: JSON {Source, Warehouse,
//	                    Installation}) and prints a JSON report with the
//	                    process's peak RSS (VmHWM)
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/kandev/kandev-extract/pipeline"
)

// Report is what `kxmem run` prints.
type Report struct {
	VmHWMKiB int64  // peak resident set, from /proc/self/status
	RunID    string // the installation's run
	Err      string
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kxmem sqlite FILE | kxmem run JOB")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "sqlite":
		err = runSQL(os.Args[2], os.Stdin)
	case "run":
		err = extract(os.Args[2])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kxmem:", err)
		os.Exit(1)
	}
}

func runSQL(path string, in io.Reader) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var stmt strings.Builder
	flush := func() error {
		q := strings.TrimSpace(stmt.String())
		stmt.Reset()
		if q == "" {
			return nil
		}
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}
	for sc.Scan() {
		if sc.Text() == "--;" {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		stmt.WriteString(sc.Text() + "\n")
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	return db.Close()
}

func extract(job string) error {
	var in struct{ Source, Warehouse, Installation string }
	if err := json.Unmarshal([]byte(job), &in); err != nil {
		return err
	}
	var rep Report
	res, err := pipeline.Run(context.Background(), pipeline.Options{
		Warehouse:     in.Warehouse,
		Installations: []pipeline.Installation{{Name: in.Installation, Source: in.Source}},
	})
	switch {
	case err != nil:
		rep.Err = err.Error()
	case len(res.Outcomes) != 1:
		rep.Err = fmt.Sprintf("%d outcomes", len(res.Outcomes))
	default:
		rep.RunID = res.Outcomes[0].RunID
		if e := res.Outcomes[0].Err; e != nil {
			rep.Err = e.Error()
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			rep.VmHWMKiB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(rep)
}
