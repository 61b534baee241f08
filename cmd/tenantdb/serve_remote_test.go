package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
)

// TestServeOverRemoteBackend runs `serve --backend dynamodb` against a
// second tenantdb as the engine, whose tenant credential the gateway
// finds through the standard AWS chain (AWS_SHARED_CREDENTIALS_FILE and
// AWS_PROFILE), and checks that an item written through the gateway
// lives in the engine.
func TestServeOverRemoteBackend(t *testing.T) {
	engine, engineURL, gateway, dir := startGateway(t, "gw-")
	ctx := context.Background()

	data, err := os.ReadFile(filepath.Join(dir, "default-credentials"))
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`aws_access_key_id\s*=\s*(\S+)`).FindStringSubmatch(string(data))
	secret := regexp.MustCompile(`aws_secret_access_key\s*=\s*(\S+)`).FindStringSubmatch(string(data))
	if id == nil || secret == nil {
		t.Fatalf("default-credentials:\n%s", data)
	}
	client := func(url, id, secret string) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
			Credentials: credentials.NewStaticCredentialsProvider(id, secret, "")})
	}
	gw := client(gateway, id[1], secret[1])
	if _, err := gw.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("Orders"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest}); err != nil {
		t.Fatal(err)
	}
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "o1"}, "v": &types.AttributeValueMemberS{Value: "through the gateway"}}
	if _, err := gw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: item}); err != nil {
		t.Fatal(err)
	}
	got, err := gw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Orders"), Key: map[string]types.AttributeValue{"pk": item["pk"]}})
	if err != nil || len(got.Item) != 2 {
		t.Fatalf("GetItem through the gateway: %v, %v", got, err)
	}
	def := engine.Bootstrap().Default
	direct := client(engineURL, def.AccessKeyID(), def.Secret)
	scan, err := direct.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("gw-tenantdb"),
		FilterExpression: aws.String("v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": item["v"]}})
	if err != nil || scan.Count != 1 {
		t.Fatalf("the item in the engine's table: %v items, %v", scan.Count, err)
	}

	// tenantdb tenant shard: the operator spreads the tenant's Orders over
	// 4 engine partition keys, online.
	t.Setenv("TENANTDB_ENDPOINT", gateway)
	t.Setenv("TENANTDB_CREDENTIALS", filepath.Join(dir, "operator-credentials"))
	lout, lerr, code := cli(t, "tenant", "list", "--json")
	var tenants []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(lout), &tenants) != nil || len(tenants) != 1 {
		t.Fatalf("tenant list: %d %s %s", code, lout, lerr)
	}
	tid := tenants[0].ID
	if sout, serr, code := cli(t, "tenant", "shard", tid, "--shards", "4", "--table", "Orders"); code != 0 || !strings.Contains(sout, "Orders") {
		t.Fatalf("tenant shard --shards 4: %d %s %s", code, sout, serr)
	}
	if _, serr, code := cli(t, "tenant", "shard", tid, "--shards", "3", "--table", "Orders"); code == 0 || !strings.Contains(serr, "shard") {
		t.Errorf("tenant shard --shards 3 during a change to 4: %d %s", code, serr)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		sout, serr, code := cli(t, "tenant", "shard", tid, "--json")
		var st struct {
			Tables []struct {
				Table        string
				Shards, From int
			}
		}
		if code != 0 || json.Unmarshal([]byte(sout), &st) != nil {
			t.Fatalf("tenant shard: %d %s %s", code, sout, serr)
		}
		if len(st.Tables) == 1 && st.Tables[0].Shards == 4 && st.Tables[0].From == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change to 4 shards did not end: %s", sout)
		}
	}
	if _, serr, code := cli(t, "tenant", "shard", tid, "--shards", "3", "--table", "Orders"); code == 0 || !strings.Contains(serr, "multiple or a divisor") {
		t.Errorf("tenant shard --shards 3 from 4: %d %s", code, serr)
	}
	for i := range 40 {
		it := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("s%d", i)}, "v": &types.AttributeValueMemberS{Value: "spread"}}
		if _, err := gw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	got, err = gw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("Orders"), Key: map[string]types.AttributeValue{"pk": item["pk"]}, ConsistentRead: aws.Bool(true)})
	if err != nil || len(got.Item) != 2 {
		t.Fatalf("the item written before the change: %v, %v", got, err)
	}
	// In the engine, the items are under 4 partition keys.
	scan, err = direct.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("gw-tenantdb"),
		FilterExpression: aws.String("v = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: "spread"}}})
	if err != nil || scan.Count != 40 {
		t.Fatalf("the items in the engine's table: %v items, %v", scan.Count, err)
	}
	parts := map[string]bool{}
	for _, it := range scan.Items {
		parts[it["tenantdb:pk"].(*types.AttributeValueMemberS).Value] = true
	}
	if len(parts) != 4 {
		t.Errorf("40 items under %d engine partition keys, want 4: %v", len(parts), parts)
	}
}

// startGateway starts an in-process tenantdb as the engine and `serve
// --backend dynamodb` over it (tables prefixed prefix), the gateway
// finding the engine's credential through the AWS chain as any AWS tool;
// both stop when t ends. It returns the engine, its URL, the gateway's
// URL and its data directory.
func startGateway(t *testing.T, prefix string) (engine *node.Node, engineURL, gateway, dir string) {
	t.Helper()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	engine, err = node.Open(ctx, node.Options{InMemory: true, Endpoint: l.Addr().String(), DefaultTenant: true})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- engine.Serve(l) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		engine.Shutdown(sctx)
		<-served
		engine.Close()
	})
	engineURL = "http://" + l.Addr().String()
	creds := filepath.Join(t.TempDir(), "engine-credentials")
	if err := auth.WriteCredentialsFile(creds, "engine", engine.Bootstrap().Default, "us-east-1", engineURL); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_PROFILE", "engine")

	dir = t.TempDir()
	cfg, err := parseServeConfig([]string{"--addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "error",
		"--backend", "dynamodb", "--backend-endpoint", engineURL, "--backend-region", "us-east-1", "--backend-table-prefix", prefix},
		func(string) string { return "" }, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- serve(sctx, cfg, out) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve returned %v", err)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); gateway == ""; time.Sleep(10 * time.Millisecond) {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			gateway = m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned early: %v\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out)
		}
	}

	return engine, engineURL, gateway, dir
}
