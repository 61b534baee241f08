//go:build crashpoints && unix

package crashpoint

import (
	"os"
	"syscall"
)

var point = os.Getenv(Env)

// Hit kills the process with SIGKILL if name is the point named by
// TENANTDB_CRASHPOINT.
func Hit(name string) {
	if point == "" || name != point {
		return
	}
	if mark := os.Getenv(MarkEnv); mark != "" {
		if f, err := os.Create(mark); err == nil {
			_ = f.Sync()
			_ = f.Close()
		}
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // NB: SIGKILL is not handled; nothing runs after it
}
