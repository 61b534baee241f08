package keyspace

// Keys of in-place restores of a tenant environment (the engine's
// rewind.go):
//
//	s rwd/ <ns>    the namespace's restore: running, or the last one finished

// Rewind returns the key of namespace ns's in-place restore record.
func Rewind(ns []byte) []byte { return append(System(SysRewinds), ns...) }

// Rewinds returns the range of every Rewind key.
func Rewinds() (lo, hi []byte) { return prefixRange(System(SysRewinds)) }

// RewindNamespace returns the namespace of a Rewind key.
func RewindNamespace(key []byte) []byte { return key[len(System(SysRewinds)):] }
