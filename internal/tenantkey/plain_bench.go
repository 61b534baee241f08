//go:build benchbypass

package tenantkey

// BenchPlaintext makes every Key store values in plaintext, to measure
// what encryption costs (BENCHMARKS.md). It exists only in builds with
// the benchbypass tag; the product binary cannot turn encryption off.
// Call it before the keyring is used.
func (kr *Keyring) BenchPlaintext() { kr.plain = true }
