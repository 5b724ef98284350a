package transform

import (
	"testing"
	"time"

	"github.com/kandev/kandev-extract/models"
)

func meta(kv ...string) []models.MetaEntry {
	var out []models.MetaEntry
	for i := 0; i < len(kv); i += 2 {
		out = append(out, models.MetaEntry{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

func TestIsTerminalIsExactlyKandevsSix(t *testing.T) {
	// AC-11: the six values of isTerminalToolStatus, and agent statuses never.
	for _, s := range []string{"complete", "completed", "success", "error", "failed", "cancelled"} {
		if !IsTerminal(s, true) {
			t.Errorf("%q should be terminal", s)
		}
	}
	for _, s := range []string{"pending", "in_progress", "async_launched", "started", "Completed", "canceled", ""} {
		if IsTerminal(s, true) {
			t.Errorf("%q should not be terminal", s)
		}
	}
	if IsTerminal("completed", false) {
		t.Error("a NULL tool_status is not terminal")
	}
}

func TestShape(t *testing.T) {
	cols := []string{"id", "task_session_id", "agent_execution_id", "tool_call_id"}
	tests := []struct {
		name string
		in   models.SubagentSchema
		want models.TableShape
	}{
		{"absent", models.SubagentSchema{}, models.ShapeAbsent},
		{"execution aware", models.SubagentSchema{Exists: true, Columns: cols,
			UniqueKeys: [][]string{{"task_session_id", "agent_execution_id", "tool_call_id"}}}, models.ShapeExecutionAware},
		{"key declared in another order", models.SubagentSchema{Exists: true, Columns: cols,
			UniqueKeys: [][]string{{"tool_call_id", "task_session_id", "agent_execution_id"}}}, models.ShapeExecutionAware},
		{"pre-amendment two-column key", models.SubagentSchema{Exists: true, Columns: cols[:2],
			UniqueKeys: [][]string{{"task_session_id", "tool_call_id"}}}, models.ShapePreAmendment},
		{"both keys", models.SubagentSchema{Exists: true, Columns: cols,
			UniqueKeys: [][]string{{"task_session_id", "tool_call_id"}, {"task_session_id", "agent_execution_id", "tool_call_id"}}}, models.ShapePreAmendment},
		{"column but no key", models.SubagentSchema{Exists: true, Columns: cols}, models.ShapePreAmendment},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Shape(tt.in); got != tt.want {
				t.Errorf("Shape = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestActivationState(t *testing.T) {
	C, B := models.KeyCaptureSince, models.KeyBackfillThrough
	tests := []struct {
		name  string
		meta  []models.MetaEntry
		shape models.TableShape
		want  models.ActivationState
	}{
		{"fresh install", meta(C, "2026-08-03T15:00:00.123456789Z", B, ""), models.ShapeExecutionAware, models.Activated},
		{"upgraded", meta(C, "2026-08-03T15:00:00Z", B, "2026-08-01T00:00:00Z"), models.ShapeExecutionAware, models.Activated},
		{"partial pair", meta(C, "2026-08-03T15:00:00Z"), models.ShapeExecutionAware, models.CaptureOnlyPartialPair},
		{"backfill key garbage", meta(C, "2026-08-03T15:00:00Z", B, "soon"), models.ShapeExecutionAware, models.BackfillKeyUnparseable},
		{"no keys", nil, models.ShapeExecutionAware, models.NotActivated},
		{"only backfill_through", meta(B, ""), models.ShapeExecutionAware, models.NotActivated},
		{"capture_since unparseable", meta(C, "2026-08-03 15:00:00", B, ""), models.ShapeExecutionAware, models.NotActivated},
		{"no table", meta(C, "2026-08-03T15:00:00Z", B, ""), models.ShapeAbsent, models.FeatureAbsent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Installation(tt.meta, tt.shape).Activation; got != tt.want {
				t.Errorf("activation = %s, want %s", got, tt.want)
			}
		})
	}
}

func at(s string) time.Time {
	t, _, err := ParseStamp(s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCaptureWindowOneMicrosecond(t *testing.T) {
	// The boundary is exact to the column's microsecond, equality is "after"
	// (AC-24, AC-24e), on a sub-second key and on a second-precision key.
	tests := []struct {
		key, observed string
		want          models.CaptureWindow
		ambiguous     bool
	}{
		{"2026-09-01T10:00:00.123456Z", "2026-09-01 10:00:00.123455+00:00", models.BeforeCapture, false},
		{"2026-09-01T10:00:00.123456Z", "2026-09-01 10:00:00.123456+00:00", models.AfterCapture, false},
		{"2026-09-01T10:00:00.123456789Z", "2026-09-01 10:00:00.123456+00:00", models.BeforeCapture, false},
		{"2026-09-01T10:00:00.123456789Z", "2026-09-01 10:00:00.123457+00:00", models.AfterCapture, false},
		{"2026-08-05T10:00:00Z", "2026-08-05 09:59:59.999999+00:00", models.BeforeCapture, false},
		{"2026-08-05T10:00:00Z", "2026-08-05 10:00:00+00:00", models.AfterCapture, true},
		{"2026-08-05T10:00:00Z", "2026-08-05 10:00:00.999999+00:00", models.AfterCapture, true},
		{"2026-08-05T10:00:00Z", "2026-08-05 10:00:01+00:00", models.AfterCapture, false},
		// Same day, hours after the key: a string comparison says "before".
		{"2026-08-05T10:00:00Z", "2026-08-05 23:59:59.999999+00:00", models.AfterCapture, false},
		{"2026-08-05T10:00:00Z", "2026-08-05 00:00:01+00:00", models.BeforeCapture, false},
	}
	for _, tt := range tests {
		t.Run(tt.key+" vs "+tt.observed, func(t *testing.T) {
			c := Classifier{State: Installation(meta(models.KeyCaptureSince, tt.key, models.KeyBackfillThrough, ""), models.ShapeExecutionAware)}
			got := c.Row(at(tt.observed), "live", "e1", true, "completed", true)
			if got.Window != tt.want || got.BoundaryAmbiguous != tt.ambiguous {
				t.Errorf("window = %s ambiguous=%v, want %s ambiguous=%v", got.Window, got.BoundaryAmbiguous, tt.want, tt.ambiguous)
			}
		})
	}
	c := Classifier{State: Installation(nil, models.ShapeExecutionAware)}
	if got := c.Row(at("2026-08-05 10:00:00+00:00"), "live", "e1", true, "", false).Window; got != models.NoBoundary {
		t.Errorf("no key: window = %s, want no_boundary", got)
	}
	// A turn or session whose started_at is NULL or unparseable: no window
	// even with a valid key (the catalog says so).
	keyed := Classifier{State: Installation(meta(models.KeyCaptureSince, "2026-08-05T10:00:00Z", models.KeyBackfillThrough, ""), models.ShapeExecutionAware)}
	if got := keyed.Window(time.Time{}, false); got != models.NoBoundary {
		t.Errorf("no start: window = %s, want no_boundary", got)
	}
}

func TestExecutionIdentity(t *testing.T) {
	withE := Installation(meta(models.KeyCaptureSince, "2026-08-03T15:00:00Z", models.KeyBackfillThrough, "",
		models.KeyExecutionSince, "2026-08-06T09:30:00.555555555Z"), models.ShapeExecutionAware)
	noE := Installation(meta(models.KeyCaptureSince, "2026-08-03T15:00:00Z", models.KeyBackfillThrough, ""), models.ShapeExecutionAware)
	pre := Installation(meta(models.KeyCaptureSince, "2026-08-03T15:00:00Z", models.KeyBackfillThrough, ""), models.ShapePreAmendment)
	const uuid = "2c84d350-0f15-4181-b9de-5a1f5f68d707"
	tests := []struct {
		name     string
		state    models.InstallationState
		observed string
		source   string
		exec     string
		execOK   bool
		want     models.ExecutionIdentity
		wantID   string
		reasons  string
	}{
		{"real id", noE, "2026-08-04 00:00:00+00:00", "live", uuid, true, models.ExecRecorded, uuid, ""},
		{"real id before execution_since is still real", withE, "2026-08-04 00:00:00+00:00", "live", uuid, true, models.ExecRecorded, uuid, ""},
		{"backfill sentinel", noE, "2026-08-04 00:00:00+00:00", "backfill", "unknown", true, models.ExecUnrecordedBackfill, "", "execution_id_sentinel,backfill_source"},
		{"backfill sentinel merged later stays backfill", withE, "2026-08-07 00:00:00+00:00", "backfill", "unknown", true, models.ExecUnrecordedBackfill, "", "execution_id_sentinel,backfill_source"},
		{"live sentinel before E", withE, "2026-08-06 09:30:00.555555+00:00", "live", "unknown", true, models.ExecUnrecordedPreAmendment, "", "execution_id_sentinel,before_execution_since"},
		{"live sentinel at E", withE, "2026-08-06 09:30:00.555556+00:00", "live", "unknown", true, models.ExecUnrecordedLive, "", "execution_id_sentinel"},
		{"live sentinel, no E", noE, "2026-08-04 00:00:00+00:00", "live", "unknown", true, models.ExecUnrecordedLive, "", "execution_id_sentinel,no_execution_since_key"},
		{"a NULL backfill id before E: every rule", withE, "2026-08-05 00:00:00+00:00", "backfill", "", false, models.ExecUnrecordedBackfill, "", "execution_id_null,backfill_source,before_execution_since"},
		{"a variant of the sentinel, no E", noE, "2026-08-04 00:00:00+00:00", "live", " Unknown ", true, models.ExecUnrecordedLive, "", "execution_id_sentinel_variant,no_execution_since_key"},
		{"pre-amendment shape", pre, "2026-08-04 00:00:00+00:00", "live", "", false, models.ExecNotRecorded, "", "no_execution_column"},
		{"pre-amendment shape ignores a value", pre, "2026-08-04 00:00:00+00:00", "live", uuid, true, models.ExecNotRecorded, "", "no_execution_column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classifier{State: tt.state}.Row(at(tt.observed), tt.source, tt.exec, tt.execOK, "completed", true)
			if got.Identity != tt.want || got.ExecutionID != tt.wantID {
				t.Errorf("identity = %s id=%q, want %s id=%q", got.Identity, got.ExecutionID, tt.want, tt.wantID)
			}
			if r := got.IdentityReasons.String(); r != tt.reasons {
				t.Errorf("reasons = %q, want %q", r, tt.reasons)
			}
		})
	}
}

func TestFanoutCompleteness(t *testing.T) {
	activated := Classifier{State: Installation(meta(models.KeyCaptureSince, "2026-08-05T10:00:00.5Z", models.KeyBackfillThrough, ""), models.ShapeExecutionAware)}
	seconds := Classifier{State: Installation(meta(models.KeyCaptureSince, "2026-08-05T10:00:00Z", models.KeyBackfillThrough, ""), models.ShapeExecutionAware)}
	none := Classifier{State: Installation(nil, models.ShapeExecutionAware)}
	absent := Classifier{State: Installation(meta(models.KeyCaptureSince, "2026-08-05T10:00:00.5Z"), models.ShapeAbsent)}
	unparseable := Classifier{State: Installation(meta(models.KeyCaptureSince, "yesterday", models.KeyBackfillThrough, ""), models.ShapeExecutionAware)}
	msgs := func(expected, lb, shortfall int64) models.MessageCounts {
		return models.MessageCounts{Expected: expected, LowerBound: lb, Shortfall: shortfall}
	}
	tests := []struct {
		name      string
		c         Classifier
		started   string
		startedOK bool
		in        FanoutInput
		want      models.FanoutCompleteness
		fanout    int64
		exact     bool
		lb        int64
		ambiguous bool
		reasons   string
	}{
		{"after C, zero is a true zero", activated, "2026-08-05 10:00:00.5+00:00", true, FanoutInput{}, models.FanoutComplete, 0, true, 0, false, ""},
		{"after C, three", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 3, Distinct: 3}, models.FanoutComplete, 3, true, 3, false, ""},
		{"a backfill row duplicating a live one counts once", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 3, Distinct: 2, Overlap: 1}, models.FanoutComplete, 2, true, 2, false, ""},
		{"a cross-execution collision is a lower bound", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 3, Distinct: 2, Messages: msgs(2, 2, 0)}, models.FanoutLowerBound, 0, false, 2, false, "rows_beyond_tool_calls"},
		{"a collision beside a live/backfill duplicate", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 3, Distinct: 1, Overlap: 1}, models.FanoutLowerBound, 0, false, 1, false, "rows_beyond_tool_calls"},
		{"a writer shortfall downgrades", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 1, Distinct: 1, Messages: msgs(2, 2, 1)}, models.FanoutLowerBound, 0, false, 2, false, "writer_shortfall,messages_without_rows"},
		{"an unplaced row of the session downgrades", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 1, Distinct: 1, Unattributed: 1}, models.FanoutLowerBound, 0, false, 1, false, "unattributed_rows_in_session"},
		{"an unplaced row, no evidence here: unknown", activated, "2026-08-06 00:00:00+00:00", true, FanoutInput{Unattributed: 1}, models.FanoutUnknown, 0, false, 0, false, "unattributed_rows_in_session,no_evidence"},
		{"before C with rows is a lower bound", activated, "2026-08-05 10:00:00.499999+00:00", true, FanoutInput{Rows: 2, Distinct: 2}, models.FanoutLowerBound, 0, false, 2, false, "started_before_capture"},
		{"before C without rows is unknown", activated, "2026-08-05 10:00:00.499999+00:00", true, FanoutInput{}, models.FanoutUnknown, 0, false, 0, false, "started_before_capture,no_evidence"},
		{"before C, messages only: a lower bound", activated, "2026-08-05 10:00:00.499999+00:00", true, FanoutInput{Messages: msgs(2, 2, 0)}, models.FanoutLowerBound, 0, false, 2, false, "started_before_capture,messages_without_rows"},
		{"inside the ambiguous second", seconds, "2026-08-05 10:00:00.7+00:00", true, FanoutInput{Rows: 1, Distinct: 1}, models.FanoutLowerBound, 0, false, 1, true, "ambiguous_capture_second"},
		{"after the ambiguous second", seconds, "2026-08-05 10:00:01+00:00", true, FanoutInput{Rows: 1, Distinct: 1}, models.FanoutComplete, 1, true, 1, false, ""},
		{"no key, rows", none, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 1, Distinct: 1}, models.FanoutLowerBound, 0, false, 1, false, "no_capture_key"},
		{"no key, none", none, "2026-08-06 00:00:00+00:00", true, FanoutInput{}, models.FanoutUnknown, 0, false, 0, false, "no_capture_key,no_evidence"},
		{"unreadable start", activated, "", false, FanoutInput{}, models.FanoutUnknown, 0, false, 0, false, "no_start_time,no_evidence"},
		{"unreadable start, rows: a lower bound, never complete", activated, "", false, FanoutInput{Rows: 2, Distinct: 2}, models.FanoutLowerBound, 0, false, 2, false, "no_start_time"},
		{"no table", absent, "2026-08-06 00:00:00+00:00", true, FanoutInput{}, models.FanoutUnknown, 0, false, 0, false, "feature_absent,no_evidence"},
		{"an unparseable key", unparseable, "2026-08-06 00:00:00+00:00", true, FanoutInput{Rows: 1, Distinct: 1}, models.FanoutLowerBound, 0, false, 1, false, "capture_key_unparseable"},
		{"no table, messages: a lower bound", absent, "2026-08-06 00:00:00+00:00", true, FanoutInput{Messages: msgs(3, 3, 0)}, models.FanoutLowerBound, 0, false, 3, false, "feature_absent,messages_without_rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if tt.startedOK {
				in.Started, in.StartedOK = at(tt.started), true
			}
			r := tt.c.Fanout(in)
			if r.Completeness != tt.want || r.Fanout != tt.fanout || r.Exact != tt.exact || r.LowerBound != tt.lb || r.Ambiguous != tt.ambiguous {
				t.Errorf("Fanout = %+v, want %s %d %v lb %d ambiguous %v", r, tt.want, tt.fanout, tt.exact, tt.lb, tt.ambiguous)
			}
			if got := r.Reasons.String(); got != tt.reasons {
				t.Errorf("reasons = %q, want %q", got, tt.reasons)
			}
		})
	}
}

func TestSentinelVariants(t *testing.T) {
	for id, want := range map[string]bool{"unknown": true, "": true, "  ": true, "UNKNOWN": true, " unknown": true, "Unknown\t": true,
		"exec-1": false, "unknown-2": false} {
		if got := IsSentinelVariant(id); got != want {
			t.Errorf("IsSentinelVariant(%q) = %v", id, got)
		}
	}
}

func TestStepAtStart(t *testing.T) {
	tests := []struct {
		in      any
		want    string
		ok      bool
		problem bool
	}{
		{`{"workflow_step_id_at_start":"6c03cfa7"}`, "6c03cfa7", true, false},
		{`{}`, "", false, false},
		{nil, "", false, false},
		{"", "", false, false},
		{"null", "", false, false},
		{`{"workflow_step_id_at_start":""}`, "", false, false},
		{`not json`, "", false, true},
		{`[1,2]`, "", false, true},
	}
	for _, tt := range tests {
		got, ok, problem := StepAtStart(tt.in)
		if got != tt.want || ok != tt.ok || (problem != "") != tt.problem {
			t.Errorf("StepAtStart(%v) = %q %v %q", tt.in, got, ok, problem)
		}
	}
}
