//go:build cgo

package main

// serverGCPercent is serve's GOGC unless the environment sets one.
//
// With cgo, Pebble's memtables and block cache are allocated with C's
// malloc, outside the Go heap, so the live heap is small and at the
// default GOGC of 100 the collector runs very often: the mark workers
// took 6-8% of the CPU of the get and query benchmarks. 200 halves that
// for a few MB more heap (BENCHMARKS.md §3).
const serverGCPercent = 200
