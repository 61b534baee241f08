//go:build !linux

package backup

// lowerPriority does nothing outside Linux (prio_linux.go).
func lowerPriority() func() { return func() {} }
