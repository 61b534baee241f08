package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestTTL(t *testing.T) {
	env := wtOpen(t)
	op := env.operator()
	in := wtTable("Sessions", false)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "u", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byUser", KeySchema: []wire.KeySchemaElement{{AttributeName: "u", KeyType: "HASH"}}, Projection: &wire.Projection{ProjectionType: "KEYS_ONLY"}}}
	op.create(in)
	e := env.e

	d, err := e.DescribeTimeToLive(wtCtx, op.scope("DescribeTimeToLive"), &wire.DescribeTimeToLiveInput{TableName: "Sessions"})
	wtNoErr(t, err)
	if d.TimeToLiveDescription.TimeToLiveStatus != "DISABLED" {
		t.Fatalf("initial TTL %+v", d.TimeToLiveDescription)
	}
	a := env.tenant(tenancy.RoleApp)
	_, err = e.UpdateTimeToLive(wtCtx, a.as(tenancy.RoleAdmin).scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	wtWantErr(t, err, apierr.AccessDenied, "not authorized")
	_, err = e.UpdateTimeToLive(wtCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	wtNoErr(t, err)
	_, err = e.UpdateTimeToLive(wtCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	wtWantErr(t, err, apierr.Validation, "TimeToLive is already enabled")
	d, err = e.DescribeTimeToLive(wtCtx, a.scope("DescribeTimeToLive"), &wire.DescribeTimeToLiveInput{TableName: "Sessions"})
	wtNoErr(t, err)
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
		a.put("Sessions", wtJ(t, s))
		b.put("Sessions", wtJ(t, s))
	}
	// Expired items are still readable until swept, as in DynamoDB.
	if a.get("Sessions", wtJ(t, `{"pk":{"S":"past"}}`)) == nil {
		t.Fatal("expired item hidden before the sweep")
	}
	wtNoErr(t, e.sweep())
	for _, act := range []wtActor{a, b} {
		for _, pk := range []string{"past", "now"} {
			if got := act.get("Sessions", wtJ(t, `{"pk":{"S":"`+pk+`"}}`)); got != nil {
				t.Fatalf("%s not expired: %s", pk, wtJSON(got))
			}
		}
		for _, pk := range []string{"future", "string", "none", "ancient"} {
			if act.get("Sessions", wtJ(t, `{"pk":{"S":"`+pk+`"}}`)) == nil {
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
	for a.get("Sessions", wtJ(t, `{"pk":{"S":"future"}}`)) != nil {
		if time.Now().After(deadline) {
			t.Fatal("background sweeper did not expire the item")
		}
		time.Sleep(5 * time.Millisecond)
	}

	_, err = env.e.UpdateTimeToLive(wtCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: "Sessions", TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: false, AttributeName: "other"}})
	wtWantErr(t, err, apierr.Validation, "different AttributeName")
}

func TestTags(t *testing.T) {
	env := wtOpen(t)
	op := env.operator()
	in := wtTable("Tagged", false)
	in.Tags = []wire.Tag{{Key: "team", Value: "a"}, {Key: tenancy.TagIsolation, Value: "namespace"}}
	d := op.create(in)
	e := env.e
	arn := d.TableArn
	list := func(act wtActor, arn string) ([]wire.Tag, error) {
		out, err := e.ListTagsOfResource(wtCtx, act.scope("ListTagsOfResource"), &wire.ListTagsOfResourceInput{ResourceArn: arn})
		if err != nil {
			return nil, err
		}
		return out.Tags, nil
	}
	_, err := e.TagResource(wtCtx, op.scope("TagResource"), &wire.TagResourceInput{ResourceArn: arn, Tags: []wire.Tag{{Key: "team", Value: "b"}, {Key: "env", Value: "prod"}}})
	wtNoErr(t, err)
	tags, err := list(op, arn)
	wtNoErr(t, err)
	if fmt.Sprint(tags) != "[{team b} {tenantdb:isolation namespace} {env prod}]" {
		t.Fatalf("tags %v", tags)
	}
	_, err = e.TagResource(wtCtx, op.scope("TagResource"), &wire.TagResourceInput{ResourceArn: arn, Tags: []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}})
	wtWantErr(t, err, apierr.Validation, "reserved")
	_, err = e.UntagResource(wtCtx, op.scope("UntagResource"), &wire.UntagResourceInput{ResourceArn: arn, TagKeys: []string{tenancy.TagIsolation}})
	wtWantErr(t, err, apierr.Validation, "reserved")
	_, err = e.UntagResource(wtCtx, op.scope("UntagResource"), &wire.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"env", "absent"}})
	wtNoErr(t, err)

	// Tenants may list a shared table's tags but not change them.
	admin := env.tenant(tenancy.RoleAdmin)
	tags, err = list(admin, arn)
	wtNoErr(t, err)
	if len(tags) != 2 {
		t.Fatalf("tenant sees tags %v", tags)
	}
	_, err = e.TagResource(wtCtx, admin.scope("TagResource"), &wire.TagResourceInput{ResourceArn: arn, Tags: []wire.Tag{{Key: "x", Value: "y"}}})
	wtWantErr(t, err, apierr.AccessDenied, "not authorized")

	// A tenant's own table: it tags it; others cannot see it.
	own := admin.create(wtTable("Mine", false))
	_, err = e.TagResource(wtCtx, admin.scope("TagResource"), &wire.TagResourceInput{ResourceArn: own.TableArn, Tags: []wire.Tag{{Key: "x", Value: "y"}}})
	wtNoErr(t, err)
	other := env.tenant(tenancy.RoleAdmin)
	_, err = list(other, own.TableArn)
	wtWantErr(t, err, apierr.ResourceNotFound, "not found")
	_, err = list(op, own.TableArn)
	wtWantErr(t, err, apierr.ResourceNotFound, "not found")
	_, err = list(admin, "not-an-arn")
	wtWantErr(t, err, apierr.Validation, "Invalid TableArn")

	// Tags persist.
	env.reopen()
	tags, err = list(admin, own.TableArn)
	wtNoErr(t, err)
	if fmt.Sprint(tags) != "[{x y}]" {
		t.Fatalf("after reopen %v", tags)
	}
}

func TestLimitsAndEndpoints(t *testing.T) {
	env := wtOpen(t)
	a := env.tenant(tenancy.RoleApp)
	l, err := env.e.DescribeLimits(wtCtx, a.scope("DescribeLimits"), &wire.DescribeLimitsInput{})
	wtNoErr(t, err)
	if l.TableMaxReadCapacityUnits != 40000 {
		t.Fatalf("limits %+v", l)
	}
	ep, err := env.e.DescribeEndpoints(wtCtx, a.scope("DescribeEndpoints"), &wire.DescribeEndpointsInput{})
	wtNoErr(t, err)
	if len(ep.Endpoints) != 1 || ep.Endpoints[0].CachePeriodInMinutes != 1440 {
		t.Fatalf("endpoints %+v", ep)
	}
	if _, err := env.e.DescribeLimits(wtCtx, tenancy.Scope{}, &wire.DescribeLimitsInput{}); apierr.KindOf(err) != apierr.AccessDenied {
		t.Fatalf("zero scope: %v", err)
	}
}

func TestTTLSweepResumes(t *testing.T) {
	env := wtOpen(t)
	op := env.operator()
	for _, name := range []string{"TTL1", "TTL2"} {
		op.create(wtTable(name, false))
		_, err := env.e.UpdateTimeToLive(wtCtx, op.scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: name, TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
		wtNoErr(t, err)
	}
	a := env.tenant(tenancy.RoleApp)
	exp := env.clock.Now().Unix() - 1
	for i := 0; i < 300; i++ {
		for _, name := range []string{"TTL1", "TTL2"} {
			a.put(name, wtJ(t, fmt.Sprintf(`{"pk":{"S":"k%d"},"exp":{"N":"%d"}}`, i, exp)))
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
		wtNoErr(t, env.e.sweep())
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
