package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/crashtest"
	"github.com/tenantdb/tenantdb/internal/dynexport"
)

const (
	importCrashEnv   = "TENANTDB_IMPORT_CRASH_DIR"
	importCrashItems = 40000
)

// crashSource writes the export the crash test imports: deterministic
// items, so that parent and child agree on them.
func crashSource(t *testing.T, dir string) {
	t.Helper()
	now := time.Unix(1700000000, 0)
	def := &dynexport.Definition{TableName: "Crash", BillingMode: "PAY_PER_REQUEST",
		AttributeDefinitions: []dynexport.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "sk", AttributeType: "N"}},
		KeySchema:            []dynexport.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"}}}
	w, err := dynexport.Create(dir, dynexport.WriterOptions{ExportID: "01700000000000-c0ffee00", Start: now, ExportTime: now, Definition: def, MaxFileBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range importCrashItems {
		item := fmt.Sprintf(`{"pk":{"S":"p%03d"},"sk":{"N":"%d"},"v":{"S":"value %d %s"}}`, i%500, i, i, strings.Repeat("x", i%50))
		if err := w.Add([]byte(item), int64(len(item))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(now); err != nil {
		t.Fatal(err)
	}
}

// TestImportCrash kills a server and the `tenant import` feeding it
// (one process) with SIGKILL mid-import, restarts the server on the same
// data and reruns the import: it resumes after the last acknowledged batch
// (the durable marker), and the tenant ends with exactly the export's
// items.
func TestImportCrash(t *testing.T) {
	if dir := os.Getenv(importCrashEnv); dir != "" {
		importCrashChild(t, dir)
		return
	}
	cmd, out, dir := crashtest.Start(t, importCrashEnv)
	var tenant string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "tenant "); ok {
			tenant = id
			break
		}
	}
	if tenant == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never started importing")
	}
	src := filepath.Join(dir, "src")
	var marker *importMarker
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ms, _ := filepath.Glob(filepath.Join(src, ".tenantdb-import", tenant, "*.json"))
		if len(ms) == 1 {
			marker, _ = loadMarker(ms[0])
		}
		if marker != nil && marker.Items >= 3000 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no progress: %+v", marker)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	ms, _ := filepath.Glob(filepath.Join(src, ".tenantdb-import", tenant, "*.json"))
	marker, _ = loadMarker(ms[0])
	if marker.Done || marker.Items >= importCrashItems {
		t.Fatalf("the import finished before the kill (%+v); make it larger", marker)
	}
	t.Logf("killed after %d acknowledged items", marker.Items)

	srv, stop := quotaServer(t, filepath.Join(dir, "data"))
	defer stop()
	out2 := qcli(t, srv, srv.Operator.Key, false, "tenant", "import", tenant, "--from", src, "--json")
	var rep []importedTable
	if err := json.Unmarshal([]byte(out2), &rep); err != nil || len(rep) != 1 || !rep[0].Resumed || rep[0].Items != importCrashItems {
		t.Fatalf("resumed import: %s (%v)", out2, err)
	}
	exp := t.TempDir()
	qcli(t, srv, srv.Operator.Key, false, "tenant", "export", tenant, "--to", exp)
	got, _ := exportLines(t, exp)
	want, _ := exportLines(t, src)
	if len(got) != importCrashItems || !slices.Equal(got, want) {
		t.Fatalf("after the crash and the resumed import the tenant has %d items, want the export's %d", len(got), len(want))
	}
}

// importCrashChild writes the export, serves on dir/data and imports it
// into a new tenant until it is killed.
func importCrashChild(t *testing.T, dir string) {
	src := filepath.Join(dir, "src")
	crashSource(t, src)
	srv, stop := quotaServer(t, filepath.Join(dir, "data"))
	defer stop()
	c, err := (&clientFlags{endpoint: srv.Endpoint, key: srv.Operator.Key}).client()
	if err != nil {
		t.Fatal(err)
	}
	tn, err := c.CreateTenant(t.Context(), clientCreateTenant("crash"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("tenant %s\n", tn.ID)
	qcli(t, srv, srv.Operator.Key, false, "tenant", "import", tn.ID, "--from", src)
	fmt.Println("done")
}

func clientCreateTenant(name string) client.CreateTenantRequest {
	return client.CreateTenantRequest{Name: name}
}
