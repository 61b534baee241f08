//go:build !benchbypass

package main

import (
	"flag"

	"github.com/tenantdb/tenantdb/internal/node"
)

// benchConfig holds the benchmark-only settings of `serve`: none without
// the benchbypass tag (benchbypass.go), so the product binary has no
// --bench-bypass-tenancy.
type benchConfig struct{}

func (*benchConfig) addFlags(*flag.FlagSet) {}

func (benchConfig) apply(*node.Options) {}
