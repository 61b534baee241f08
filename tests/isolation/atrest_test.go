package isolation

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// diskNode is a server on a data directory, assembled as serve does.
type diskNode struct {
	n   *node.Node
	srv *harness.Server
}

func openDiskNode(t *testing.T, dir string, operator string) *diskNode {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.Open(context.Background(), node.Options{DataDir: dir, Region: harness.Region, Endpoint: l.Addr().String(), OperatorKey: operator})
	if err != nil {
		t.Fatal(err)
	}
	go n.Serve(l)
	op := n.Bootstrap().Operator
	srv := &harness.Server{Endpoint: "http://" + l.Addr().String()}
	if op.ID != "" {
		srv.Operator = harness.Credential{AccessKeyID: op.AccessKeyID(), SecretAccessKey: op.Secret, Key: op.String()}
	}
	return &diskNode{n: n, srv: srv}
}

func (d *diskNode) close(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d.n.Shutdown(ctx)
	if err := d.n.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStoredValuesOpenOnlyForTheirTenant attacks the store's files, as
// someone with access to the disk (or to a backup) could: A's stored
// ciphertexts are copied over B's items, index entries included, at the
// same table and item keys. B's key never decrypts them: B's reads fail
// (and return none of A's values) instead of showing A's data, while A
// still reads its own. Unlike the other suites this one is not
// black-box: the attacker here is below the API.
func TestStoredValuesOpenOnlyForTheirTenant(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("on-disk server")
	}
	dir := t.TempDir()
	d := openDiskNode(t, dir, "")
	opKey := d.srv.Operator.Key
	ctx := context.Background()
	op := d.srv.Client(d.srv.Operator)
	if _, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String("swap_target"),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		BillingMode: types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	a, b := d.srv.NewTenant(t, "swap-a", "app"), d.srv.NewTenant(t, "swap-b", "app")
	secret := "SECRET-A-" + randHex(8)
	for _, c := range []struct {
		cred  harness.Credential
		value string
	}{{a, secret}, {b, "B's own value"}} {
		for _, pk := range []string{"p1", "p2"} {
			if _, err := d.srv.Client(c.cred).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("swap_target"),
				Item: map[string]types.AttributeValue{"pk": S(pk), "g": S("gee"), "v": S(c.value)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	d.close(t)

	// Copy every stored value of A's namespace over the same key in B's.
	ta, _ := tenancy.ParseTenantID(a.TenantID)
	tb, _ := tenancy.ParseTenantID(b.TenantID)
	nsA, nsB := keyspace.Namespace(ta, "live"), keyspace.Namespace(tb, "live")
	db, err := storage.Open(dir+"/db", storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	batch := db.NewBatch()
	it := db.NewIter(nsA, keyspace.PrefixEnd(nsA))
	copied := 0
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		kind := k[len(nsA)]
		if kind != keyspace.Items(nsA, 0)[len(nsA)] && kind != keyspace.Index(nsA, 0, 0)[len(nsA)] {
			continue // only items and index entries
		}
		if bytes.Contains(it.Value(), []byte(secret)) {
			t.Fatal("A's value is stored in plaintext")
		}
		batch.Set(append(bytes.Clone(nsB), k[len(nsA):]...), bytes.Clone(it.Value()))
		copied++
	}
	it.Close()
	if copied != 4 { // two items, two index entries
		t.Fatalf("copied %d values of A, want 4", copied)
	}
	if err := db.Apply(batch); err != nil {
		t.Fatal(err)
	}
	batch.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	d = openDiskNode(t, dir, opKey)
	defer d.close(t)
	cb := d.srv.Client(b)
	refused := func(what string, out any, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("LEAK: B's %s over A's ciphertexts answered %+v", what, out)
			return
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("LEAK: B's %s error shows A's value: %v", what, err)
		}
	}
	out, err := cb.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("swap_target"), Key: map[string]types.AttributeValue{"pk": S("p1")}})
	refused("GetItem", out, err)
	q, err := cb.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("swap_target"), IndexName: aws.String("byG"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S("gee")}})
	refused("index Query", q, err)
	s, err := cb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("swap_target")})
	refused("Scan", s, err)
	// A's own values are intact.
	got, err := d.srv.Client(a).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("swap_target"), Key: map[string]types.AttributeValue{"pk": S("p2")}})
	if err != nil || got.Item["v"].(*types.AttributeValueMemberS).Value != secret {
		t.Fatalf("A's own item: %v, %v", got, err)
	}
}
