package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestServeConfig(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, c := range []struct {
		name    string
		args    []string
		env     func(string) string
		want    func(Config) bool
		wantErr string
	}{
		{name: "defaults", env: env(), want: func(c Config) bool {
			return c.Addr == "127.0.0.1:8000" && c.DataDir == "./tenantdb-data" && c.Fairness && c.DefaultTenant
		}},
		{name: "env", env: env("TENANTDB_ADDR", "0.0.0.0:9000", "TENANTDB_DATA_DIR", "/d", "TENANTDB_FAIRNESS", "false", "TENANTDB_CONN_GATE", "true"),
			want: func(c Config) bool { return c.Addr == "0.0.0.0:9000" && c.DataDir == "/d" && !c.Fairness && c.ConnGate }},
		{name: "flags beat env", args: []string{"--addr", "127.0.0.1:1", "--data-dir=/x"},
			env:  env("TENANTDB_ADDR", "0.0.0.0:9000", "TENANTDB_DATA_DIR", "/d"),
			want: func(c Config) bool { return c.Addr == "127.0.0.1:1" && c.DataDir == "/x" }},
		{name: "private webhooks env", env: env("TENANTDB_ALLOW_PRIVATE_WEBHOOKS", "true"),
			want: func(c Config) bool { return c.AllowPrivateWebhooks && c.nodeOptions("x", "", nil).AllowPrivateWebhooks }},
		{name: "private webhooks flag", args: []string{"--allow-private-webhooks"}, env: env(),
			want: func(c Config) bool { return c.AllowPrivateWebhooks }},
		{name: "private webhooks off", env: env(), want: func(c Config) bool { return !c.AllowPrivateWebhooks }},
		{name: "bad addr", args: []string{"--addr", "8000"}, env: env(), wantErr: "host:port"},
		{name: "bad level", args: []string{"--log-level", "loud"}, env: env(), wantErr: "--log-level"},
		{name: "bad format", args: []string{"--log-format", "xml"}, env: env(), wantErr: "--log-format"},
		{name: "bad bool env", env: env("TENANTDB_DEFAULT_TENANT", "maybe"), wantErr: "TENANTDB_DEFAULT_TENANT"},
		{name: "empty data dir", args: []string{"--data-dir", ""}, env: env(), wantErr: "--data-dir"},
		{name: "backend env", env: env("TENANTDB_BACKEND", "dynamodb", "TENANTDB_BACKEND_ENDPOINT", "http://e:8000", "TENANTDB_BACKEND_REGION", "eu-west-1", "TENANTDB_BACKEND_TABLE_PREFIX", "p-"),
			want: func(c Config) bool {
				o := c.nodeOptions("x", "", nil)
				return o.Backend == "dynamodb" && o.Remote.Endpoint == "http://e:8000" && o.Remote.Region == "eu-west-1" && o.Remote.TablePrefix == "p-"
			}},
		{name: "backend flags", args: []string{"--backend", "dynamodb", "--backend-endpoint", "http://f:1", "--backend-table-prefix", "q-"}, env: env("TENANTDB_BACKEND_ENDPOINT", "http://e:8000"),
			want: func(c Config) bool {
				return c.Backend == "dynamodb" && c.BackendEndpoint == "http://f:1" && c.BackendTablePrefix == "q-"
			}},
		{name: "bad backend", args: []string{"--backend", "cassandra"}, env: env(), wantErr: "--backend"},
		{name: "backend settings without backend", args: []string{"--backend-endpoint", "http://e:1"}, env: env(), wantErr: "need --backend"},
		{name: "stray args", args: []string{"extra"}, env: env(), wantErr: "unexpected arguments"},
		{name: "restore pause default", env: env(), want: func(c Config) bool {
			return c.RestorePause == 2 && c.nodeOptions("x", "", nil).RestorePause == 2
		}},
		{name: "restore pause env", env: env("TENANTDB_RESTORE_PAUSE", "5"),
			want: func(c Config) bool { return c.nodeOptions("x", "", nil).RestorePause == 5 }},
		{name: "restore pause off", args: []string{"--restore-pause", "0"}, env: env("TENANTDB_RESTORE_PAUSE", "5"),
			want: func(c Config) bool { return c.nodeOptions("x", "", nil).RestorePause < 0 }},
		{name: "bad restore pause", args: []string{"--restore-pause", "-1"}, env: env(), wantErr: "--restore-pause"},
		{name: "bad restore pause env", env: env("TENANTDB_RESTORE_PAUSE", "slow"), wantErr: "TENANTDB_RESTORE_PAUSE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseServeConfig(c.args, c.env, io.Discard)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.want(cfg) {
				t.Errorf("config %+v", cfg)
			}
		})
	}
}

// lockedBuffer collects serve's progress output from another goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+),`)

// TestServeStartsAndStops runs serve on a fresh data directory, checks the
// bootstrap files and the routes, and shuts it down; then starts it again
// on the same directory, which must not bootstrap a second time.
func TestServeStartsAndStops(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.LogLevel = "error"

	start := func() (string, *lockedBuffer, func()) {
		ctx, cancel := context.WithCancel(context.Background())
		out := &lockedBuffer{}
		done := make(chan error, 1)
		go func() { done <- serve(ctx, cfg, out) }()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
				return m[1], out, func() {
					cancel()
					if err := <-done; err != nil {
						t.Errorf("serve returned %v", err)
					}
				}
			}
			select {
			case err := <-done:
				t.Fatalf("serve returned early: %v\n%s", err, out)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not start:\n%s", out)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	endpoint, out, stop := start()
	for _, f := range []string{"operator-credentials", "default-credentials", "server.key"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if !strings.Contains(out.String(), "default-credentials") {
		t.Errorf("progress output does not name the default credentials:\n%s", out)
	}
	// The files' usage comment names the port the server listens on
	// (here chosen by the kernel), not the default 8000.
	for _, f := range []string{"operator-credentials", "default-credentials"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), "--endpoint-url "+endpoint+" ") {
			t.Errorf("%s does not name the endpoint %s:\n%s", f, endpoint, data)
		}
	}
	for path, want := range map[string]int{"/": 200, "/metrics": 401, "/v1/tenants": 401} {
		resp, err := http.Get(endpoint + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
	stop()

	_, out, stop = start()
	stop()
	if strings.Contains(out.String(), "credential written") {
		t.Errorf("second start bootstrapped again:\n%s", out)
	}
}
