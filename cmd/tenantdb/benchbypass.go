//go:build benchbypass

package main

import (
	"flag"

	"github.com/tenantdb/tenantdb/internal/node"
)

// benchConfig holds the benchmark-only settings of `serve`, which exist
// only in builds with the benchbypass tag (bench/tenancy.sh builds one):
//
//	go build -tags benchbypass -o /tmp/tenantdb-bench ./cmd/tenantdb
type benchConfig struct {
	// BenchBypassTenancy skips signature verification after a
	// credential's first request and the guard's checks, to measure what
	// they cost (node.Options.BenchBypassTenancy). INSECURE: it lets anyone
	// who knows an access key id use it.
	BenchBypassTenancy bool
}

func (c *benchConfig) addFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.BenchBypassTenancy, "bench-bypass-tenancy", c.BenchBypassTenancy, "INSECURE, benchmarks only: trust access key ids after their first signed request and skip the guard's checks, to measure their cost")
}

func (c benchConfig) apply(o *node.Options) { o.BenchBypassTenancy = c.BenchBypassTenancy }
