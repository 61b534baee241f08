package gateways

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestDeletedTenantForgetsKeptStreams: the stream of a table a tenant
// deleted is kept for it (listed through the other gateway), and deleting
// the tenant deletes what the engine kept of it: no stream record or
// entry naming the tenant is left.
func TestDeletedTenantForgetsKeptStreams(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 2, harness.Options{})
	a, b := c.Gateways[0], c.Gateways[1]
	eng, table := c.Engine.Client(c.EngineKey), "gw-tenantdb"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := a.NewTenant(t, "keptstreams", "admin")
	if _, err := a.Client(key).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("kept"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
	}); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, a.Client(key), "kept", "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Client(key).DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("kept")}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.Streams(key).ListStreams(ctx, &dynamodbstreams.ListStreamsInput{})
	if err != nil || len(ls.Streams) != 1 || aws.ToString(ls.Streams[0].TableName) != "kept" {
		t.Fatalf("ListStreams through the other gateway after the deletion: %+v %v", ls, err)
	}
	streamItems := func() []string {
		var out []string
		for _, s := range engineItemsOf(t, eng, table, key.TenantID) {
			if strings.Contains(s, "meta#gone") || strings.Contains(s, "meta#stream#") {
				out = append(out, s)
			}
		}
		return out
	}
	if len(streamItems()) == 0 {
		t.Fatal("no kept stream of the tenant in the engine before its deletion: the test checks nothing")
	}
	if _, err := a.Admin().DeleteTenant(ctx, key.TenantID); err != nil {
		t.Fatal(err)
	}
	if left := streamItems(); len(left) != 0 {
		t.Errorf("kept streams of the deleted tenant are still in the engine:\n%s", strings.Join(left, "\n"))
	}
}
