package load

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver

	"github.com/kandev/kandev-extract/models"
)

// baseComments describe the base views.
var baseComments = map[string]string{
	"fact_subagent_context":   "Subagent invocations with their classification (latest committed run per installation).",
	"fact_installation_state": "One row per installation: activation keys raw and parsed, table shape, activation state.",
	"dim_task":                "Tasks (cards): structure only, no titles or descriptions.",
	"dim_session":             "Exactly the rows of task_sessions (subagents are not sessions), with per-session fan-out and completeness.",
	"dim_turn":                "Turns with per-turn fan-out and completeness, and the workflow step at the turn's start.",
	"dim_workflow":            "Workflows.",
	"dim_workflow_step":       "Workflow steps.",
	"disclosures":             "Per installation, each rule that applies to its data, in plain words, with the instants and counts.",
	"fact_writer_health":      "Writer-health evaluation per installation and run (see writer_health).",
	"rejects":                 "Source values the extractor refused or flagged: table, row id, column, raw value, reason, and the action: quarantined_row (not in the fact), nulled_value (kept as NULL), replaced_value (repaired, e.g. invalid UTF-8), flagged (kept as is: orphan, duplicate key, non-UTC offset).",
}

// BuildDatabase rebuilds warehouse.duckdb from the committed manifests. It
// builds a new file beside the old one and renames it into place, so an
// analyst holding the old file open is never blocked and never sees a half
// build; the old file stays readable to them until they reopen.
func BuildDatabase(ctx context.Context, dir string) error {
	manifests, err := ReadManifests(dir)
	if err != nil {
		return err
	}
	files := map[string][]string{}
	var committed []models.Manifest
	for _, m := range manifests {
		if m.Status != models.RunCommitted {
			continue
		}
		committed = append(committed, m)
		for t, rel := range m.Files {
			files[t] = append(files[t], filepath.Join(dir, rel))
		}
	}
	final := filepath.Join(dir, DatabaseFile)
	tmp := final + ".tmp"
	os.Remove(tmp)
	os.Remove(tmp + ".wal")
	if err := buildInto(ctx, tmp, manifests, files, committed); err != nil {
		os.Remove(tmp)
		os.Remove(tmp + ".wal")
		return fmt.Errorf("build %s: %w", final, err)
	}
	if err := syncFilePath(tmp); err != nil {
		return fmt.Errorf("build %s: %w", final, err)
	}
	CrashPoint("database built")
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("build %s: %w", final, err)
	}
	syncDir(dir)
	return nil
}

func syncFilePath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

func buildInto(ctx context.Context, path string, manifests []models.Manifest, files map[string][]string, committed []models.Manifest) error {
	db, err := sql.Open("duckdb", path)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	exec := func(q string, args ...any) error {
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%w\n  in: %s", err, firstLine(q))
		}
		return nil
	}
	if err := createRuns(ctx, conn, manifests); err != nil {
		return err
	}
	if err := exec(`CREATE VIEW current_runs AS
		SELECT installation_id, arg_max(run_id, finished_at) AS run_id, max(finished_at) AS finished_at
		FROM runs WHERE status = 'committed' GROUP BY installation_id`); err != nil {
		return err
	}
	if err := exec(`COMMENT ON VIEW current_runs IS 'The latest committed run of each installation: what every current view reads.'`); err != nil {
		return err
	}
	if len(committed) > 0 {
		for _, t := range baseTables {
			list := files[t]
			if len(list) == 0 {
				return fmt.Errorf("no committed file for table %s", t)
			}
			sort.Strings(list)
			if err := exec(`CREATE VIEW ` + t + `_history AS SELECT * FROM read_parquet(` +
				sqlList(list) + `, union_by_name = true, hive_partitioning = false)`); err != nil {
				return err
			}
			if err := exec(`CREATE VIEW ` + t + ` AS SELECT h.* FROM ` + t + `_history h
				SEMI JOIN current_runs c ON h.installation_id = c.installation_id AND h.run_id = c.run_id`); err != nil {
				return err
			}
		}
		for _, v := range analyticViews {
			if err := exec(`CREATE VIEW ` + v.name + ` AS ` + v.sql); err != nil {
				return err
			}
		}
		if err := comment(ctx, conn); err != nil {
			return err
		}
	}
	return exec(`CHECKPOINT`)
}

func createRuns(ctx context.Context, conn *sql.Conn, manifests []models.Manifest) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE runs (
		run_id VARCHAR NOT NULL, installation_id VARCHAR NOT NULL, status VARCHAR NOT NULL, error VARCHAR,
		started_at TIMESTAMPTZ, finished_at TIMESTAMPTZ, duration_ms BIGINT,
		source_dialect VARCHAR, source_location VARCHAR, kandev_version VARCHAR, snapshot_at TIMESTAMPTZ,
		activation_state VARCHAR, subagent_rows BIGINT, rejected_values BIGINT, extractor_version VARCHAR,
		PRIMARY KEY (installation_id, run_id))`); err != nil {
		return err
	}
	for _, m := range manifests {
		var (
			dialect, location, version, activation, extractor any
			snapshot, subagents, rejected                     any
		)
		if p := m.Provenance; p != nil {
			dialect, location, activation, extractor = string(p.SourceDialect), p.SourceLocation, string(p.ActivationState), p.ExtractorVersion
			if p.KandevVersion != nil {
				version = *p.KandevVersion
			}
			snapshot, rejected = p.SnapshotAt, p.RejectedValues
			if t, ok := p.Tables["fact_subagent_context"]; ok && p.TableShape != models.ShapeAbsent {
				subagents = t.RowsWritten
			}
		}
		var errText any
		if m.Error != "" {
			errText = m.Error
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			m.RunID, m.InstallationID, m.Status, errText, m.StartedAt, m.FinishedAt, m.DurationMS,
			dialect, location, version, snapshot, activation, subagents, rejected, extractor); err != nil {
			return fmt.Errorf("runs: %w", err)
		}
	}
	_, err := conn.ExecContext(ctx, `COMMENT ON TABLE runs IS 'Every recorded run per installation, committed or failed, from the run manifests. Views read only committed runs; a failed run leaves the installation''s previous data current.'`)
	return err
}

func comment(ctx context.Context, conn *sql.Conn) error {
	disclosure, err := disclosureText(ctx, conn)
	if err != nil {
		return err
	}
	set := func(q string) error {
		_, err := conn.ExecContext(ctx, q)
		return err
	}
	for t, c := range baseComments {
		if err := set(`COMMENT ON VIEW ` + t + ` IS ` + quote(c)); err != nil {
			return err
		}
		if err := set(`COMMENT ON VIEW ` + t + `_history IS ` + quote(c+" All retained committed runs.")); err != nil {
			return err
		}
	}
	for _, v := range analyticViews {
		c := v.comment
		if v.disclose && disclosure != "" {
			c += " Disclosures for the current data: " + disclosure
		}
		if err := set(`COMMENT ON VIEW ` + v.name + ` IS ` + quote(c)); err != nil {
			return err
		}
		for col, cc := range v.columns {
			if err := set(`COMMENT ON COLUMN ` + v.name + `.` + col + ` IS ` + quote(cc)); err != nil {
				return fmt.Errorf("comment %s.%s: %w", v.name, col, err)
			}
		}
	}
	return nil
}

// disclosureText renders the current disclosures as one paragraph.
func disclosureText(ctx context.Context, conn *sql.Conn) (string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT installation_id, rule, text FROM disclosures ORDER BY installation_id, rule`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var inst, rule, text string
		if err := rows.Scan(&inst, &rule, &text); err != nil {
			return "", err
		}
		parts = append(parts, "["+inst+"] "+rule+": "+text)
	}
	return strings.Join(parts, " "), rows.Err()
}

func sqlList(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = quote(p)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
