//go:build !crashpoints || !unix

package crashpoint

// Hit does nothing: the crash points are compiled in only with the
// build tag crashpoints.
func Hit(string) {}
