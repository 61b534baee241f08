package readme

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// skipped are README commands the test does not run, and why.
var skipped = map[string]string{
	"go test ./...": "this test is part of go test ./...; running it from here would recurse",
}

// background are README commands that start the server: they run in the
// background until the test ends.
var background = map[string]bool{
	"go run ./cmd/tenantdb serve": true,
}

// block is one ```sh block of README.md.
type block struct {
	line     int      // of the opening fence
	commands []string // logical commands: continuation lines joined, comments kept
}

// shBlocks returns README.md's ```sh blocks.
func shBlocks(t *testing.T, readme []byte) []block {
	t.Helper()
	var out []block
	var cur *block
	var pending string
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(l) == "```sh":
			cur = &block{line: n}
		case cur == nil:
		case strings.TrimSpace(l) == "```":
			if pending != "" {
				t.Fatalf("README.md:%d: a command ends with a backslash", n)
			}
			out = append(out, *cur)
			cur = nil
		case strings.HasSuffix(l, "\\"):
			pending += l + "\n"
		default:
			if c := pending + l; strings.TrimSpace(c) != "" {
				cur.commands = append(cur.commands, c)
			}
			pending = ""
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: unterminated ```sh block", cur.line)
	}
	return out
}

// bare is a command without its trailing comment and surrounding spaces,
// the key of skipped and background.
func bare(cmd string) string {
	if i := strings.Index(cmd, " #"); i >= 0 && !strings.ContainsAny(cmd[:i], `'"`) {
		cmd = cmd[:i]
	}
	return strings.TrimSpace(cmd)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// env is the commands' environment: the caller's without AWS_* and
// TENANTDB_*, plus the substitutions.
func env(dir string, port int) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(kv, "TENANTDB_") {
			out = append(out, kv)
		}
	}
	return append(out,
		"AWS_CONFIG_FILE="+filepath.Join(dir, ".aws-config"),
		"AWS_PAGER=",
		fmt.Sprintf("TENANTDB_ADDR=127.0.0.1:%d", port),
		fmt.Sprintf("TENANTDB_ENDPOINT=http://127.0.0.1:%d", port),
	)
}

func TestREADMECommands(t *testing.T) {
	if _, err := exec.LookPath("aws"); err != nil {
		t.Skip("the AWS CLI is not installed (.ci/run installs it); README.md's commands need it")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shBlocks(t, readme)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```sh block")
	}

	dir := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "client", "cmd", "internal", "tests"} {
		if err := os.Symlink(filepath.Join(root, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".aws-config"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	environ := env(dir, port)
	subst := func(cmd string) string {
		return strings.ReplaceAll(cmd, "127.0.0.1:8000", fmt.Sprintf("127.0.0.1:%d", port))
	}

	seen := map[string]bool{}
	var out bytes.Buffer
	started := false
	for _, b := range blocks {
		var script []string
		for _, cmd := range b.commands {
			key := bare(cmd)
			seen[key] = true
			switch {
			case strings.HasPrefix(strings.TrimSpace(cmd), "#"):
			case skipped[key] != "":
				t.Logf("README.md:%d: not run: %s (%s)", b.line, key, skipped[key])
			case background[key]:
				startServer(t, dir, environ, subst(cmd), port, b.line)
				started = true
			default:
				script = append(script, subst(cmd))
			}
		}
		if len(script) == 0 {
			continue
		}
		if !started {
			t.Fatalf("README.md:%d: commands before any block starts the server", b.line)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		c := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-x", "-c", strings.Join(script, "\n"))
		c.Dir, c.Env = dir, environ
		var stderr bytes.Buffer
		c.Stdout, c.Stderr = &out, &stderr
		err := c.Run()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d: the block failed: %v\n%s", b.line, err, stderr.String())
		}
	}
	for key := range skipped {
		if !seen[key] {
			t.Errorf("skipped lists %q, which README.md no longer shows", key)
		}
	}
	for key := range background {
		if !seen[key] {
			t.Errorf("background lists %q, which README.md no longer shows", key)
		}
	}
	// What the commands printed says they did what the README says.
	for _, want := range []string{`"Feeling Good"`, `"TableName": "Tickets"`, `"slug": "acme"`, `"SessionToken"`, `"leaks": 0`} {
		if !strings.Contains(strings.ReplaceAll(out.String(), `":"`, `": "`), want) {
			t.Errorf("the commands' output lacks %s:\n%s", want, out.String())
		}
	}
}

// startServer runs cmd in the background in its own process group (go run
// starts the server as a child) and waits until it answers on port; the
// group is stopped with SIGTERM when the test ends.
func startServer(t *testing.T, dir string, environ []string, cmd string, port, line int) {
	t.Helper()
	c := exec.Command("bash", "-c", "exec "+cmd)
	c.Dir, c.Env = dir, environ
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = logf, logf
	if err := c.Start(); err != nil {
		t.Fatalf("README.md:%d: %s: %v", line, cmd, err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
	// go run compiles first: allow for a slow, busy machine.
	deadline := time.Now().Add(8 * time.Minute)
	for {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("README.md:%d: %s exited:\n%s", line, cmd, log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("README.md:%d: %s did not answer on port %d:\n%s", line, cmd, port, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
