package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// LoadDump loads a `pg_dump --format=plain` file into database db (which
// must exist) with `psql -v ON_ERROR_STOP=1 -f`, as the superuser over the
// Unix socket.
//
// Dumps from pg_dump 17.6 / 16.10 / 15.14 / 14.19 / 13.22 and later (the
// kandev fixtures come from 15.18) start with `\restrict KEY` and end with
// `\unrestrict KEY`. These meta-commands are a psql-side guard (CVE-2025-8714):
// between them psql refuses every other meta-command, so a malicious source
// server cannot smuggle `\!` shell commands into a dump through crafted
// object names. psql releases older than those reject the lines as
// "invalid command \restrict", and ON_ERROR_STOP aborts the load. When the
// psql found is older, LoadDump feeds psql a copy without those two lines:
// the fixtures are trusted files of this repository loaded into a throwaway
// server, so the guard protects nothing here. When psql understands them the
// file is passed as is (the guard stays on and error line numbers match the
// file).
func (c *Cluster) LoadDump(ctx context.Context, db, path string) error {
	v, err := c.bins.psqlVersion()
	if err != nil {
		return err
	}
	return c.loadDump(ctx, db, path, !understandsRestrict(v))
}

func (c *Cluster) loadDump(ctx context.Context, db, path string, strip bool) error {
	if c.bins.Psql == "" {
		return errors.New("pgtest: psql not found next to initdb nor in PATH")
	}
	src := path
	if strip {
		in, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("pgtest: load dump: %w", err)
		}
		defer in.Close()
		out, err := os.CreateTemp(c.dir, "dump-*.sql")
		if err != nil {
			return fmt.Errorf("pgtest: load dump: %w", err)
		}
		defer os.Remove(out.Name())
		w := bufio.NewWriterSize(out, 1<<16)
		_, err = stripRestrict(w, in)
		if err == nil {
			err = w.Flush()
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("pgtest: copy %s without \\restrict: %w", path, err)
		}
		src = out.Name()
	} else if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("pgtest: load dump: %w", err)
	}

	cmd := exec.CommandContext(ctx, c.bins.Psql,
		"-X",                    // no ~/.psqlrc
		"-q",                    // no "SET", "CREATE TABLE" chatter
		"-v", "ON_ERROR_STOP=1", // first error aborts with a non-zero exit
		"--no-password", // never prompt (there is no stdin in CI)
		"-h", c.dir, "-p", strconv.Itoa(c.port), "-U", Superuser, "-d", db,
		"-f", src)
	cmd.Env = childEnv("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: load %s into database %q: %w; psql output tail:\n%s",
			path, db, err, tail(out, logTailLines))
	}
	return nil
}

// stripRestrict copies a plain-format dump from r to w without its
// `\restrict KEY` and `\unrestrict KEY` lines, and reports how many lines it
// dropped. Lines inside COPY ... FROM stdin data are copied untouched (there
// `\r` is an escaped carriage return, so a row may legitimately start with
// `\restrict`).
func stripRestrict(w io.Writer, r io.Reader) (int, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	inCopy := false
	dropped := 0
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			body := strings.TrimRight(line, "\r\n")
			switch {
			case inCopy:
				if body == `\.` {
					inCopy = false
				}
			case strings.HasPrefix(body, "COPY ") && strings.HasSuffix(body, "FROM stdin;"):
				inCopy = true
			case isRestrictLine(body):
				dropped++
				line = ""
			}
			if _, werr := io.WriteString(w, line); werr != nil {
				return dropped, werr
			}
		}
		if err == io.EOF {
			return dropped, nil
		}
		if err != nil {
			return dropped, err
		}
	}
}

func isRestrictLine(s string) bool {
	for _, cmd := range []string{`\restrict`, `\unrestrict`} {
		if s == cmd || strings.HasPrefix(s, cmd+" ") {
			return true
		}
	}
	return false
}
