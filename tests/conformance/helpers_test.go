package conformance

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// start returns a server and a client with the default tenant's admin key.
func start(t *testing.T) (*harness.Server, *dynamodb.Client) {
	t.Helper()
	srv := harness.Start(t)
	return srv, srv.Client(srv.Default)
}

// ctxT is the context of a test's requests: bounded by the test binary's
// deadline (harness.Context), not by a fixed time a loaded machine can
// exceed.
func ctxT(t *testing.T) context.Context { return harness.Context(t) }

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func N(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func B(v []byte) types.AttributeValue { return &types.AttributeValueMemberB{Value: v} }

// item builds an item from alternating names and values.
func item(kv ...any) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{}
	for i := 0; i+1 < len(kv); i += 2 {
		it[kv[i].(string)] = kv[i+1].(types.AttributeValue)
	}
	return it
}

// code returns the API error code of err ("" if none).
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// wantCode fails unless err carries the API error code want.
func wantCode(t *testing.T, err error, want string) {
	t.Helper()
	if got := code(err); got != want {
		t.Fatalf("error %v: code %q, want %q", err, got, want)
	}
}

// keyDef is a key attribute: name and type (S, N or B).
type keyDef struct{ name, typ string }

// createTable creates a pay-per-request table with hash key h and optional
// range key r, and GSIs given as name → (hash, range).
func createTable(t *testing.T, c *dynamodb.Client, name string, h keyDef, r *keyDef, gsis map[string][2]*keyDef) {
	t.Helper()
	defs := map[string]string{h.name: h.typ}
	ks := []types.KeySchemaElement{{AttributeName: aws.String(h.name), KeyType: types.KeyTypeHash}}
	if r != nil {
		defs[r.name] = r.typ
		ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(r.name), KeyType: types.KeyTypeRange})
	}
	in := &dynamodb.CreateTableInput{TableName: aws.String(name), KeySchema: ks, BillingMode: types.BillingModePayPerRequest}
	for gname, keys := range gsis {
		g := types.GlobalSecondaryIndex{IndexName: aws.String(gname), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}
		for i, k := range keys {
			if k == nil {
				continue
			}
			defs[k.name] = k.typ
			kt := types.KeyTypeHash
			if i == 1 {
				kt = types.KeyTypeRange
			}
			g.KeySchema = append(g.KeySchema, types.KeySchemaElement{AttributeName: aws.String(k.name), KeyType: kt})
		}
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, g)
	}
	for n, ty := range defs {
		in.AttributeDefinitions = append(in.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeType(ty)})
	}
	if _, err := c.CreateTable(ctxT(t), in); err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	harness.WaitActive(t, ctxT(t), c, name)
}

func str(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return ""
}

// wantErr fails unless err is the API error code with exactly message msg.
func wantErr(t *testing.T, err error, wantCode, msg string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v, want %s: %s", err, wantCode, msg)
	}
	if ae.ErrorCode() != wantCode || ae.ErrorMessage() != msg {
		t.Fatalf("got %s: %q\nwant %s: %q", ae.ErrorCode(), clipMsg(ae.ErrorMessage()), wantCode, clipMsg(msg))
	}
}

func clipMsg(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// ok fails the test on a non-nil err.
func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}
