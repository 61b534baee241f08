package gateways

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// bound is the staleness the gateways promise (2 × node.FleetStaleness),
// and slack what the test allows on top for scheduling on a loaded
// machine.
const (
	bound = 2 * node.FleetStaleness
	slack = 3 * time.Second
)

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// createTable creates a shared table as the operator through s.
func createTable(t *testing.T, s *harness.Server, name string) {
	t.Helper()
	ctx := context.Background()
	op := s.Client(s.Operator)
	_, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("create table %s: %v", name, err)
	}
	harness.WaitActive(t, ctx, op, name)
}

func put(ctx context.Context, c *dynamodb.Client, table, pk string) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
	return err
}

// within polls f until it returns true and fails the test if that takes
// longer than bound + slack; it returns how long it took.
func within(t *testing.T, what string, f func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !f() {
		if time.Since(start) > bound+slack {
			t.Fatalf("%s: not seen after %v (bound %v)", what, time.Since(start).Round(time.Millisecond), bound)
		}
		time.Sleep(50 * time.Millisecond)
	}
	d := time.Since(start)
	t.Logf("%s: seen after %v (bound %v)", what, d.Round(time.Millisecond), bound)
	return d
}

// TestOperatorBootstrap: the first gateway on an empty engine creates the
// operator and writes <data-dir>/operator-credentials; the others find it
// in the engine, write no file, and accept the first one's key.
func TestOperatorBootstrap(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	gws := f.Gateways
	ctx := context.Background()
	file0 := filepath.Join(gws[0].DataDir, auth.OperatorCredentialsFile)
	k, err := auth.ReadCredentialsFile(file0, auth.OperatorProfile)
	if err != nil {
		t.Fatalf("the first gateway wrote no operator credentials: %v", err)
	}
	if k.String() != f.Operator.Key {
		t.Fatalf("operator-credentials holds %s, the bootstrap created %s", k.AccessKeyID(), f.Operator.AccessKeyID)
	}
	third := f.StartGateway(t, t.TempDir())
	for _, s := range append(gws[1:], third) {
		if _, err := os.Stat(filepath.Join(s.DataDir, auth.OperatorCredentialsFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("gateway %s wrote an operator credential file (err %v)", s.Endpoint, err)
		}
		who, err := s.Admin().WhoAmI(ctx)
		if err != nil || who.Role != "operator" {
			t.Errorf("the first gateway's operator key on %s: %+v, %v", s.Endpoint, who, err)
		}
	}
}

// TestKeyAcrossGateways: a tenant and key created through gateway A serve
// data through gateway B (aws-sdk-go-v2); a key revoked through B is
// refused by A as soon as the revocation returns (it settles for the
// fleet's staleness bound first); a tenant suspended through A is refused
// by B as soon as the suspension returns, and served by A as soon as B
// resumed it (a tenant that is not active is read again on each request).
func TestKeyAcrossGateways(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	createTable(t, a, "orders")

	key := a.NewTenant(t, "acme", "app")
	var err error
	within(t, "a table and a key created through A, used through B", func() bool {
		err = put(ctx, b.Client(key), "orders", "o1")
		return errCode(err) != "ResourceNotFoundException"
	})
	if err != nil {
		t.Fatalf("a key created through A, used through B: %v", err)
	}
	out, err2 := a.Client(key).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("orders"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "o1"}}, ConsistentRead: aws.Bool(true)})
	if err2 != nil || out.Item == nil {
		t.Fatalf("the item written through B, read through A: %v, %v", out, err2)
	}

	// Suspension through A, seen by B.
	if _, err := a.Admin().SuspendTenant(ctx, key.TenantID); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, b.Client(key), "orders", "o2"); errCode(err) != "TenantSuspendedException" {
		t.Fatalf("B, when the suspension through A returned: %v, want TenantSuspendedException", err)
	}
	if err := put(ctx, a.Client(key), "orders", "o2"); errCode(err) != "TenantSuspendedException" {
		t.Fatalf("A, when its suspension returned: %v, want TenantSuspendedException", err)
	}
	if _, err := b.Admin().ResumeTenant(ctx, key.TenantID); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, a.Client(key), "orders", "o3"); err != nil {
		t.Fatalf("A, when the resumption through B returned: %v", err)
	}

	// Revocation through B, seen by A (which has the key cached).
	if err := put(ctx, a.Client(key), "orders", "o4"); err != nil {
		t.Fatal(err)
	}
	id := key.AccessKeyID[len(key.AccessKeyID)-12:]
	if _, err := b.Admin().RevokeKey(ctx, key.TenantID, id); err != nil {
		t.Fatalf("revoke through B: %v", err)
	}
	if err := put(ctx, a.Client(key), "orders", "o5"); errCode(err) != "UnrecognizedClientException" {
		t.Fatalf("A, when the revocation through B returned: %v, want UnrecognizedClientException", err)
	}
}

// TestSlugRace: two gateways creating a tenant with the same slug at the
// same moment: exactly one succeeds, the other gets a conflict, every
// round.
func TestSlugRace(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	ctx := context.Background()
	for round := range 10 {
		slug := fmt.Sprintf("race-%d", round)
		var wg sync.WaitGroup
		errs := make([]error, len(gws))
		for i, s := range gws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.Admin().CreateTenant(ctx, client.CreateTenantRequest{Name: slug, Slug: slug})
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			var ae *client.Error
			switch {
			case err == nil:
				won++
			case errors.As(err, &ae) && ae.Status == 409:
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d gateways created slug %s, want 1 (%v)", round, won, slug, errs)
		}
	}
	ts, err := gws[1].Admin().Tenants(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tn := range ts {
		if len(tn.Slug) > 5 && tn.Slug[:5] == "race-" {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("%d race tenants listed, want 10", n)
	}
}

// TestAuditChainConcurrent: three gateways append to one tenant's audit
// chain at once (each creates keys for the tenant); the chain verifies
// and holds every record.
func TestAuditChainConcurrent(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 3, harness.Options{}).Gateways
	ctx := context.Background()
	tn, err := gws[0].Admin().CreateTenant(ctx, client.CreateTenantRequest{Name: "audited"})
	if err != nil {
		t.Fatal(err)
	}
	const per = 8
	var wg sync.WaitGroup
	errs := make(chan error, len(gws)*per)
	for _, s := range gws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				if _, err := s.Admin().CreateKey(ctx, tn.ID, client.CreateKeyRequest{Role: "app"}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, s := range gws {
		v, err := s.Admin().VerifyAudit(ctx, tn.ID)
		if err != nil {
			t.Fatalf("verify through %s: %v", s.Endpoint, err)
		}
		if !v.OK || v.Records < uint64(len(gws)*per) {
			t.Fatalf("verify through %s: %+v, want ok with at least %d records", s.Endpoint, v, len(gws)*per)
		}
	}
	page, err := gws[2].Admin().Audit(ctx, tn.ID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	created := 0
	for _, r := range page.Records {
		if r.Action == "key.create" {
			created++
		}
	}
	if created != len(gws)*per {
		t.Fatalf("%d key.create records, want %d", created, len(gws)*per)
	}
}

// TestQuotaAndUsageAcrossGateways: a quota set through A is what B reads
// within the bound; requests served by either gateway are billed to the
// same counters in the engine (ADD), whichever gateway reports them.
func TestQuotaAndUsageAcrossGateways(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	createTable(t, a, "metered")
	key := a.NewTenant(t, "metered", "app")
	if _, err := b.Admin().Quota(ctx, key.TenantID, ""); err != nil { // B caches the default
		t.Fatal(err)
	}
	w := 123.0
	if _, err := a.Admin().SetQuota(ctx, key.TenantID, "", client.QuotaUpdate{WriteUnits: &w}); err != nil {
		t.Fatal(err)
	}
	within(t, "a quota set through A read by B", func() bool {
		q, err := b.Admin().Quota(ctx, key.TenantID, "")
		return err == nil && q.Set && q.WriteUnits == w
	})

	probes := int64(0)
	within(t, "the table created through A on B", func() bool {
		probes++
		return errCode(put(ctx, b.Client(key), "metered", "probe")) != "ResourceNotFoundException"
	})
	const each = 20
	for i := range each {
		for _, s := range gws {
			if err := put(ctx, s.Client(key), "metered", fmt.Sprintf("%s-%d", s.Endpoint, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := int64(2 * each) // and the probes, which may or may not be billed when refused
	from := time.Now().Add(-time.Hour)
	within(t, "usage from both gateways in one report", func() bool {
		for _, s := range gws {
			r, err := s.Admin().Usage(ctx, key.TenantID, from, time.Now().Add(time.Hour))
			if err != nil || r.ByOperation["PutItem"].Requests < want+1 {
				return false
			}
			if got := r.ByOperation["PutItem"].Requests; got < want+1 || got > want+probes {
				t.Fatalf("%s reports %d PutItem requests, want %d plus 1 to %d probes", s.Endpoint, got, want, probes)
			}
		}
		return true
	})
}

// TestDeleteTenantAcrossGateways: a tenant deleted through A is refused
// by B within the bound, and nothing of it stays in the engine's control
// plane — not the records B still had cached and kept using (its key's
// last use, its usage, the audit records of refused attempts through B),
// nor its wrapped data key.
func TestDeleteTenantAcrossGateways(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 2, harness.Options{})
	gws := f.Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	createTable(t, a, "gone")
	key := a.NewTenant(t, "doomed", "app")
	within(t, "the table on B", func() bool {
		return errCode(put(ctx, b.Client(key), "gone", "p0")) != "ResourceNotFoundException"
	})
	// B caches the key, the tenant, its data key (an audited action) and
	// has usage pending.
	if _, err := b.Admin().CreateKey(ctx, key.TenantID, client.CreateKeyRequest{Role: "read"}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := put(ctx, b.Client(key), "gone", fmt.Sprint("p", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Admin().DeleteTenant(ctx, key.TenantID); err != nil {
		t.Fatal(err)
	}
	within(t, "the deletion through A seen on A", func() bool {
		_, err := a.Admin().Tenant(ctx, key.TenantID)
		var ae *client.Error
		return errors.As(err, &ae) && ae.Status == 404
	})
	within(t, "the deleted tenant's key refused by B", func() bool {
		code := errCode(put(ctx, b.Client(key), "gone", "late"))
		return code == "UnrecognizedClientException" || code == "TenantSuspendedException"
	})
	// Refused attempts through B, with the right and a wrong secret.
	bad := key
	bad.SecretAccessKey = "wrong" + bad.SecretAccessKey[5:]
	for range 3 {
		_ = put(ctx, b.Client(key), "gone", "late")
		_ = put(ctx, b.Client(bad), "gone", "late")
	}
	time.Sleep(bound + 500*time.Millisecond) // usage flushes, last-use writes

	eng := f.EngineClient(t)
	id, err := hex.DecodeString(key.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := eng.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(f.EngineTable()),
		KeyConditionExpression:    aws.String("#p = :p"),
		ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "ctl#" + hex.EncodeToString(append([]byte{'t'}, id...))}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 0 {
		var keys []string
		for _, it := range out.Items {
			keys = append(keys, fmt.Sprintf("%q", it["tenantdb:sk"].(*types.AttributeValueMemberB).Value))
		}
		t.Fatalf("%d control records of the deleted tenant are still in the engine: %v", len(out.Items), keys)
	}
	dk, err := eng.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(f.EngineTable()), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"tenantdb:pk": &types.AttributeValueMemberS{Value: "ctl#" + hex.EncodeToString([]byte("s"))},
			"tenantdb:sk": &types.AttributeValueMemberB{Value: append([]byte("stkey/"), id...)},
		}})
	if err != nil || dk.Item != nil {
		t.Fatalf("the deleted tenant's wrapped data key is still in the engine: %v, %v", dk.Item, err)
	}
}

// TestSessionAcrossGateways: temporary credentials minted through A (the
// fleet shares the server key that seals them) work through B, and end
// on B within the bound when the key that minted them is revoked
// through A.
func TestSessionAcrossGateways(t *testing.T) {
	t.Parallel()
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	a, b := gws[0], gws[1]
	ctx := context.Background()
	createTable(t, a, "sessions")
	admin := a.NewTenant(t, "vending", "admin")
	minter := &client.Client{Endpoint: a.Endpoint, Key: admin.Key}
	sess, err := minter.CreateSession(ctx, admin.TenantID, client.SessionRequest{Role: "app"})
	if err != nil {
		t.Fatal(err)
	}
	c := dynamodb.New(dynamodb.Options{Region: harness.Region, BaseEndpoint: aws.String(b.Endpoint), RetryMaxAttempts: 1,
		HTTPClient: harness.HTTPClient(),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: sess.AccessKeyID, SecretAccessKey: sess.SecretAccessKey, SessionToken: sess.SessionToken}, nil
		})})
	within(t, "a session minted through A, used through B", func() bool {
		err = put(ctx, c, "sessions", "s1")
		return errCode(err) != "ResourceNotFoundException"
	})
	if err != nil {
		t.Fatalf("session through B: %v", err)
	}
	if _, err := a.Admin().RevokeKey(ctx, admin.TenantID, admin.AccessKeyID[len(admin.AccessKeyID)-12:]); err != nil {
		t.Fatal(err)
	}
	within(t, "the minting key revoked through A ends the session on B", func() bool {
		return errCode(put(ctx, c, "sessions", "s2")) == "UnrecognizedClientException"
	})
}

// TestFleetServerKey: a gateway started with another server key than the
// one the engine's credentials are sealed under refuses to start, saying
// why; rotating the server key through a gateway whose key comes from
// TENANTDB_SERVER_KEY is refused (serverkey_test.go rotates a fleet).
func TestFleetServerKey(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 1, harness.Options{})
	gws := f.Gateways
	err := f.StartGatewayWithKey(t, t.TempDir(), strings.Repeat("ab", 32))
	if err == nil || !strings.Contains(err.Error(), "sealed under another server key") {
		t.Fatalf("a gateway with another server key: %v, want a refusal naming the server key", err)
	}
	_, err = gws[0].Admin().RotateServerKey(context.Background())
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 400 {
		t.Fatalf("server key rotation on a gateway: %v, want a 400 refusal", err)
	}
}
