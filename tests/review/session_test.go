package review

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/sdkhttp"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// sessionClient returns a DynamoDB client for temporary credentials.
func sessionClient(srv *harness.Server, s admin.Session) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       harness.Region,
		BaseEndpoint: aws.String(srv.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken}, nil
		}),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.OwnBody(&http.Client{}), // NB: no retries (see sdkhttp)
	})
}

// signedAdmin calls the admin API with a SigV4 signature of temporary
// credentials (the only way a session can reach /v1/) and returns the
// HTTP status.
func signedAdmin(t *testing.T, srv *harness.Server, s admin.Session, method, path string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(method, srv.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "dynamodb", harness.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// A temporary admin credential narrowed to one table must not escape its
// policy through the admin API: minting an unrestricted, non-expiring API
// key (or rotating, revoking, inviting) would turn a 15-minute,
// one-table credential into a permanent admin key of the tenant.
func TestNarrowedSessionCannotUseAdminAPI(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	adm := srv.NewTenant(t, "review-narrowed", "admin")
	ac := &client.Client{Endpoint: srv.Endpoint, Key: adm.Key}

	narrowed, err := ac.CreateSession(ctx, adm.TenantID, admin.SessionRequest{Role: "admin", Tables: []string{"only_this"}})
	if err != nil {
		t.Fatal(err)
	}
	full, err := ac.CreateSession(ctx, adm.TenantID, admin.SessionRequest{Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	keys := "/v1/tenants/" + adm.TenantID + "/keys"
	// Sanity: SigV4 with an unrestricted admin session reaches the route.
	if got := signedAdmin(t, srv, full, "GET", keys, nil); got != http.StatusOK {
		t.Fatalf("unrestricted admin session listing keys: status %d, want 200", got)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", keys, `{"role":"admin"}`},
		{"GET", keys, ``},
		{"POST", "/v1/tenants/" + adm.TenantID + "/sessions", `{"role":"admin"}`},
		{"GET", "/v1/tenants/" + adm.TenantID + "/audit", ``},
		{"POST", "/v1/tenants/" + adm.TenantID + "/invites", `{"role":"admin"}`},
	} {
		if got := signedAdmin(t, srv, narrowed, c.method, c.path, []byte(c.body)); got != http.StatusForbidden {
			t.Errorf("narrowed admin session: %s %s: status %d, want 403", c.method, c.path, got)
		}
	}
	list, err := ac.Keys(ctx, adm.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("tenant has %d keys after the narrowed session's attempts, want 1", len(list))
	}
}

// A narrowed session may not read the metadata of, or run DDL on, tables
// outside its policy (DescribeTable, DescribeTimeToLive, UpdateTable,
// UpdateTimeToLive, DeleteTable), whether or not they exist.
func TestNarrowedSessionTablePolicyOnMetadataAndDDL(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	adm := srv.NewTenant(t, "review-ddl", "admin")
	ac := &client.Client{Endpoint: srv.Endpoint, Key: adm.Key}
	owner := srv.Client(adm)
	for _, name := range []string{"allowed", "other"} {
		_, err := owner.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String(name),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	s, err := ac.CreateSession(ctx, adm.TenantID, admin.SessionRequest{Role: "admin", Tables: []string{"allowed"}})
	if err != nil {
		t.Fatal(err)
	}
	c := sessionClient(srv, s)
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("allowed")}); err != nil {
		t.Fatalf("DescribeTable inside the policy: %v", err)
	}
	for _, table := range []string{"other", "does_not_exist"} {
		ops := map[string]func() error{
			"DescribeTable": func() error {
				_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
				return err
			},
			"DescribeTimeToLive": func() error {
				_, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
				return err
			},
			"UpdateTimeToLive": func() error {
				_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
					TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)}})
				return err
			},
			"UpdateTable": func() error {
				_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table), DeletionProtectionEnabled: aws.Bool(true)})
				return err
			},
			"DeleteTable": func() error {
				_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
				return err
			},
		}
		for name, op := range ops {
			if got := errCode(op()); got != "AccessDeniedException" {
				t.Errorf("%s on %s outside the policy: %q, want AccessDeniedException", name, table, got)
			}
		}
	}
	d, err := owner.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("other")})
	if err != nil {
		t.Fatalf("the table outside the policy after the attempts: %v", err)
	}
	if aws.ToBool(d.Table.DeletionProtectionEnabled) {
		t.Errorf("the narrowed session changed a table outside its policy")
	}
}

// A temporary admin credential must not leave a permanent credential
// behind: creating or rotating an API key with it is refused (it may still
// list and revoke keys), as minting sessions with it is.
func TestSessionCannotMintPermanentKeys(t *testing.T) {
	srv := harness.Start(t)
	ctx := context.Background()
	adm := srv.NewTenant(t, "review-session-keys", "admin")
	ac := &client.Client{Endpoint: srv.Endpoint, Key: adm.Key}
	s, err := ac.CreateSession(ctx, adm.TenantID, admin.SessionRequest{Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	keys := "/v1/tenants/" + adm.TenantID + "/keys"
	if got := signedAdmin(t, srv, s, "POST", keys, []byte(`{"role":"admin"}`)); got != http.StatusForbidden {
		t.Errorf("admin session creating a key: status %d, want 403", got)
	}
	if got := signedAdmin(t, srv, s, "POST", keys+"/"+adm.AccessKeyID+"/rotate", []byte(`{}`)); got != http.StatusForbidden {
		t.Errorf("admin session rotating a key: status %d, want 403", got)
	}
	if got := signedAdmin(t, srv, s, "GET", keys, nil); got != http.StatusOK {
		t.Errorf("admin session listing keys: status %d, want 200", got)
	}
	list, err := ac.Keys(ctx, adm.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Errorf("tenant has %d keys after the session's attempts, want 1", len(list))
	}
	// The refusals are audited on the tenant's log.
	page, err := ac.Audit(ctx, adm.TenantID, client.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	denied := 0
	for _, r := range page.Records {
		if r.Actor == s.AccessKeyID {
			denied += int(audit.DeniedAttempts(audit.Record(r)))
		}
	}
	if denied < 2 {
		t.Errorf("%d audited refusals of the session, want 2", denied)
	}
}
