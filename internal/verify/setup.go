package verify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
)

// run is one verification run.
type run struct {
	o    Options
	id   string // random, in every name the run creates
	op   *client.Client
	opDB *dynamodb.Client

	fams map[string]*Family
	fam  *Family // the family running

	A, B, Btest *actor

	// tables: kind → name; shared are created by the operator.
	tables map[string]string
	arn    string // the ARN prefix of tables ("...:table/")

	mu      sync.Mutex
	tenants []string // ids of tenants to delete
	// victimThings are the paths (under the victim's tenant) of things
	// the families made for the victim: its subscription, its aggregate.
	victimThings []string
	shared       []string // shared tables to delete
	lekB         map[string]map[string]types.AttributeValue
	aItems       map[string]int // table kind → A's item count
	bItems       map[string][]map[string]types.AttributeValue
	btItems      map[string][]map[string]types.AttributeValue
}

// Table kinds.
const (
	kNS    = "ns"    // shared, namespace isolation
	kSilo  = "silo"  // shared, silo isolation
	kLK    = "lk"    // shared, leading-keys isolation
	kOwn   = "own"   // tenant-owned (namespace), created by A, B and B's test environment
	kBOnly = "bonly" // owned by B (live) only

	lkPattern = "TENANT#{tenant}|*"
)

// dataKinds are the tables where every tenant's items live under
// colliding keys, the server alone keeping them apart.
var dataKinds = []string{kNS, kSilo, kOwn, kLK}

// actor is one tenant environment: its keys, clients and secret.
type actor struct {
	label, id, env, slug, secret string
	admin, app, read             client.Key
	Admin, App, Read             *dynamodb.Client
	API                          *client.Client // with the admin key
	rec                          *recorder
}

func cred(k client.Key) Credential {
	return Credential{AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, Key: k.Key}
}

func (r *run) setup(ctx context.Context) error {
	r.tables = map[string]string{}
	for _, k := range []string{kNS, kSilo, kLK, kOwn, kBOnly} {
		r.tables[k] = "tdbverify_" + r.id + "_" + k
	}
	var err error
	if r.A, err = r.newActor(ctx, "A", "", "live"); err != nil {
		return err
	}
	if r.B, err = r.newActor(ctx, "B", "", "live"); err != nil {
		return err
	}
	if r.Btest, err = r.newActor(ctx, "Btest", r.B.id, "test"); err != nil {
		return err
	}
	r.Btest.slug = r.B.slug
	bKeys := func(b *actor) []string {
		return []string{b.admin.AccessKeyID, b.app.AccessKeyID, b.read.AccessKeyID, b.admin.KeyID, b.app.KeyID, b.read.KeyID}
	}
	r.A.rec.forbidAll(r.B.secret, r.Btest.secret, r.B.id, r.B.slug)
	r.A.rec.forbidAll(bKeys(r.B)...)
	r.A.rec.forbidAll(bKeys(r.Btest)...)
	r.Btest.rec.forbidAll(r.A.secret, r.B.secret, r.A.id)
	r.Btest.rec.forbidAll(bKeys(r.B)...)
	r.B.rec.forbidAll(r.A.secret, r.Btest.secret, r.A.id)

	for _, k := range []string{kNS, kSilo, kLK} {
		var tags []types.Tag
		switch k {
		case kSilo:
			tags = []types.Tag{tag("tenantdb:isolation", "silo")}
		case kLK:
			tags = []types.Tag{tag("tenantdb:isolation", "leading-keys"), tag("tenantdb:leading-key-pattern", lkPattern)}
		}
		r.mu.Lock()
		r.shared = append(r.shared, r.tables[k])
		r.mu.Unlock()
		if err := r.createTable(ctx, r.opDB, r.tables[k], tags); err != nil {
			return err
		}
	}
	for _, a := range []*actor{r.A, r.B, r.Btest} {
		if err := r.createTable(ctx, a.Admin, r.tables[kOwn], []types.Tag{tag("owner", a.secret)}); err != nil {
			return err
		}
	}
	if err := r.createTable(ctx, r.B.Admin, r.tables[kBOnly], []types.Tag{tag("owner", r.B.secret)}); err != nil {
		return err
	}
	d, err := r.A.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(r.tables[kOwn])})
	if err != nil {
		return err
	}
	r.arn = strings.TrimSuffix(aws.ToString(d.Table.TableArn), r.tables[kOwn])

	// Items: A 2 partitions x 2, B 3 x 4, B's test environment 1; keys
	// collide across tenants.
	r.aItems, r.bItems, r.btItems = map[string]int{}, map[string][]map[string]types.AttributeValue{}, map[string][]map[string]types.AttributeValue{}
	for _, k := range dataKinds {
		if _, err := r.seed(ctx, r.A, k, 2, 2); err != nil {
			return err
		}
		r.aItems[k] = 4
		if r.bItems[k], err = r.seed(ctx, r.B, k, 3, 4); err != nil {
			return err
		}
		if r.btItems[k], err = r.seed(ctx, r.Btest, k, 1, 1); err != nil {
			return err
		}
	}
	if r.bItems[kBOnly], err = r.seed(ctx, r.B, kBOnly, 2, 2); err != nil {
		return err
	}
	// B's real page tokens, to replay as A.
	r.lekB = map[string]map[string]types.AttributeValue{}
	for _, k := range dataKinds {
		out, err := r.B.App.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(r.tables[k]), Limit: aws.Int32(1)})
		if err != nil {
			return err
		}
		r.lekB[k+"/scan"] = out.LastEvaluatedKey
		q, err := r.B.App.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(r.tables[k]), IndexName: aws.String("gsi"), Limit: aws.Int32(1),
			KeyConditionExpression: aws.String("gpk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S(gpkv(r.B, k, 0))}})
		if err != nil {
			return err
		}
		r.lekB[k+"/gsi"] = q.LastEvaluatedKey
	}
	return nil
}

func tag(k, v string) types.Tag { return types.Tag{Key: aws.String(k), Value: aws.String(v)} }

// newActor creates a scratch tenant (id == "") or another environment of
// tenant id, with admin, app and read keys.
func (r *run) newActor(ctx context.Context, label, id, env string) (*actor, error) {
	a := &actor{label: label, env: env, secret: "SECRET-" + r.id + "-" + label + "-" + randHex(8)}
	a.rec = newRecorder(label, r.o.Transport)
	if id == "" {
		a.slug = "tdbverify-" + r.id + "-" + strings.ToLower(label)
		t, err := r.op.CreateTenant(ctx, client.CreateTenantRequest{Name: "tenantdb verify " + r.id + " " + label, Slug: a.slug})
		if err != nil {
			return nil, fmt.Errorf("creating scratch tenant %s: %w", label, err)
		}
		r.mu.Lock()
		r.tenants = append(r.tenants, t.ID)
		r.mu.Unlock()
		id = t.ID
	}
	a.id = id
	var err error
	for _, k := range []struct {
		role string
		dst  *client.Key
	}{{"admin", &a.admin}, {"app", &a.app}, {"read", &a.read}} {
		if *k.dst, err = r.op.CreateKey(ctx, id, client.CreateKeyRequest{Role: k.role, Env: env}); err != nil {
			return nil, fmt.Errorf("creating a %s key of scratch tenant %s: %w", k.role, label, err)
		}
	}
	a.Admin = r.dynamo(cred(a.admin), "", a.rec)
	a.App = r.dynamo(cred(a.app), "", a.rec)
	a.Read = r.dynamo(cred(a.read), "", a.rec)
	a.API = r.api(a.admin.Key, a.rec)
	return a, nil
}

func (r *run) createTable(ctx context.Context, c *dynamodb.Client, name string, tags []types.Tag) error {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	ks := func(h, rk string) []types.KeySchemaElement {
		k := []types.KeySchemaElement{{AttributeName: aws.String(h), KeyType: types.KeyTypeHash}}
		if rk != "" {
			k = append(k, types.KeySchemaElement{AttributeName: aws.String(rk), KeyType: types.KeyTypeRange})
		}
		return k
	}
	all := &types.Projection{ProjectionType: types.ProjectionTypeAll}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:              aws.String(name),
		AttributeDefinitions:   []types.AttributeDefinition{s("pk"), s("sk"), s("lsk"), s("gpk"), s("gsk")},
		KeySchema:              ks("pk", "sk"),
		BillingMode:            types.BillingModePayPerRequest,
		LocalSecondaryIndexes:  []types.LocalSecondaryIndex{{IndexName: aws.String("lsi"), KeySchema: ks("pk", "lsk"), Projection: all}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("gsi"), KeySchema: ks("gpk", "gsk"), Projection: all}},
		Tags:                   tags,
	})
	if err != nil {
		return fmt.Errorf("creating scratch table %s: %w", name, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("waiting for scratch table %s: %w", name, err)
		}
		active := out.Table.TableStatus == types.TableStatusActive
		for _, g := range out.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == types.IndexStatusActive
		}
		if active {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scratch table %s not ACTIVE after a minute", name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pkv is partition key p of a in table kind k (prefixed on the
// leading-keys table).
func pkv(a *actor, k string, p int) string {
	if k == kLK {
		return lkPrefix(a.id) + fmt.Sprintf("P%d", p)
	}
	return fmt.Sprintf("P%d", p)
}

func lkPrefix(id string) string { return "TENANT#" + id + "|" }

func gpkv(a *actor, k string, g int) string {
	if k == kLK {
		return lkPrefix(a.id) + fmt.Sprintf("G%d", g)
	}
	return fmt.Sprintf("G%d", g)
}

// S and N are attribute values.
func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func N(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func item(a *actor, k string, p, s int) map[string]types.AttributeValue {
	sk := fmt.Sprintf("S%d", s)
	return map[string]types.AttributeValue{
		"pk": S(pkv(a, k, p)), "sk": S(sk), "lsk": S("L" + sk), "gpk": S(gpkv(a, k, p%2)), "gsk": S(sk),
		"secret": S(a.secret), "owner": S(a.label), "n": N("1"),
		"set": &types.AttributeValueMemberSS{Value: []string{a.secret, a.label}},
	}
}

func keyOf(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}
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

func (r *run) seed(ctx context.Context, a *actor, k string, partitions, sorts int) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	for p := range partitions {
		for s := range sorts {
			it := item(a, k, p, s)
			if _, err := a.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.tables[k]), Item: it}); err != nil {
				return nil, fmt.Errorf("seeding %s as %s: %w", r.tables[k], a.label, err)
			}
			items = append(items, it)
		}
	}
	return items, nil
}

// cleanup deletes the shared tables and the tenants (with their own
// tables and data) the run created, and returns what it could not delete.
func (r *run) cleanup(ctx context.Context) []string {
	r.mu.Lock()
	shared, tenants := r.shared, r.tenants
	r.mu.Unlock()
	var failed []string
	for _, name := range shared {
		_, err := r.opDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		if err != nil && !isCode(err, "ResourceNotFoundException") {
			failed = append(failed, fmt.Sprintf("table %s: %v", name, err))
		}
	}
	for _, id := range tenants {
		if _, err := r.op.DeleteTenant(ctx, id); err != nil && !client.IsNotFound(err) {
			failed = append(failed, fmt.Sprintf("tenant %s: %v", id, err))
		}
	}
	return failed
}
