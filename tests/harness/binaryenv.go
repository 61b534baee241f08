package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
)

// StartBinaryEnv is StartBinary with env (NAME=value) added to the
// server's environment, such as a crash point's (internal/crashpoint).
func StartBinaryEnv(t testing.TB, bin, dataDir string, env []string, extraArgs ...string) *Server {
	t.Helper()
	return startBinary(t, bin, dataDir, Options{Fairness: true, Env: env}, extraArgs...)
}

// RunWithBinary runs m's tests with *bin set to the tenantdb binary to
// start: TENANTDB_BIN if set, else ./cmd/tenantdb built once (static)
// into a temporary directory removed afterwards. It returns the exit code
// for os.Exit (1, saying why, if the build fails).
func RunWithBinary(m *testing.M, bin *string) int {
	if b := os.Getenv(BinEnv); b != "" {
		*bin = b
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "tenantdb-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "tenantdb")
	cmd := exec.Command("go", "build", "-o", *bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// CopyCredentials copies the operator's and the default tenant's
// credentials files from data directory from to to, a directory restored
// from a backup, failing the test if to holds them already: a backup
// never carries plaintext credentials; the operator keeps them.
func CopyCredentials(t testing.TB, from, to string) {
	t.Helper()
	for _, f := range []string{auth.OperatorCredentialsFile, node.DefaultCredentialsFile} {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(to, f)); err == nil {
			t.Fatalf("%s is in the restored directory: a backup must not carry plaintext credentials", f)
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
