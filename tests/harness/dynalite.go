package harness

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// DynalitePath finds dynalite (a DynamoDB-API server on LevelDB, from
// npm): $TENANTDB_DYNALITE, the PATH, or where .ci/run installs it.
func DynalitePath() (string, bool) {
	if p := os.Getenv("TENANTDB_DYNALITE"); p != "" {
		return p, true
	}
	if p, err := exec.LookPath("dynalite"); err == nil {
		return p, true
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "tenantdb-npm", "node_modules", ".bin", "dynalite")
	if _, err := os.Stat(p); err == nil {
		return p, true
	}
	return "", false
}

// StartDynalite runs dynalite in memory for t and returns its URL, or
// skips t, saying why, when node or dynalite is not installed.
func StartDynalite(t testing.TB) string {
	t.Helper()
	path, ok := DynalitePath()
	if !ok {
		t.Skip("dynalite is not installed (npm install dynalite, as .ci/run does, or set TENANTDB_DYNALITE)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed; dynalite needs it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(path, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatal("dynalite did not start listening within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
