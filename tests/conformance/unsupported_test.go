package conformance

// What tenantdb does not have yet is refused or described truthfully:
// no table reports an encryption nothing does, no tenant is given a tier that has no effect, and DescribeLimits
// reports the quota that actually limits the caller.

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/tests/harness"
)

func plainTable(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}
}

// wantValidation fails t unless err is a ValidationException whose message
// contains msg.
func wantValidation(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || !strings.Contains(ae.ErrorMessage(), msg) {
		t.Errorf("%s: %v; want ValidationException containing %q", what, err, msg)
	}
}

// TestEncryptionAtRest: every table is encrypted under the tenant's data
// key, which DescribeTable reports (SSEType AES256, no KMS key); asking
// for encryption without a KMS key, or for none (DynamoDB's owned key),
// is accepted and changes nothing; asking for a KMS key is refused,
// since there is none.
func TestEncryptionAtRest(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	wantSSE := func(what, table string) {
		t.Helper()
		d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		s := d.Table.SSEDescription
		if s == nil || s.Status != types.SSEStatusEnabled || s.SSEType != types.SSETypeAes256 || s.KMSMasterKeyArn != nil {
			t.Errorf("%s: SSEDescription %+v; want ENABLED, AES256, no KMS key", what, s)
		}
	}

	in := plainTable("kms")
	in.SSESpecification = &types.SSESpecification{Enabled: aws.Bool(true), SSEType: types.SSETypeKms}
	_, err := c.CreateTable(ctx, in)
	wantValidation(t, "CreateTable with a KMS key", err, "tenantdb has no KMS keys")
	if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("kms")}); err == nil {
		t.Error("the refused table kms exists")
	}

	for name, spec := range map[string]*types.SSESpecification{
		"default": nil,
		"owned":   {Enabled: aws.Bool(false)},
		"enabled": {Enabled: aws.Bool(true)},
	} {
		in = plainTable(name)
		in.SSESpecification = spec
		out, err := c.CreateTable(ctx, in)
		if err != nil {
			t.Fatalf("CreateTable %s: %v", name, err)
		}
		if s := out.TableDescription.SSEDescription; s == nil || s.SSEType != types.SSETypeAes256 {
			t.Errorf("CreateTable %s: SSEDescription %+v", name, s)
		}
		wantSSE("DescribeTable "+name, name)
	}
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("default"),
		SSESpecification: &types.SSESpecification{Enabled: aws.Bool(true), KMSMasterKeyId: aws.String("alias/mine")}})
	wantValidation(t, "UpdateTable to a KMS key", err, "tenantdb has no KMS keys")
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("default"),
		SSESpecification: &types.SSESpecification{Enabled: aws.Bool(true)}}); err != nil {
		t.Fatalf("UpdateTable enabling encryption: %v", err)
	}
	wantSSE("DescribeTable after UpdateTable", "default")
}

// TestDescribeLimitsIsTheQuota: a tenant sees its own quota (the server
// default, then what the operator set), the operator the server default.
func TestDescribeLimitsIsTheQuota(t *testing.T) {
	srv := harness.Start(t)
	ctx := ctxT(t)
	// NB: over a fleet of gateways, a quota set through one is seen by
	// the others within the fleet's bound, as any control change.
	check := func(what string, c *dynamodb.Client, read, write int64) {
		t.Helper()
		settled(t, srv, func() string {
			l, err := c.DescribeLimits(ctx, &dynamodb.DescribeLimitsInput{})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			got := [4]int64{aws.ToInt64(l.AccountMaxReadCapacityUnits), aws.ToInt64(l.AccountMaxWriteCapacityUnits),
				aws.ToInt64(l.TableMaxReadCapacityUnits), aws.ToInt64(l.TableMaxWriteCapacityUnits)}
			if want := [4]int64{read, write, read, write}; got != want {
				return fmt.Sprintf("%s: DescribeLimits account %d/%d, table %d/%d; want %v", what, got[0], got[1], got[2], got[3], want)
			}
			return ""
		})
	}
	a, b := srv.NewTenant(t, "acme", "app"), srv.NewTenant(t, "globex", "app")
	check("operator", srv.Client(srv.Operator), 1000, 1000)
	check("tenant without a quota", srv.Client(a), 1000, 1000)
	err := srv.Admin().Do(ctx, http.MethodPut, "/v1/tenants/"+a.TenantID+"/quota", map[string]any{"read_units": 500.5, "write_units": 200}, nil)
	if err != nil {
		t.Fatal(err)
	}
	check("tenant with a quota", srv.Client(a), 500, 200)
	check("another tenant", srv.Client(b), 1000, 1000)
}

// TestSiloTier: the embedded engine keeps a silo-tier tenant's data in a
// store of its own, so creating one succeeds and tenant show says where
// each table's data lives (tests/crash checks the store on disk); a
// gateway over a remote engine cannot, and refuses the tier.
func TestSiloTier(t *testing.T) {
	srv := harness.Start(t)
	ctx := ctxT(t)
	tn, err := srv.Admin().CreateTenant(ctx, admin.CreateTenantRequest{Name: "vault", Tier: "silo"})
	if srv.Remote {
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, "tier silo is not supported") {
			t.Fatalf("create tenant with tier silo over a remote engine: %v; want 400 saying silo is not supported", err)
		}
		if ts, err := srv.Admin().Tenants(ctx); err != nil || len(ts) != 1 {
			t.Errorf("tenants after the refusal: %v, %v; want only default", ts, err)
		}
		return
	}
	if err != nil || tn.Tier != "silo" {
		t.Fatalf("create tenant with tier silo: %+v, %v", tn, err)
	}
	_, err = srv.Client(srv.Operator).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("Shared"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	pooled, err := srv.Admin().CreateTenant(ctx, admin.CreateTenantRequest{Name: "pooled", Tier: "pool"})
	if err != nil || pooled.Tier != "pool" {
		t.Fatalf("create tenant with tier pool: %+v, %v", pooled, err)
	}
	for _, c := range []struct{ id, store string }{{tn.ID, "silo"}, {pooled.ID, "pool"}} {
		key := srv.NewKey(t, c.id, "app")
		if _, err := srv.Client(key).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Shared"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
			t.Fatal(err)
		}
		shown, err := srv.Admin().Tenant(ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if len(shown.Placement) != 1 || shown.Placement[0].Table != "Shared" || shown.Placement[0].Store != c.store || !shown.Placement[0].HasData {
			t.Errorf("tenant show %s: placement %+v, want Shared in %s with data", c.id, shown.Placement, c.store)
		}
	}
}
