//go:build !invariants

package engine

// invariants enables expensive self-checks (CI builds with -tags invariants).
const invariants = false
