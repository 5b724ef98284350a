// Package schedulingdocs holds the test that keeps the scheduler
// definitions in docs/scheduling (a macOS launchd agent and a Windows Task
// Scheduler task) well-formed, complete, and identical to the copies
// docs/operations.md shows. It has no code of its own.
package schedulingdocs
