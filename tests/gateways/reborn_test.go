package gateways

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRebornTenantAcrossGateways: a tenant deleted through gateway A and
// created again with its id finds nothing of the deleted one cached on
// gateway B, which served it: B registered the deleted tenant's namespace
// and cached its incarnation and data key. Its ClientRequestToken reused
// with other parameters is not a mismatch, and reused with the same
// parameters is a new request that writes (a cached incarnation made it
// the deleted tenant's retry, acknowledged and not applied); its audit
// records (sealed by B) open on A.
func TestRebornTenantAcrossGateways(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	createTable(t, a, "ledger")

	id := strings.Repeat("5e", 16)
	mk := func() harness.Credential {
		t.Helper()
		if _, err := a.Admin().CreateTenant(ctx, client.CreateTenantRequest{Name: "phoenix", Slug: "phoenix", ID: id}); err != nil {
			t.Fatal(err)
		}
		return a.NewKey(t, id, "admin")
	}
	txn := func(c *dynamodb.Client, token, pk string) error {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String("ledger"),
				Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}}}})
		return err
	}
	dead := mk()
	within(t, "the table through B", func() bool {
		return errCode(put(ctx, b.Client(dead), "ledger", "probe")) != "ResourceNotFoundException"
	})
	for _, tok := range []string{"tok-same", "tok-other"} {
		if err := txn(b.Client(dead), tok, "old-"+tok); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Admin().CreateKey(ctx, id, client.CreateKeyRequest{Role: "read"}); err != nil {
		t.Fatal(err) // B seals an audit record under the tenant's data key
	}
	if _, err := a.Admin().DeleteTenant(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, b.Client(dead), "ledger", "zombie"); err == nil {
		t.Errorf("B served the deleted tenant's key after its deletion returned")
	}

	reborn := mk()
	rb := b.Client(reborn)
	if err := txn(rb, "tok-other", "new-other"); err != nil {
		t.Errorf("B: the reborn tenant reusing the deleted one's token with other parameters: %v", err)
	}
	if err := txn(rb, "tok-same", "old-tok-same"); err != nil {
		t.Errorf("B: the reborn tenant reusing the deleted one's token and parameters: %v", err)
	}
	for _, pk := range []string{"new-other", "old-tok-same"} {
		out, err := a.Client(reborn).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ledger"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil || out.Item == nil {
			t.Errorf("the reborn tenant's acknowledged transaction %s is not there (err %v)", pk, err)
		}
	}
	if _, err := b.Admin().CreateKey(ctx, id, client.CreateKeyRequest{Role: "read"}); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Admin().VerifyAudit(ctx, id); err != nil || !v.OK {
		t.Errorf("the reborn tenant's audit log (records sealed through B) read through A: %+v, %v", v, err)
	}
}

// TestRecreatedTableAcrossGateways: a table dropped through gateway A and
// created again as soon as the drop returned is the new table on gateway B
// too, which used the old one: a write through B lands in the new table
// (a definition cached on B put it in the dropped table's items, where it
// was acknowledged and then lost).
func TestRecreatedTableAcrossGateways(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	key := a.NewTenant(t, "churn", "admin")
	ca, cb := a.Client(key), b.Client(key)
	create := func() error {
		_, err := ca.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("scratch"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		return err
	}
	for round := range 3 {
		if err := create(); err != nil {
			t.Fatalf("round %d: create: %v", round, err)
		}
		if err := put(ctx, cb, "scratch", "before"); err != nil {
			t.Fatalf("round %d: B's write to the new table: %v", round, err)
		}
		if _, err := ca.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("scratch")}); err != nil {
			t.Fatalf("round %d: delete: %v", round, err)
		}
		if err := create(); err != nil {
			t.Fatalf("round %d: create again once the delete returned: %v", round, err)
		}
		if err := put(ctx, cb, "scratch", "after"); err != nil {
			t.Fatalf("round %d: B's write to the table created again: %v", round, err)
		}
		sc, err := ca.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("scratch"), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if sc.Count != 1 || sc.Items[0]["pk"].(*types.AttributeValueMemberS).Value != "after" {
			t.Fatalf("round %d: the table created again holds %v, want B's acknowledged write \"after\" only", round, sc.Items)
		}
		if _, err := ca.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("scratch")}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDenialsCoalescedAcrossGateways: bad signatures in a tenant's name,
// alternating between two gateways, grow its log by the fleet's denial
// rate (not by it per gateway), and a read through either gateway finds
// every attempt accounted for (the counts over the rate are in the
// engine, not in the gateway that refused them).
func TestDenialsCoalescedAcrossGateways(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	ctx := context.Background()
	createTable(t, gws[0], "guarded")
	victim := gws[0].NewTenant(t, "victim", "app")
	const flood = 400
	bad := harness.Credential{AccessKeyID: victim.AccessKeyID, SecretAccessKey: strings.Repeat("y", 40)}
	start := time.Now()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < flood; i += 8 {
				_, err := gws[i%2].Client(bad).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("guarded"),
					Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}})
				if errCode(err) != "InvalidSignatureException" {
					t.Errorf("attempt %d: %v", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for gi, g := range gws {
		var recs, sums, attempts int64
		var after uint64
		for {
			page, err := g.Admin().Audit(ctx, victim.TenantID, client.AuditQuery{After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Records {
				if r.Actor == victim.AccessKeyID && r.Action == "auth:sigv4" {
					if r.Outcome == audit.OutcomeDenied {
						recs++
					} else {
						sums++
					}
					attempts += audit.DeniedAttempts(audit.Record(r))
				}
			}
			if page.NextAfter == 0 || len(page.Records) == 0 {
				break
			}
			after = page.NextAfter
		}
		if attempts != flood {
			t.Errorf("read through gateway %d: the log accounts for %d of %d attempts", gi, attempts, flood)
		}
		// 100 at once and 20 a second for the fleet (each gateway's own
		// bucket would record twice that); a summary per gateway and
		// second, and the reader's.
		if limit := int64(100 + 20*elapsed.Seconds() + 1); recs > limit {
			t.Errorf("read through gateway %d: %d denials recorded one by one for %d attempts in %v, want at most %d (the fleet's rate, not each gateway's)", gi, recs, flood, elapsed, limit)
		}
		if limit := int64(2*(elapsed.Seconds()+2) + 2); sums > limit {
			t.Errorf("read through gateway %d: %d summaries in %v, want at most %d", gi, sums, elapsed, limit)
		}
		if gi == 0 {
			t.Logf("%d attempts over two gateways in %v: %d denials recorded one by one, %d summaries", flood, elapsed.Round(time.Millisecond), recs, sums)
		}
	}
	if v, err := gws[1].Admin().VerifyAudit(ctx, victim.TenantID); err != nil || !v.OK {
		t.Errorf("the victim's log after the flood: %+v, %v", v, err)
	}
}
