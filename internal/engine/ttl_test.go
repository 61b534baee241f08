package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestTTL(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	in := tableInput("Sessions", false)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "u", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byUser", KeySchema: []wire.KeySchemaElement{{AttributeName: "u", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}}}
	op.create(in)
	e := env.e

	d, err := e.DescribeTimeToLive(testCtx, op.scope("DescribeTimeToLive"), &wire.DescribeTimeToLiveInput{TableName: "Sessions"})
	noErr(t, err)
	if d.TimeToLiveDescription.TimeToLiveStatus != "DISABLED" {
		t.Fatalf("initial TTL %+v", d.TimeToLiveDescription)
	}
	a := env.tenant(tenancy.RoleApp)
	_, err = e.UpdateTimeToLive(testCtx, a.as(tenancy.RoleAdmin).scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	wantErr(t, err, apierr.AccessDenied, "not authorized")
	_, err = e.UpdateTimeToLive(testCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	noErr(t, err)
	_, err = e.UpdateTimeToLive(testCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	wantErr(t, err, apierr.Validation, "TimeToLive is already enabled")
	d, err = e.DescribeTimeToLive(testCtx, a.scope("DescribeTimeToLive"), &wire.DescribeTimeToLiveInput{TableName: "Sessions"})
	noErr(t, err)
	if d.TimeToLiveDescription.TimeToLiveStatus != "ENABLED" || d.TimeToLiveDescription.AttributeName != "exp" {
		t.Fatalf("TTL %+v", d.TimeToLiveDescription)
	}

	now := env.clock.Now().Unix()
	b := env.tenant(tenancy.RoleApp)
	items := []string{
		fmt.Sprintf(`{"pk":{"S":"past"},"u":{"S":"x"},"exp":{"N":"%d"}}`, now-10),
		fmt.Sprintf(`{"pk":{"S":"now"},"exp":{"N":"%d"}}`, now),
		fmt.Sprintf(`{"pk":{"S":"future"},"exp":{"N":"%d"}}`, now+3600),
		`{"pk":{"S":"string"},"exp":{"S":"1"}}`,
		`{"pk":{"S":"none"}}`,
		`{"pk":{"S":"ancient"},"exp":{"N":"5"}}`, // more than 5 years ago: ignored
	}
	for _, s := range items {
		a.put("Sessions", itemOf(t, s))
		b.put("Sessions", itemOf(t, s))
	}
	// Expired items are still readable until swept, as in DynamoDB.
	if a.get("Sessions", itemOf(t, `{"pk":{"S":"past"}}`)) == nil {
		t.Fatal("expired item hidden before the sweep")
	}
	var expiredOf []tenancy.TenantID // the metering's hook: storage changed without a request
	e.opts.Expired = func(t tenancy.TenantID) { expiredOf = append(expiredOf, t) }
	noErr(t, e.sweep())
	if len(expiredOf) != 2 || !slices.Contains(expiredOf, a.p.Tenant) || !slices.Contains(expiredOf, b.p.Tenant) {
		t.Errorf("Expired told of %v, want %v and %v once each", expiredOf, a.p.Tenant, b.p.Tenant)
	}
	expiredOf = nil
	noErr(t, e.sweep())
	if len(expiredOf) != 0 {
		t.Errorf("a sweep that expired nothing told of %v", expiredOf)
	}
	for _, act := range []testActor{a, b} {
		for _, pk := range []string{"past", "now"} {
			if got := act.get("Sessions", itemOf(t, `{"pk":{"S":"`+pk+`"}}`)); got != nil {
				t.Fatalf("%s not expired: %s", pk, showItem(got))
			}
		}
		for _, pk := range []string{"future", "string", "none", "ancient"} {
			if act.get("Sessions", itemOf(t, `{"pk":{"S":"`+pk+`"}}`)) == nil {
				t.Fatalf("%s expired", pk)
			}
		}
		if n, _ := act.counters("Sessions", 0); n != 4 {
			t.Fatalf("count after sweep %d", n)
		}
		if n := len(act.indexEntries("Sessions", 1)); n != 0 {
			t.Fatalf("index entries of expired items remain: %d", n)
		}
	}
	// Time passes; the background sweeper picks up the rest.
	env.clock.Set(env.clock.Now().Add(2 * time.Hour))
	env.opts.TTLInterval = 5 * time.Millisecond
	env.reopen()
	deadline := time.Now().Add(20 * time.Second)
	for a.get("Sessions", itemOf(t, `{"pk":{"S":"future"}}`)) != nil {
		if time.Now().After(deadline) {
			t.Fatal("background sweeper did not expire the item")
		}
		time.Sleep(5 * time.Millisecond)
	}

	_, err = env.e.UpdateTimeToLive(testCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: false, AttributeName: "other"}})
	wantErr(t, err, apierr.Validation, "different AttributeName")
}

func TestTags(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	in := tableInput("Tagged", false)
	in.Tags = []wire.Tag{{Key: "team", Value: "a"}, {Key: tenancy.TagIsolation, Value: "namespace"}}
	d := op.create(in)
	e := env.e
	arn := d.TableArn
	list := func(act testActor, arn string) ([]wire.Tag, error) {
		out, err := e.ListTagsOfResource(testCtx, act.scope("ListTagsOfResource"), &wire.ListTagsOfResourceInput{ResourceArn: arn})
		if err != nil {
			return nil, err
		}
		return out.Tags, nil
	}
	_, err := e.TagResource(testCtx, op.scope("TagResource"), &wire.TagResourceInput{ResourceArn: arn, Tags: []wire.Tag{{Key: "team", Value: "b"}, {Key: "env", Value: "prod"}}})
	noErr(t, err)
	tags, err := list(op, arn)
	noErr(t, err)
	if fmt.Sprint(tags) != "[{team b} {tenantdb:isolation namespace} {env prod}]" {
		t.Fatalf("tags %v", tags)
	}
	_, err = e.TagResource(testCtx, op.scope("TagResource"), &wire.TagResourceInput{ResourceArn: arn, Tags: []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}})
	wantErr(t, err, apierr.Validation, "reserved")
	_, err = e.UntagResource(testCtx, op.scope("UntagResource"), &wire.UntagResourceInput{ResourceArn: arn, TagKeys: []string{tenancy.TagIsolation}})
	wantErr(t, err, apierr.Validation, "reserved")
	_, err = e.UntagResource(testCtx, op.scope("UntagResource"), &wire.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"env", "absent"}})
	noErr(t, err)

	// Tenants may list a shared table's tags but not change them.
	admin := env.tenant(tenancy.RoleAdmin)
	tags, err = list(admin, arn)
	noErr(t, err)
	if len(tags) != 2 {
		t.Fatalf("tenant sees tags %v", tags)
	}
	_, err = e.TagResource(testCtx, admin.scope("TagResource"), &wire.TagResourceInput{ResourceArn: arn, Tags: []wire.Tag{{Key: "x", Value: "y"}}})
	wantErr(t, err, apierr.AccessDenied, "not authorized")

	// A tenant's own table: it tags it; others cannot see it.
	own := admin.create(tableInput("Mine", false))
	_, err = e.TagResource(testCtx, admin.scope("TagResource"), &wire.TagResourceInput{ResourceArn: own.TableArn, Tags: []wire.Tag{{Key: "x", Value: "y"}}})
	noErr(t, err)
	other := env.tenant(tenancy.RoleAdmin)
	_, err = list(other, own.TableArn)
	wantErr(t, err, apierr.ResourceNotFound, "not found")
	_, err = list(op, own.TableArn)
	wantErr(t, err, apierr.ResourceNotFound, "not found")
	_, err = list(admin, "not-an-arn")
	wantErr(t, err, apierr.Validation, "Invalid TableArn")

	// Tags persist.
	env.reopen()
	tags, err = list(admin, own.TableArn)
	noErr(t, err)
	if fmt.Sprint(tags) != "[{x y}]" {
		t.Fatalf("after reopen %v", tags)
	}
}

func TestLimitsAndEndpoints(t *testing.T) {
	env := openEnv(t)
	a := env.tenant(tenancy.RoleApp)
	l, err := env.e.DescribeLimits(testCtx, a.scope("DescribeLimits"), &wire.DescribeLimitsInput{})
	noErr(t, err)
	if l.TableMaxReadCapacityUnits != 40000 {
		t.Fatalf("limits %+v", l)
	}
	ep, err := env.e.DescribeEndpoints(testCtx, a.scope("DescribeEndpoints"), &wire.DescribeEndpointsInput{})
	noErr(t, err)
	if len(ep.Endpoints) != 1 || ep.Endpoints[0].CachePeriodInMinutes != 1440 {
		t.Fatalf("endpoints %+v", ep)
	}
	if _, err := env.e.DescribeLimits(testCtx, tenancy.Scope{}, &wire.DescribeLimitsInput{}); apierr.KindOf(err) != apierr.AccessDenied {
		t.Fatalf("zero scope: %v", err)
	}
}

func TestTTLSweepResumes(t *testing.T) {
	env := openEnv(t)
	op := env.operator()
	for _, name := range []string{"TTL1", "TTL2"} {
		op.create(tableInput(name, false))
		_, err := env.e.UpdateTimeToLive(testCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: name, TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
		noErr(t, err)
	}
	a := env.tenant(tenancy.RoleApp)
	exp := env.clock.Now().Unix() - 1
	for i := 0; i < 300; i++ {
		for _, name := range []string{"TTL1", "TTL2"} {
			a.put(name, itemOf(t, fmt.Sprintf(`{"pk":{"S":"k%d"},"exp":{"N":"%d"}}`, i, exp)))
		}
	}
	env.e.ttl.budget = chunkSize
	left := func() int64 {
		n1, _ := a.counters("TTL1", 0)
		n2, _ := a.counters("TTL2", 0)
		return n1 + n2
	}
	passes := 0
	for left() > 0 {
		before := left()
		noErr(t, env.e.sweep())
		passes++
		if got := before - left(); got > 2*chunkSize || got <= 0 { // the budget is checked per chunk
			t.Fatalf("pass %d deleted %d items (budget %d)", passes, got, chunkSize)
		}
		if passes > 20 {
			t.Fatal("sweeper does not make progress")
		}
	}
	if passes < 600/(2*chunkSize) {
		t.Fatalf("%d passes for 600 items with budget %d", passes, chunkSize)
	}
}
