// Package crashtest starts the child of a crash test: the test binary
// re-executed to run one test in a process the parent test can kill.
package crashtest

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// Start re-executes the test binary to run only t's test, with the
// environment variable env set to a fresh temporary directory for the
// child to write in and the parent to reopen once it has killed the
// child. It skips t under -short. It returns the started child, its
// standard output and the directory.
func Start(t *testing.T, env string) (cmd *exec.Cmd, stdout io.Reader, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	dir = t.TempDir()
	cmd = exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v=false")
	cmd.Env = append(os.Environ(), env+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out, dir
}
