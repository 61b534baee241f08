package atrest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// fill writes n items per table for credential c, in batches of 25.
func fill(t *testing.T, c *dynamodb.Client, tables []string, n int) {
	t.Helper()
	ctx := ctxT(t)
	for _, table := range tables {
		for i := 0; i < n; i += 25 {
			var reqs []types.WriteRequest
			for j := i; j < i+25 && j < n; j++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
					"pk": S(fmt.Sprintf("p%03d", j%50)), "sk": S(fmt.Sprintf("s%05d", j)), "g": S(fmt.Sprintf("g%d", j%7)), "v": S(fmt.Sprintf("value-%d", j))}}})
			}
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs}})
			if err != nil || len(out.UnprocessedItems) > 0 {
				t.Fatalf("BatchWriteItem: %v (%d unprocessed)", err, len(out.UnprocessedItems))
			}
		}
	}
}

// verifyAll scans every table and checks all n items and the GSI.
func verifyAll(t *testing.T, c *dynamodb.Client, tables []string, n int) {
	t.Helper()
	ctx := ctxT(t)
	for _, table := range tables {
		seen := 0
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("Scan %s: %v", table, err)
			}
			for _, it := range out.Items {
				sk := it["sk"].(*types.AttributeValueMemberS).Value
				var j int
				fmt.Sscanf(sk, "s%05d", &j)
				if v := it["v"].(*types.AttributeValueMemberS).Value; v != fmt.Sprintf("value-%d", j) {
					t.Fatalf("%s %s: v %q", table, sk, v)
				}
				seen++
			}
		}
		if seen != n {
			t.Fatalf("Scan %s: %d items, want %d", table, seen, n)
		}
		q, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("byG"), Select: types.SelectCount,
			KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S("g0")}})
		if want := (n + 6) / 7; err != nil || int(q.Count) != want {
			t.Fatalf("Query %s byG: %v items, %v; want %d", table, q, err, want)
		}
	}
}

// keyFile is the part of a tenant key file the tests look at.
type keyFile struct {
	Current  uint32 `json:"current"`
	Versions []struct {
		Version uint32 `json:"v"`
		KEK     string `json:"kek"`
	} `json:"versions"`
	Rotation *client.KeyRotation `json:"rotation"`
}

func readKeyFile(t *testing.T, dir, tenant string) keyFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, node.TenantKeysDir, tenant))
	if err != nil {
		t.Fatal(err)
	}
	var f keyFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// cli runs the tenantdb command against srv with the operator key.
func cli(t *testing.T, srv *harness.Server, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TENANTDB_ENDPOINT="+srv.Endpoint, "TENANTDB_KEY="+srv.Operator.Key)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("tenantdb %v: %v\n%s%s", args, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// TestRotateKeyKill9Resumes: `tenant rotate-key` starts a rotation; the
// server is killed with SIGKILL while it re-encrypts; after the restart
// the rotation resumes by itself and finishes; every item, index entry
// and change record reads, the old key version is destroyed (so nothing
// was left under it), B was not touched, and the audit log has the
// rotation's start and end. A second rotation through the CLI shows its
// progress and ends at version 3.
func TestRotateKeyKill9Resumes(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir)
	tables := []string{"Rot1", "Rot2", "Rot3", "Rot4"}
	for i, name := range tables {
		stream := ""
		if i == 0 {
			stream = "NEW_AND_OLD_IMAGES"
		}
		createTable(t, srv.Client(srv.Operator), name, stream)
	}
	a, b := srv.NewTenant(t, "rot-a", "admin"), srv.NewTenant(t, "rot-b", "admin")
	const n = 1000
	fill(t, srv.Client(a), tables, n)
	fill(t, srv.Client(b), tables[:1], 100)
	bBefore := readKeyFile(t, dir, b.TenantID)

	ctx := ctxT(t)
	e, err := srv.Admin().RotateTenantKey(ctx, a.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if e.Rotation == nil || e.Rotation.From != 1 || e.Rotation.To != 2 {
		t.Fatalf("rotate-key answered %+v", e)
	}
	// Kill it once the first tables are done, mid-way.
	for e.Rotation != nil && e.Rotation.Done == 0 {
		if e, err = srv.Admin().Encryption(ctx, a.TenantID); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	srv.Kill(t)
	mid := readKeyFile(t, dir, a.TenantID)
	if mid.Rotation == nil || len(mid.Versions) != 2 || mid.Rotation.Done == 0 {
		t.Fatalf("after kill -9 the rotation is not half done (%+v): it finished too fast to test resuming; add data", mid)
	}
	t.Logf("killed with %d values re-encrypted", mid.Rotation.Done)

	srv = start(t, dir)
	deadline := time.Now().Add(90 * time.Second)
	for {
		e, err = srv.Admin().Encryption(ctx, a.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		if e.Rotation == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the resumed rotation did not finish: %+v", e)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if f := readKeyFile(t, dir, a.TenantID); f.Current != 2 || len(f.Versions) != 1 || f.Versions[0].Version != 2 {
		t.Fatalf("key file after the rotation: %+v; want only version 2", f)
	}
	verifyAll(t, srv.Client(a), tables, n)
	if imgs := streamImages(t, srv, a, "Rot1"); len(imgs) == 0 {
		t.Fatal("no change records readable after the rotation")
	}
	if f := readKeyFile(t, dir, b.TenantID); f.Current != bBefore.Current || len(f.Versions) != 1 {
		t.Fatalf("B's key changed: %+v", f)
	}
	verifyAll(t, srv.Client(b), tables[:1], 100)

	stdout, stderr := cli(t, srv, "tenant", "rotate-key", a.TenantID, "--interval", "20ms")
	if !strings.Contains(stdout, "AES-256-GCM") || !strings.Contains(stdout, "idle") || strings.Fields(strings.Split(stdout, "\n")[1])[1] != "3" {
		t.Fatalf("rotate-key output:\n%s\nstderr:\n%s", stdout, stderr)
	}
	t.Logf("rotate-key printed:\n%s%s", stderr, stdout)
	verifyAll(t, srv.Client(a), tables, n)

	page, err := srv.Admin().Audit(ctx, a.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range page.Records {
		count[r.Action]++
	}
	if count["tenant.rotate-key"] != 2 || count["tenant.rotate-key.done"] != 2 {
		t.Fatalf("A's audit log: %v; want two rotations started and done", count)
	}
	if v, err := srv.Admin().VerifyAudit(ctx, a.TenantID); err != nil || !v.OK {
		t.Fatalf("A's audit chain after re-encryption: %+v, %v", v, err)
	}
}

// TestServerKeyRotateThenRestart: `server-key rotate` replaces the key
// file and re-wraps every tenant key; after a restart every credential
// and every tenant's data still open. A rotation interrupted right after
// its new key was written (server.key.next left behind) is finished at
// start-up.
func TestServerKeyRotateThenRestart(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir)
	createTable(t, srv.Client(srv.Operator), "Key1", "NEW_IMAGE")
	a, b := srv.NewTenant(t, "sk-a", "admin"), srv.NewTenant(t, "sk-b", "admin")
	fill(t, srv.Client(a), []string{"Key1"}, 200)
	fill(t, srv.Client(b), []string{"Key1"}, 100)
	keyFile := func() string {
		b, err := os.ReadFile(filepath.Join(dir, "server.key"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before, kekBefore := keyFile(), readKeyFile(t, dir, a.TenantID).Versions[0].KEK

	stdout, _ := cli(t, srv, "server-key", "rotate")
	if !strings.Contains(stdout, "KEY CHECK") {
		t.Fatalf("server-key rotate printed %q", stdout)
	}
	if keyFile() == before {
		t.Fatal("server.key unchanged after the rotation")
	}
	if _, err := os.Stat(filepath.Join(dir, "server.key.next")); !os.IsNotExist(err) {
		t.Fatalf("server.key.next after the rotation: %v", err)
	}
	for _, ten := range []string{a.TenantID, b.TenantID} {
		if f := readKeyFile(t, dir, ten); f.Versions[0].KEK == kekBefore {
			t.Fatalf("tenant %s's key still wrapped under the old server key", ten)
		}
	}
	st, err := srv.Admin().ServerKey(ctxT(t))
	if err != nil || st.Other != 0 || st.Current < 2 {
		t.Fatalf("server-key show: %+v, %v", st, err)
	}
	verifyAll(t, srv.Client(a), []string{"Key1"}, 200) // online: the same process

	srv.Stop(t)
	srv = start(t, dir)
	verifyAll(t, srv.Client(a), []string{"Key1"}, 200)
	verifyAll(t, srv.Client(b), []string{"Key1"}, 100)
	if imgs := streamImages(t, srv, a, "Key1"); len(imgs) == 0 {
		t.Fatal("no change records readable after the server key rotation")
	}

	// A crash right after step 1: the next key is on disk, nothing else.
	srv.Stop(t)
	next := randHex(32) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "server.key.next"), []byte(next), 0o600); err != nil {
		t.Fatal(err)
	}
	srv = start(t, dir)
	if keyFile() != next {
		t.Fatal("the interrupted rotation was not finished at start-up")
	}
	verifyAll(t, srv.Client(a), []string{"Key1"}, 200)
	verifyAll(t, srv.Client(b), []string{"Key1"}, 100)
	srv.Stop(t)
	srv = start(t, dir)
	verifyAll(t, srv.Client(b), []string{"Key1"}, 100)
}

// TestServerKeyRotateKeepsWebhookSecrets: a webhook subscription made
// before `server-key rotate` still signs its deliveries after the server
// restarts with the new key: the key sealing the subscriptions' signing
// secrets at rest is re-sealed by the rotation, not derived from the
// server key at each start.
func TestServerKeyRotateKeepsWebhookSecrets(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the tenantdb binary")
	}
	dir := t.TempDir()
	srv := harness.StartBinary(t, bin, dir, "--fairness=false", "--allow-private-webhooks")
	createTable(t, srv.Client(srv.Operator), "Hooked", "NEW_IMAGE")
	a := srv.NewTenant(t, "wh-a", "admin")
	rc := harness.StartReceiver(t)
	sub, err := (&client.Client{Endpoint: srv.Endpoint, Key: a.Key}).CreateSubscription(ctxT(t), a.TenantID,
		client.CreateSubscriptionRequest{Table: "Hooked", URL: rc.URL, BatchSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	rc.TrustOnly(sub.Secret)
	if stdout, _ := cli(t, srv, "server-key", "rotate"); !strings.Contains(stdout, "KEY CHECK") {
		t.Fatalf("server-key rotate printed %q", stdout)
	}
	srv.Stop(t)
	srv = harness.StartBinary(t, bin, dir, "--fairness=false", "--allow-private-webhooks")
	fill(t, srv.Client(a), []string{"Hooked"}, 3)
	rc.WaitFor(t, 30*time.Second, "signed deliveries after the restart", func(got []harness.Received) bool { return len(got) > 0 })
	if n := rc.Invalid(); n != 0 {
		t.Errorf("%d deliveries not signed with the subscription's secret after the rotation", n)
	}
}
