package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
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
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := node.Open(ctx, node.Options{InMemory: true, Endpoint: l.Addr().String(), DefaultTenant: true})
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
	engineURL := "http://" + l.Addr().String()
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

	dir := t.TempDir()
	cfg, err := parseServeConfig([]string{"--addr", "127.0.0.1:0", "--data-dir", dir, "--log-level", "error",
		"--backend", "dynamodb", "--backend-endpoint", engineURL, "--backend-region", "us-east-1", "--backend-table-prefix", "gw-"},
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
	var gateway string
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
}
