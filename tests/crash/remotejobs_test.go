package crash

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemoteJobsSurviveKill: a gateway process running the remote
// backend's background jobs — an index backfill after UpdateTable, then a
// TTL sync after UpdateTimeToLive — is killed with kill -9 in the middle
// of each; a gateway started afterwards over the same engine resumes the
// job from its recorded position and finishes it — at its start, or,
// running already, once it finds the job stalled: the index holds
// exactly the table's items, every item has the engine's TTL copy, and
// the tenant's audit log records each job's start, resumption and end.
func TestRemoteJobsSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and kills a tenantdb process")
	}
	bin := binary(t)
	f := harness.StartCluster(t, 1, harness.Options{})
	a := f.Gateways[0]
	eng, engTable := f.EngineClient(t), f.EngineTable()
	ctx := context.Background()
	key := a.NewTenant(t, "jobs", "admin")
	ca := a.Client(key)
	if _, err := ca.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("big"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	exp := strconv.FormatInt(time.Now().Add(48*time.Hour).Unix(), 10)
	for i := 0; i < n; i += 25 {
		var reqs []types.WriteRequest
		for j := i; j < i+25; j++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk":  &types.AttributeValueMemberS{Value: fmt.Sprintf("k%05d", j)},
				"g":   &types.AttributeValueMemberS{Value: fmt.Sprintf("g%d", j%10)},
				"exp": &types.AttributeValueMemberN{Value: exp},
			}}})
		}
		for len(reqs) > 0 {
			out, err := ca.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"big": reqs}})
			if err != nil {
				t.Fatal(err)
			}
			reqs = out.UnprocessedItems["big"]
		}
	}

	// jobProgress reads the engine's record of the job under pk: whether
	// there is one, and how many items it has synced.
	jobProgress := func(pk string) (bool, int) {
		out, err := eng.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(engTable), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) == 0 {
			return false, 0
		}
		synced := 0
		if v, ok := out.Items[0]["synced"].(*types.AttributeValueMemberN); ok {
			synced, _ = strconv.Atoi(v.Value)
		}
		return true, synced
	}
	// killMidJob starts a binary gateway, has it start the job, kills it
	// with kill -9 once the job has synced part of the table, calls after
	// and waits for another gateway to finish the job.
	killMidJob := func(pk string, start func(c *dynamodb.Client) error, after func()) {
		t.Helper()
		victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
		if err := start(victim.Client(key)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			there, synced := jobProgress(pk)
			if !there {
				t.Fatalf("%s: the job ended before the kill: the test checks nothing (more items needed)", pk)
			}
			if synced > 0 {
				t.Logf("%s: kill -9 after %d of %d items", pk, synced, n)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the job made no progress", pk)
			}
			time.Sleep(5 * time.Millisecond)
		}
		victim.Kill(t)
		if there, synced := jobProgress(pk); !there || synced >= n {
			t.Fatalf("%s: the job was done at the kill (there %v, synced %d)", pk, there, synced)
		}
		after()
		deadline = time.Now().Add(120 * time.Second)
		for {
			there, _ := jobProgress(pk)
			if !there {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the job was never finished after the kill", pk)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// The index backfill, resumed by a gateway started after the kill,
	// which then keeps looking for jobs left stalled.
	var finisher *harness.Server
	killMidJob("meta#gsi", func(c *dynamodb.Client) error {
		_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("big"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
			GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
				IndexName:  aws.String("byg"),
				KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			}}}})
		return err
	}, func() {
		finisher = f.StartGatewayWith(t, t.TempDir(), harness.GatewayOptions{JobSweep: 5 * time.Second})
	})
	cl := finisher.Client(key)
	d, err := cl.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	if ix := d.Table.GlobalSecondaryIndexes; len(ix) != 1 || ix[0].IndexStatus != types.IndexStatusActive || aws.ToBool(ix[0].Backfilling) {
		t.Fatalf("the index after the resumed backfill: %+v", ix)
	}
	seen := map[string]bool{}
	for g := range 10 {
		p := dynamodb.NewQueryPaginator(cl, &dynamodb.QueryInput{TableName: aws.String("big"), IndexName: aws.String("byg"),
			KeyConditionExpression:    aws.String("g = :g"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: fmt.Sprintf("g%d", g)}}})
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range out.Items {
				pk := it["pk"].(*types.AttributeValueMemberS).Value
				var j int
				fmt.Sscanf(pk, "k%d", &j)
				if seen[pk] || j%10 != g {
					t.Fatalf("the index holds %s under g%d twice or wrongly", pk, g)
				}
				seen[pk] = true
			}
		}
	}
	if len(seen) != n {
		t.Fatalf("the index holds %d of the table's %d items after the resumed backfill", len(seen), n)
	}

	// The TTL sync, finished by the running gateway that finds it stalled
	// (no gateway starts).
	killMidJob("meta#ttl", func(c *dynamodb.Client) error {
		_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("big"),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
		return err
	}, func() {})
	copies, missing := 0, 0
	sc := &dynamodb.ScanInput{TableName: aws.String(engTable), ConsistentRead: aws.Bool(true)}
	for {
		out, err := eng.Scan(ctx, sc)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			if _, ok := it["exp"]; !ok {
				continue
			}
			if v, ok := it["tenantdb:ttl"].(*types.AttributeValueMemberN); ok && v.Value == exp {
				copies++
			} else {
				missing++
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		sc.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if copies != n || missing != 0 {
		t.Fatalf("after the resumed TTL sync %d items have the engine's TTL copy and %d not (want %d and 0)", copies, missing, n)
	}

	var actions []string
	page, err := a.Admin().Audit(ctx, key.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		if strings.HasPrefix(r.Action, "table.") {
			actions = append(actions, r.Action)
			t.Logf("audit: %s %s %s", r.Actor, r.Action, r.Target)
		}
	}
	for _, want := range []string{"table.index-backfill.started", "table.index-backfill.resumed", "table.index-backfill.done",
		"table.ttl-sync.started", "table.ttl-sync.resumed", "table.ttl-sync.done"} {
		if !slices.Contains(actions, want) {
			t.Errorf("the tenant's audit log has no %s record (has %v)", want, actions)
		}
	}
	if v, err := a.Admin().VerifyAudit(ctx, key.TenantID); err != nil || !v.OK {
		t.Errorf("the tenant's audit chain: %+v, %v", v, err)
	}
}
