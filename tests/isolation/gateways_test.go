package isolation

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestGatewaysIsolation attacks a fleet of two gateways over one engine,
// whose control plane (tenants, keys, audit, quotas, usage) lives in the
// engine: tenant B, through either gateway, neither reads, changes nor
// counts anything of tenant A, whose records another gateway wrote; its
// items whose keys spell A's control records' engine keys reach nothing
// of A's.
func TestGatewaysIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	gws := harness.StartCluster(t, 2, harness.Options{}).Gateways
	ctx := context.Background()
	op := gws[0].Client(gws[0].Operator)
	_, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("fleet"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	harness.WaitActive(t, ctx, op, "fleet")
	aApp := gws[0].NewTenant(t, "victim", "app")
	bApp := gws[1].NewTenant(t, "attacker", "app")
	bAdmin := gws[1].NewKey(t, bApp.TenantID, "admin")
	secret := "SECRET-" + randHex(8)

	put := func(s *harness.Server, c harness.Credential, pk string) error {
		_, err := s.Client(c).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("fleet"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: secret}}})
		return err
	}
	// The shared table reaches the second gateway within its staleness bound.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := put(gws[1], aApp, "a-1")
		if err == nil {
			break
		}
		var ae smithy.APIError
		if time.Now().After(deadline) || !(errors.As(err, &ae) && ae.ErrorCode() == "ResourceNotFoundException") {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 4 {
		if err := put(gws[i%2], aApp, fmt.Sprintf("a-%d", i+2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := put(gws[1], bApp, "b-1"); err != nil {
		t.Fatal(err)
	}
	// Items whose keys spell A's control records' engine partition: they
	// land in B's own collection and change nothing of A's.
	ctlPK := "ctl#" + hex.EncodeToString(append([]byte{'t'}, mustHex(t, aApp.TenantID)...))
	for _, pk := range []string{ctlPK, "ctl#63", "ctl#73", "meta#reg", "meta#def#shared"} {
		if err := put(gws[1], bApp, pk); err != nil {
			t.Fatalf("B's item %q: %v", pk, err)
		}
	}

	leak := func(where, body string) {
		t.Helper()
		if strings.Contains(body, secret) && !strings.Contains(where, "own") {
			t.Errorf("LEAK: %s shows A's value", where)
		}
		if strings.Contains(strings.ToLower(body), aApp.TenantID) {
			t.Errorf("LEAK: %s names A's tenant id", where)
		}
	}
	for gi, g := range gws {
		c := g.Client(bApp)
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("fleet"), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a-1"}}})
		if err != nil || out.Item != nil {
			t.Errorf("LEAK: gateway %d: B's GetItem of A's key: %v %v", gi, out.Item, err)
		}
		for _, start := range []map[string]types.AttributeValue{nil,
			{"pk": &types.AttributeValueMemberS{Value: "a-1"}}, {"pk": &types.AttributeValueMemberS{Value: ""}}} {
			sc, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("fleet"), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
			if err != nil {
				continue // a refused start key leaks nothing
			}
			for _, it := range sc.Items {
				pk := it["pk"].(*types.AttributeValueMemberS).Value
				if strings.HasPrefix(pk, "a-") {
					t.Errorf("LEAK: gateway %d: B's Scan from %v returns A's item %s", gi, start, pk)
				}
			}
			if sc.Count != 6 && start == nil {
				t.Errorf("gateway %d: B's Scan counts %d items, want its own 6", gi, sc.Count)
			}
		}
	}

	aKeyID := aApp.AccessKeyID[len(aApp.AccessKeyID)-12:]
	calls := []struct{ method, path, body string }{
		{"GET", "/v1/tenants/%s/keys", ""},
		{"DELETE", "/v1/tenants/%s/keys/" + aKeyID, ""},
		{"POST", "/v1/tenants/%s/keys", `{"role":"admin"}`},
		{"GET", "/v1/tenants/%s/audit", ""},
		{"GET", "/v1/tenants/%s/audit/verify", ""},
		{"GET", "/v1/tenants/%s/usage", ""},
		{"GET", "/v1/tenants/%s/quota", ""},
		{"PUT", "/v1/tenants/%s/quota", `{"write_units":1}`},
		{"POST", "/v1/tenants/%s/suspend", ""},
		{"DELETE", "/v1/tenants/%s", ""},
	}
	nobody := randHex(16)
	for gi, g := range gws {
		for _, c := range calls {
			st, body := rawAdmin(t, ctx, g.Endpoint, c.method, strings.ReplaceAll(c.path, "%s", aApp.TenantID), bAdmin.Key, c.body)
			stN, bodyN := rawAdmin(t, ctx, g.Endpoint, c.method, strings.ReplaceAll(c.path, "%s", nobody), bAdmin.Key, c.body)
			if st < 400 {
				t.Errorf("LEAK: gateway %d: %s %s as B's admin: HTTP %d %s", gi, c.method, c.path, st, body)
			}
			if st != stN || strings.ReplaceAll(body, aApp.TenantID, "<ID>") != strings.ReplaceAll(bodyN, nobody, "<ID>") {
				t.Errorf("LEAK: gateway %d: %s %s answers %d %s for A, %d %s for no tenant", gi, c.method, c.path, st, body, stN, bodyN)
			}
			leak(fmt.Sprintf("gateway %d %s %s", gi, c.method, c.path), body)
		}
	}

	// Nothing of A changed, on either gateway, after the staleness bound.
	time.Sleep(2500 * time.Millisecond)
	for gi, g := range gws {
		if err := put(g, aApp, "a-after"); err != nil {
			t.Errorf("gateway %d: A's key after B's attacks: %v", gi, err)
		}
		q, err := g.Admin().Quota(ctx, aApp.TenantID, "")
		if err != nil || q.Set {
			t.Errorf("gateway %d: A's quota after B's attacks: %+v, %v", gi, q, err)
		}
		tn, err := g.Admin().Tenant(ctx, aApp.TenantID)
		if err != nil || tn.Status != "active" {
			t.Errorf("gateway %d: A after B's attacks: %+v, %v", gi, tn, err)
		}
		v, err := g.Admin().VerifyAudit(ctx, aApp.TenantID)
		if err != nil || !v.OK {
			t.Errorf("gateway %d: A's audit chain: %+v, %v", gi, v, err)
		}
	}
	page, err := gws[1].Admin().Audit(ctx, aApp.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		if r.Actor == bAdmin.AccessKeyID || r.Actor == bApp.AccessKeyID {
			t.Errorf("LEAK: B's attempt %s recorded in A's audit log (it belongs in B's)", r.Action)
		}
	}
	// B's usage counts B's requests only, whichever gateway reports it.
	time.Sleep(1500 * time.Millisecond) // one usage flush
	for gi, g := range gws {
		r, err := g.Admin().Usage(ctx, bApp.TenantID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if n := r.ByOperation["PutItem"].Requests; n != 6 {
			t.Errorf("LEAK: gateway %d: B's usage counts %d PutItem requests, B made 6", gi, n)
		}
	}
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawAdmin sends one admin API request with bearer and returns the
// status and body.
func rawAdmin(t *testing.T, ctx context.Context, endpoint, method, path, bearer, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, endpoint+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}
