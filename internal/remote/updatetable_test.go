package remote_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestUpdateTableSettings: UpdateTable changes billing, throughput,
// deletion protection and table class on the remote backend, as the
// embedded engine validates and reports them, seen by DescribeTable; an
// index change is refused as not served yet; another tenant's same-named
// table is untouched.
func TestUpdateTableSettings(t *testing.T) {
	for name, start := range engines(t, false) {
		t.Run(name, func(t *testing.T) { updateTableSettings(t, start(t)) })
	}
}

func updateTableSettings(t *testing.T, srv *harness.Server) {
	ctx := context.Background()
	a := srv.Client(srv.Default)
	b := srv.Client(srv.NewTenant(t, "ut-other", "admin"))
	createTable(t, a, "utab")
	createTable(t, b, "utab")
	upd := func(in *dynamodb.UpdateTableInput) error {
		in.TableName = aws.String("utab")
		_, err := a.UpdateTable(ctx, in)
		return err
	}
	describe := func(c *dynamodb.Client) *types.TableDescription {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("utab")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Table
	}
	if err := upd(&dynamodb.UpdateTableInput{BillingMode: types.BillingModeProvisioned}); err == nil || !strings.Contains(err.Error(), "ProvisionedThroughput must be specified") {
		t.Errorf("PROVISIONED without throughput: %v", err)
	}
	if err := upd(&dynamodb.UpdateTableInput{BillingMode: types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(7), WriteCapacityUnits: aws.Int64(3)}}); err != nil {
		t.Fatal(err)
	}
	d := describe(a)
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModeProvisioned ||
		aws.ToInt64(d.ProvisionedThroughput.ReadCapacityUnits) != 7 || aws.ToInt64(d.ProvisionedThroughput.WriteCapacityUnits) != 3 {
		t.Errorf("after the update: billing %+v, throughput %+v", d.BillingModeSummary, d.ProvisionedThroughput)
	}
	if err := upd(&dynamodb.UpdateTableInput{DeletionProtectionEnabled: aws.Bool(true), TableClass: types.TableClassStandardInfrequentAccess}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("utab")}); err == nil || !strings.Contains(err.Error(), "protected against deletion") {
		t.Errorf("DeleteTable of a protected table: %v", err)
	}
	if err := upd(&dynamodb.UpdateTableInput{TableClass: "COLD"}); err == nil || !strings.Contains(err.Error(), "ValidationException") {
		t.Errorf("a bad table class: %v", err)
	}
	err := upd(&dynamodb.UpdateTableInput{
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
			IndexName: aws.String("byg"), KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection:            &types.Projection{ProjectionType: types.ProjectionTypeAll},
			ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(1), WriteCapacityUnits: aws.Int64(1)}}}}})
	if err == nil || !strings.Contains(err.Error(), "not supported by the remote") {
		t.Errorf("creating an index: %v, want it refused as not served", err)
	}
	if err := upd(&dynamodb.UpdateTableInput{DeletionProtectionEnabled: aws.Bool(false), BillingMode: types.BillingModePayPerRequest}); err != nil {
		t.Fatal(err)
	}
	if d := describe(a); d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest || len(d.GlobalSecondaryIndexes) != 0 {
		t.Errorf("back on demand: %+v, indexes %v", d.BillingModeSummary, d.GlobalSecondaryIndexes)
	}
	if d := describe(b); (d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest) || aws.ToBool(d.DeletionProtectionEnabled) {
		t.Errorf("LEAK: B's table of the same name changed: %+v", d)
	}
	if _, err := a.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("utab")}); err != nil {
		t.Errorf("DeleteTable after protection was turned off: %v", err)
	}
}
