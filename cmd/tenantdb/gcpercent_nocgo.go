//go:build !cgo

package main

// serverGCPercent is serve's GOGC unless the environment sets one.
//
// Without cgo (the static build) Pebble allocates its memtables and block
// cache in the Go heap, so the live heap is large and every point of GOGC
// is memory: under tdbload's batchwrite the process peaked at 904 MB
// resident with 200 against 627 MB with Go's default 100, at the same CPU
// per request (BENCHMARKS.md §7). So the static build keeps the default.
const serverGCPercent = 100
