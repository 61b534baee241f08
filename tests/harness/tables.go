package harness

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// WaitActive waits until table name and its global secondary indexes are
// ACTIVE, polling DescribeTable with c, and fails t after 30s or on a
// DescribeTable error.
func WaitActive(t testing.TB, ctx context.Context, c *dynamodb.Client, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeTable %s: %v", name, err)
		}
		active := out.Table.TableStatus == types.TableStatusActive
		for _, g := range out.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("table %s not ACTIVE after 30s", name)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
