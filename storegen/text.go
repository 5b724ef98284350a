package storegen

// Filler vocabulary. The values follow the ones Kandev's own repository code
// wrote, at Kandev commit cd9fa0e6, into testdata/kandev/fresh-activated.db. Content is
// never needed by an extractor (it must not copy it); it is present so the
// store looks like a real one.

var taskTitles = []string{
	"Handle deleted repositories gracefully", "Add onboarding checklist",
	"Investigate memory growth in agentctl", "Add health endpoint for office",
	"Document workflow import format", "Port shell tool to new normalizer",
	"Refactor executor cleanup path", "Reduce bundle size of chat view",
	"Support GitLab merge request links", "Fix markdown rendering of tables",
	"Fix scroll jump in long transcripts", "Audit permission request flow",
	"Add Jira issue picker", "Triage nightly build failures",
	"Add pagination to task list API", "Add retry budget to routing",
	"Upgrade pgx to v5.9", "Add tests for archive cascade",
	"Investigate slow session load", "Tidy up logging fields",
	"Add metrics for worktree creation", "Add CSV export for analytics",
	"Prototype plan mode for Codex", "Add dark mode to diff viewer",
	"Add rate limiting to webhook handler", "Fix double-submit on prompt input",
	"Normalize branch naming template", "Clean up deprecated config flags",
	"Add CLI flag for data dir", "Add per-step WIP limits UI",
	"Fix flaky websocket reconnect test", "Split monolithic orchestrator handler",
	"Migrate settings page to new form lib", "Retry transient git fetch failures",
	"Review SQL indexes for sessions", "Fix timezone bug in turn durations",
	"Add keyboard shortcuts to kanban", "Backfill missing task identifiers",
	"Speed up repository indexing", "Improve error message for missing API key",
	"Persist subagent context rows", "Cache workflow step lookups",
	"Show subagent fan-out in session view", "Harden prompt sequence allocation",
	"Add search to command panel", "Fix stale branch badge after rebase",
	"Stream agent logs to the terminal tab", "Validate workflow step events on import",
}

var userPrompts = []string{
	"Can you parallelize the investigation with subagents?",
	"Looks good. Now clean up and open a PR.",
	"Please summarize what you changed.",
	"Implement this and add tests.",
	"Please look into this and propose a fix.",
	"Let's continue — address the review comments.",
	"Run the test suite and fix anything that fails.",
	"Explore the codebase first, then make a plan.",
	"Double-check the edge cases around empty input.",
	"Can you investigate why this happens and fix it?",
}

var agentOpenings = []string{
	"I'll start by exploring the relevant parts of the codebase.",
	"Here is the plan before I make changes.",
	"Let me delegate the investigation to a few subagents in parallel.",
	"I found the root cause; applying the fix now.",
}

var agentClosings = []string{
	"The tests pass locally. Summary of changes below.",
	"The background agents are running; I'll report back when they finish.",
	"Done. Let me know if you want further changes.",
	"I've updated the implementation and added coverage for the edge cases.",
}

var subagentDescriptions = []string{
	"Draft implementation plan", "Check error handling paths", "Run backend tests",
	"Benchmark query performance", "Locate config loading code", "Verify fix against spec",
	"Find callers of UpdateTask", "Summarize websocket protocol", "Map frontend routes",
	"Explore session repository", "Review migration for races", "Audit SQL queries for indexes",
	"Inspect git history of file", "Search for timezone handling", "Analyze log output",
	"Investigate flaky test",
}

var subagentPrompts = []string{
	"Search the codebase for all call sites and summarize how each uses the return value.",
	"Review the change for correctness, concurrency issues, and missing tests. Report findings only.",
	"Read the spec and the implementation and list every discrepancy you find.",
	"Explore the repository and report the files and functions involved, with line references.",
	"Run the relevant tests, capture failures, and report the minimal reproduction.",
}

var subagentTypes = []string{"test-runner", "Explore", "general-purpose", "code-reviewer", "Plan"}

var subagentModels = []string{
	"claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805",
}

var resultTexts = []string{
	"All 212 tests pass; no flakes in 3 runs.",
	"Root cause: missing UTC conversion in formatter.",
	"No issues found in the migration.",
	"The race is between the writer goroutine and Close(); see session.go.",
	"Plan: 1) add index 2) backfill 3) switch reader. Details inline.",
	"Found 4 call sites; two ignore the error return.",
}

var filePaths = []string{
	"apps/web/src/components/chat/transcript.tsx",
	"apps/backend/internal/agentctl/server/adapter/transport/acp/normalize.go",
	"apps/backend/internal/orchestrator/service.go",
	"README.md",
	"apps/backend/internal/task/repository/sqlite/session.go",
	"apps/backend/internal/db/sqlite.go",
	"apps/web/package.json",
}

var shellCommands = []string{
	"pnpm lint", "go test ./internal/task/...", "pnpm test -- --run", "make build", "git status", "go vet ./...",
}

var searchPatterns = []string{
	"ListTurnsBySession", "time.Now()", "UpsertSubagentContext", "parentToolUseId", "kandev_meta", "TODO",
}

const (
	claudeSessionModel   = "claude-sonnet-4-5-20250929"
	opencodeSessionModel = "anthropic/claude-sonnet-4-5"
)
