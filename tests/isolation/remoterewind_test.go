package isolation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// rwCollection matches the engine partition keys of item collections
// (hex(namespace)#table id#shard).
var rwCollection = regexp.MustCompile(`^[0-9a-f]+#[0-9]+#[0-9]+$`)

// rawItemsOf returns, encoded and sorted, every engine item of the item
// collections whose partition key names tenant.
func rawItemsOf(t *testing.T, f *harness.Cluster, tenant string) []string {
	t.Helper()
	var out []string
	p := dynamodb.NewScanPaginator(f.EngineClient(t), &dynamodb.ScanInput{TableName: aws.String(f.EngineTable()), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		pg, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range pg.Items {
			pk := it["tenantdb:pk"].(*types.AttributeValueMemberS).Value
			if !rwCollection.MatchString(pk) || !strings.Contains(pk, tenant) {
				continue
			}
			b, err := json.Marshal(it)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}

// TestRemoteRewindIsolation attacks in-place tenant restores on a fleet
// of two gateways (A on one, B on the other, and crossed):
//   - B's admin key cannot start or watch A's restore, through either
//     gateway, while it runs or after: the answers are a made-up
//     tenant's, and B's attempts are audited in B's log;
//   - A's restore leaves B's items of the same keys in the shared table
//     and B's table of the same name byte for byte as they were in the
//     engine (versions included), and B is served on both gateways while
//     A is fenced;
//   - B's restore status and audit log know nothing of A's restore.
func TestRemoteRewindIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := g0.Client(g0.Operator).CreateTable(ctx, isoTable("iso_rw")); err != nil {
		t.Fatal(err)
	}
	a, b := g0.NewTenant(t, "rwvictim", "admin"), g1.NewTenant(t, "rwattacker", "admin")
	ca := [2]*dynamodb.Client{g0.Client(a), g1.Client(a)}
	cb := [2]*dynamodb.Client{g1.Client(b), g0.Client(b)}
	for _, c := range []*dynamodb.Client{ca[0], cb[0]} {
		if _, err := c.CreateTable(ctx, isoTable("mine")); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []*dynamodb.Client{ca[1], cb[1]} {
		enablePITRIso(t, c, "iso_rw")
		enablePITRIso(t, c, "mine")
	}
	time.Sleep(2 * time.Second)
	for i := range 30 {
		k := fmt.Sprintf("same-%02d", i)
		put(t, ca[0], "iso_rw", k, "A-then")
		put(t, cb[0], "iso_rw", k, "B-then")
		put(t, ca[1], "mine", k, "A-then")
		put(t, cb[1], "mine", k, "B-then")
	}
	at := restoreTimeNow(t)
	for i := range 30 {
		k := fmt.Sprintf("same-%02d", i)
		put(t, ca[0], "iso_rw", k, "A-now")
		put(t, cb[0], "iso_rw", k, "B-now")
		put(t, ca[1], "mine", k, "A-now")
		put(t, cb[1], "mine", k, "B-now")
	}
	bBefore := rawItemsOf(t, f, b.TenantID)
	if len(bBefore) != 60 {
		t.Fatalf("B's engine items: %d, want 60", len(bBefore))
	}
	admA := client.New(g0.Endpoint, a.Key)
	admB := [2]*client.Client{client.New(g1.Endpoint, b.Key), client.New(g0.Endpoint, b.Key)}
	nobody := randHex(16)
	attempt := func(c *client.Client, method, tenant string) (int, string) {
		var body any
		if method == "POST" {
			body = client.RestoreRequest{ToTime: at}
		}
		err := c.Do(ctx, method, "/v1/tenants/"+tenant+"/restore", body, nil)
		var ce *client.Error
		if !errors.As(err, &ce) {
			t.Fatalf("%s restore of %s: %v", method, tenant, err)
		}
		return ce.Status, strings.ReplaceAll(ce.Message, tenant, "<T>")
	}
	attack := func(when string) {
		t.Helper()
		for i, c := range admB {
			for _, m := range []string{"POST", "GET"} {
				s1, m1 := attempt(c, m, a.TenantID)
				s2, m2 := attempt(c, m, nobody)
				if s1 != http.StatusNotFound || s1 != s2 || m1 != m2 {
					t.Errorf("%s, gateway %d, %s: A's answer %d %q, nobody's %d %q", when, i, m, s1, m1, s2, m2)
				}
			}
		}
	}
	tail := auditTailOf(t, g1, b.TenantID)
	attack("before A's restore")
	if _, err := admA.StartRestore(ctx, a.TenantID, client.RestoreRequest{ToTime: at}); err != nil {
		t.Fatal(err)
	}
	// While A is fenced: B is served on both gateways; A is refused.
	var bFail atomic.Int64
	fenced := false
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		for _, c := range cb {
			if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("mine"), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "same-01"}}}); err != nil {
				bFail.Add(1)
				t.Logf("B while A is fenced: %v", err)
			}
		}
		_, err := ca[1].GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("mine"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "same-01"}}})
		if err != nil && strings.Contains(err.Error(), "being restored") {
			fenced = true
			if strings.Contains(err.Error(), b.TenantID) {
				t.Errorf("A's refusal names B: %v", err)
			}
		}
		r, err := admA.Restore(ctx, a.TenantID)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == "done" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's restore did not finish: %+v", r)
		}
		if fenced {
			attack("during A's restore")
		}
	}
	if !fenced || bFail.Load() > 0 {
		t.Errorf("A fenced: %v; B's reads failed while A was: %d", fenced, bFail.Load())
	}
	attack("after A's restore")
	if n := deniedSince(t, g1, b.TenantID, tail, "restore"); n < 8 {
		t.Errorf("B's attempts on A's restore: %d denials audited in B's log, want at least 8", n)
	}
	if got := rawItemsOf(t, f, b.TenantID); !slices.Equal(got, bBefore) {
		t.Errorf("B's engine items changed by A's restore (%d, %d before)", len(got), len(bBefore))
	}
	for _, table := range []string{"iso_rw", "mine"} {
		for i, c := range ca {
			got := scanPairs(t, c, table)
			if len(got) != 30 || !slices.ContainsFunc(got, func(s string) bool { return s == "same-00=A-then" }) || slices.ContainsFunc(got, func(s string) bool { return !strings.HasSuffix(s, "=A-then") }) {
				t.Errorf("A's %s through gateway %d after its restore: %v", table, i, got)
			}
		}
	}
	if _, err := admB[0].Restore(ctx, b.TenantID); err == nil || !strings.Contains(err.Error(), "not been restored") {
		t.Errorf("B's restore status after A's restore: %v", err)
	}
	page, err := g1.Admin().Audit(ctx, b.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range page.Records {
		if strings.HasPrefix(rec.Action, "tenant.restore") && rec.Outcome == "ok" || strings.Contains(rec.Target, a.TenantID) {
			t.Errorf("B's audit log holds A's restore: %+v", rec)
		}
	}
}
