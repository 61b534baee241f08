// Package bench holds in-process benchmarks of tenantdb's whole request
// path: raw pre-signed HTTP/1.1 requests over loopback keep-alive
// connections to a server wired like `tenantdb serve`, on an on-disk,
// synced Pebble store in a temporary directory. The client is a few
// hundred lines of byte copying, so nearly all of the CPU a benchmark
// reports is the server's; BenchmarkNoop serves the same requests with a
// fixed-answer handler (the ceiling of net/http) as the baseline to divide
// by. See BENCHMARKS.md at the repository root for how to run and read
// them.
package bench
