package gateways

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// The tests of this package run in parallel: each starts a fleet of its
// own (StartCluster), and most of their time is spent waiting — the
// fleet's settle, a deletion's write fence, a staleness bound — so they
// overlap even on two cores (harness.WaitingParallel).
func TestMain(m *testing.M) {
	harness.WaitingParallel(8)
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built is the tenantdb binary built for the tests that start and kill
// gateway processes, once for the package.
var built struct {
	once sync.Once
	dir  string // removed by TestMain
	bin  string
	err  error
	out  []byte
}

// binary returns TENANTDB_BIN or ./cmd/tenantdb built (static) once for
// the package.
func binary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(harness.BinEnv); bin != "" {
		return bin
	}
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "tenantdb-bin"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "tenantdb")
		cmd := exec.Command("go", "build", "-o", built.bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}
