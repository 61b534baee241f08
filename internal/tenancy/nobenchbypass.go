//go:build !benchbypass

package tenancy

// benchBypass reports whether this build may bypass the guard's checks:
// never without the benchbypass tag (see benchbypass.go).
const benchBypass = false
