package gateways

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// holder holds the PutItem requests a gateway sends the engine whose
// item names a marker (in a string attribute, or in a binary one such as
// a definition's sort key), until the test releases the marker or the
// gateway gives up on the request (it then never reaches the engine, as a
// request the gateway cancelled before the engine read it).
type holder struct {
	mu    sync.Mutex
	gates map[string]chan struct{}
	seen  chan string
}

func newHolder(markers ...string) *holder {
	h := &holder{gates: map[string]chan struct{}{}, seen: make(chan string, len(markers))}
	for _, m := range markers {
		h.gates[m] = make(chan struct{})
	}
	return h
}

func (h *holder) release(marker string) { close(h.gates[marker]) }

// marker returns the marker body names, if any.
func (h *holder) marker(op string, body []byte) string {
	if op != "PutItem" {
		return ""
	}
	var req struct {
		Item map[string]map[string]json.RawMessage
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	for _, v := range req.Item {
		var s string
		if raw, ok := v["S"]; ok && json.Unmarshal(raw, &s) == nil {
		} else if raw, ok := v["B"]; ok && json.Unmarshal(raw, &s) == nil {
			b, _ := base64.StdEncoding.DecodeString(s)
			s = string(b)
		}
		for m := range h.gates {
			if s != "" && strings.Contains(s, m) {
				return m
			}
		}
	}
	return ""
}

func (h *holder) front(engine http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		op := r.Header.Get("X-Amz-Target")
		op = op[strings.LastIndexByte(op, '.')+1:]
		if m := h.marker(op, body); m != "" {
			select {
			case h.seen <- m:
			default:
			}
			select {
			case <-h.gates[m]:
			case <-r.Context().Done():
				return // the gateway gave up: the engine never sees it
			}
			if r.Context().Err() != nil {
				return
			}
		}
		engine.ServeHTTP(w, r)
	})
}

// engineHas reports whether the engine holds an item (of any tenant)
// whose logical attribute pk is v, or a definition of table name v.
func engineHas(t *testing.T, eng *dynamodb.Client, table, v string) bool {
	t.Helper()
	in := &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		FilterExpression:         aws.String("#k = :v OR #s = :b"),
		ExpressionAttributeNames: map[string]string{"#k": "pk", "#s": "tenantdb:sk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberS{Value: v},
			":b": &types.AttributeValueMemberB{Value: []byte(v)}}}
	for {
		out, err := eng.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Items) > 0 {
			return true
		}
		if len(out.LastEvaluatedKey) == 0 {
			return false
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// TestFencedWritesOfDeletedTenant: gateway B has admitted a tenant's
// writes (two items of a shared table and a table of its own) before the
// tenant's deletion through A began, and they are still on their way to
// the engine: one reaches it just after the deletion deleted the
// tenant's items, one only after the deletion returned. Neither may stay
// in the engine (an orphan under the deleted tenant's prefix, which no
// one owns), and the tenant created again with the same id and slug sees
// nothing of them — no item of the shared table (whose id, and so
// collection, it shares with the deleted tenant) and no table.
func TestFencedWritesOfDeletedTenant(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 1, harness.Options{})
	a := c.Gateways[0]
	h := newHolder("held-early", "held-late", "heldtable")
	b := c.StartGatewayThrough(t, t.TempDir(), h.front)
	eng, table := c.EngineClient(t), c.EngineTable()
	ctx := context.Background()
	createTable(t, a, "ledger")

	id := strings.Repeat("6f", 16)
	mk := func() harness.Credential {
		t.Helper()
		if _, err := a.Admin().CreateTenant(ctx, client.CreateTenantRequest{Name: "fenced", Slug: "fenced", ID: id}); err != nil {
			t.Fatal(err)
		}
		return a.NewKey(t, id, "admin")
	}
	key := mk()
	cb := b.Client(key)
	within(t, "the table through B", func() bool { return put(ctx, cb, "ledger", "warm") == nil })

	// B's requests, admitted now and held on their way to the engine.
	results := map[string]chan error{}
	for _, m := range []string{"held-early", "held-late"} {
		ch := make(chan error, 1)
		results[m] = ch
		go func() { ch <- put(ctx, cb, "ledger", m) }()
	}
	tableRes := make(chan error, 1)
	results["heldtable"] = tableRes
	go func() {
		_, err := cb.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("heldtable"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
		})
		tableRes <- err
	}()
	for range 3 {
		select {
		case m := <-h.seen:
			t.Logf("B's request %s is on its way to the engine", m)
		case <-time.After(10 * time.Second):
			t.Fatal("B's writes never reached the engine")
		}
	}

	deleted := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := a.Admin().DeleteTenant(ctx, id)
		deleted <- err
	}()
	// The deletion has deleted the tenant's items: the early requests
	// reach the engine now.
	for engineHas(t, eng, table, "warm") {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the deletion never deleted the tenant's items")
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the tenant's items deleted after %v; releasing the early requests", time.Since(start).Round(time.Millisecond))
	h.release("held-early")
	h.release("heldtable")
	for _, m := range []string{"held-early", "heldtable"} {
		t.Logf("B's %s answered %v after %v", m, <-results[m], time.Since(start).Round(time.Millisecond))
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	t.Logf("the deletion returned after %v; releasing the late request", time.Since(start).Round(time.Millisecond))
	h.release("held-late")
	if err := <-results["held-late"]; err == nil {
		t.Errorf("B acknowledged a write it sent the engine after the tenant's deletion returned")
	} else {
		t.Logf("B's held-late answered %v", err)
	}

	for _, v := range []string{"warm", "held-early", "held-late", "heldtable"} {
		if engineHas(t, eng, table, v) {
			t.Errorf("the engine still holds %s, written by B for the tenant deleted before", v)
		}
	}

	reborn := mk()
	for _, g := range []*harness.Server{a, b} {
		cl := g.Client(reborn)
		sc, err := cl.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("ledger"), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		if len(sc.Items) != 0 {
			t.Errorf("%s: the tenant created again with the deleted one's id sees its items: %v", g.Endpoint, sc.Items)
		}
		lt, err := cl.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range lt.TableNames {
			if n == "heldtable" {
				t.Errorf("%s: the tenant created again with the deleted one's id sees its table heldtable", g.Endpoint)
			}
		}
	}
}

// TestFencedWritesOfDroppedTable: gateway B has admitted a write to a
// tenant's table before the table's deletion through A, and it reaches
// the engine just after the dropped table's items were purged: it does
// not stay there (an orphan nothing can reach or delete), and the drop
// is forgotten once purged again.
func TestFencedWritesOfDroppedTable(t *testing.T) {
	t.Parallel()
	c := harness.StartCluster(t, 1, harness.Options{})
	a := c.Gateways[0]
	h := newHolder("held-drop")
	b := c.StartGatewayThrough(t, t.TempDir(), h.front)
	eng, table := c.EngineClient(t), c.EngineTable()
	ctx := context.Background()
	key := a.NewTenant(t, "dropper", "admin")
	ca, cb := a.Client(key), b.Client(key)
	if _, err := ca.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("scratch"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	within(t, "the table through B", func() bool { return put(ctx, cb, "scratch", "warm-drop") == nil })
	res := make(chan error, 1)
	go func() { res <- put(ctx, cb, "scratch", "held-drop") }()
	select {
	case <-h.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("B's write never reached the engine")
	}
	start := time.Now()
	if _, err := ca.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("scratch")}); err != nil {
		t.Fatal(err)
	}
	for engineHas(t, eng, table, "warm-drop") {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the dropped table's items were never purged")
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.release("held-drop")
	t.Logf("B's write released after the purge (%v): %v", time.Since(start).Round(time.Millisecond), <-res)
	drops := func() bool {
		out, err := eng.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
			KeyConditionExpression:    aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": "tenantdb:pk"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "meta#drop"}}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Items) > 0
	}
	for drops() {
		if time.Since(start) > 30*time.Second {
			t.Fatal("the drop was never forgotten")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the drop forgotten after %v", time.Since(start).Round(time.Millisecond))
	if engineHas(t, eng, table, "held-drop") {
		t.Errorf("the engine still holds the write B sent for the dropped table after its purge")
	}
}
