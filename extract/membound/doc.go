// Package membound holds the extractor's memory-bound tests: a real run,
// in a child process, on stores holding huge values and many junk rows,
// must stay under a fixed peak RSS and list every value it cut. It has no
// code of its own.
package membound
