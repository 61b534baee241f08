package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/crashtest"
	"github.com/tenantdb/tenantdb/tests/harness"
)

const (
	restoreCrashEnv  = "TENANTDB_RESTORE_CRASH_DIR"
	restoreCrashAt   = 8000  // items at the restore time
	restoreCrashLate = 12000 // items created after it
)

// restoreCrashItem is item i as it was at the restore time (v1) or after
// (v2).
func restoreCrashItem(i int, v string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("p%05d", i)},
		"v": &types.AttributeValueMemberS{Value: v}, "pad": &types.AttributeValueMemberS{Value: strings.Repeat("x", i%64)}}
}

// TestTenantRestoreCrash kills a server with SIGKILL while a tenant's
// in-place restore is halfway, restarts it on the same data: the restore
// is resumed and finished by itself, the tenant's reads in between are
// refused (never a half-restored table), and the tenant ends with exactly
// its items at the restore time.
func TestTenantRestoreCrash(t *testing.T) {
	if dir := os.Getenv(restoreCrashEnv); dir != "" {
		restoreCrashChild(t, dir)
		return
	}
	cmd, out, dir := crashtest.Start(t, restoreCrashEnv)
	var endpoint, tenant, key, id, secret string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 6 && f[0] == "restoring" {
			endpoint, tenant, key, id, secret = f[1], f[2], f[3], f[4], f[5]
			break
		}
	}
	if tenant == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child never started restoring")
	}
	c := &client.Client{Endpoint: endpoint, Key: key}
	var r client.TenantRestore
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var err error
		r, err = c.Restore(context.Background(), tenant)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
		if r.State != "running" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the restore finished before the kill (%+v); make it larger", r)
		}
		if len(r.Tables) == 1 && r.Tables[0].Checked >= 2000 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	t.Logf("killed with %d of %d changed keys checked", r.Tables[0].Checked, r.Tables[0].Keys)

	srv, stop := quotaServer(t, filepath.Join(dir, "data"))
	defer stop()
	cred := harness.Credential{TenantID: tenant, Key: key, AccessKeyID: id, SecretAccessKey: secret}
	ddb := srv.Client(cred)
	want := make([]string, restoreCrashAt)
	for i := range want {
		want[i] = fmt.Sprintf("p%05d=v1", i)
	}
	c = &client.Client{Endpoint: srv.Endpoint, Key: key}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		// NB: until the restore is done, the table is refused; a read
		// never sees it half restored.
		got, err := crashScan(ddb)
		if err == nil {
			if !slices.Equal(got, want) {
				t.Fatalf("after the restart the tenant reads %d items, not its %d at the restore time", len(got), len(want))
			}
		} else if errCodeOf(err) != "ResourceInUseException" {
			t.Fatal(err)
		}
		var rerr error
		r, rerr = c.Restore(context.Background(), tenant)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if r.State == "done" && err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restore was not resumed: %+v", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r.Tables[0].Keys != restoreCrashAt+restoreCrashLate {
		t.Errorf("resumed restore: %+v", r.Tables[0])
	}
}

// crashScan returns the Crash table's items as "pk=v", sorted.
func crashScan(ddb *dynamodb.Client) ([]string, error) {
	var out []string
	p := dynamodb.NewScanPaginator(ddb, &dynamodb.ScanInput{TableName: aws.String("Crash"), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			return nil, err
		}
		for _, it := range page.Items {
			out = append(out, it["pk"].(*types.AttributeValueMemberS).Value+"="+it["v"].(*types.AttributeValueMemberS).Value)
		}
	}
	slices.Sort(out)
	return out, nil
}

// restoreCrashChild serves on dir/data, writes a history into a tenant's
// table with point-in-time recovery, starts the tenant's restore and
// waits to be killed.
func restoreCrashChild(t *testing.T, dir string) {
	srv, stop := quotaServer(t, filepath.Join(dir, "data"))
	defer stop()
	tn, err := srv.Admin().CreateTenant(t.Context(), client.CreateTenantRequest{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	cred := srv.NewKey(t, tn.ID, "admin")
	ddb := srv.Client(cred)
	ctx := context.Background()
	if _, err := ddb.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("Crash"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}); err != nil {
		t.Fatal(err)
	}
	enablePITR(t, ddb, "Crash")
	time.Sleep(1100 * time.Millisecond)
	write := func(from, to int, v string) {
		for i := from; i < to; i += 25 {
			var reqs []types.WriteRequest
			for j := i; j < min(i+25, to); j++ {
				reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: restoreCrashItem(j, v)}})
			}
			if _, err := ddb.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"Crash": reqs}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, restoreCrashAt, "v1")
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	write(0, restoreCrashAt+restoreCrashLate, "v2")
	qcli(t, srv, cred.Key, false, "tenant", "restore", tn.ID, "--to-time", at.Format(time.RFC3339Nano), "--no-wait")
	fmt.Printf("restoring %s %s %s %s %s\n", srv.Endpoint, tn.ID, cred.Key, cred.AccessKeyID, cred.SecretAccessKey)
	time.Sleep(10 * time.Minute)
}
