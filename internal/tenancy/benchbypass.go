//go:build benchbypass

package tenancy

// benchBypass reports whether this build may bypass the guard's checks.
const benchBypass = true

// BypassChecks makes g admit everything without role, policy or
// leading-key checks (Scope.Bypassed), to measure what they cost. It
// exists only in builds with the benchbypass tag, which only benchmarks
// use: the product binary has no way to switch the checks off.
func BypassChecks(g *Guard) { g.bypassChecks = true }
