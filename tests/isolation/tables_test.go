package isolation

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// tableAttacks attacks table names, definitions, statistics and tags: a
// table B owns must be to A exactly like a table that never existed, and
// A may not change shared tables.
func (w *world) tableAttacks(t *testing.T) {
	A, B := w.A, w.B
	ctx := w.ctx
	never := w.never
	desc, err := B.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tblBOnly)})
	if err != nil {
		t.Fatal(err)
	}
	arnB := aws.ToString(desc.Table.TableArn)
	arnNever := strings.Replace(arnB, "table/"+tblBOnly, "table/"+never, 1)
	arnOf := func(name string) string { return strings.Replace(arnB, "table/"+tblBOnly, "table/"+name, 1) }

	// sameAsNever runs op on B's table name and on a never-existing one
	// and fails unless both answers look alike.
	type op struct {
		name string
		run  func(c *dynamodb.Client, table, arn string) error
	}
	key := map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0")}
	ops := []op{
		{"DescribeTable", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb)})
			return err
		}},
		{"DescribeTable-by-ARN", func(c *dynamodb.Client, _, arn string) error {
			_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(arn)})
			return err
		}},
		{"DescribeTimeToLive", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tb)})
			return err
		}},
		{"UpdateTimeToLive", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tb),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
			return err
		}},
		{"UpdateTable", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(tb), BillingMode: types.BillingModeProvisioned,
				ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}})
			return err
		}},
		{"DeleteTable", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tb)})
			return err
		}},
		{"ListTagsOfResource", func(c *dynamodb.Client, _, arn string) error {
			_, err := c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn)})
			return err
		}},
		{"ListTagsOfResource-index-ARN", func(c *dynamodb.Client, _, arn string) error {
			_, err := c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn + "/index/gsi")})
			return err
		}},
		{"TagResource", func(c *dynamodb.Client, _, arn string) error {
			_, err := c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(arn), Tags: []types.Tag{{Key: aws.String("x"), Value: aws.String("y")}}})
			return err
		}},
		{"UntagResource", func(c *dynamodb.Client, _, arn string) error {
			_, err := c.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: aws.String(arn), TagKeys: []string{"owner"}})
			return err
		}},
		{"GetItem", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tb), Key: key})
			return err
		}},
		{"PutItem", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb), Item: key})
			return err
		}},
		{"UpdateItem", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(tb), Key: key, UpdateExpression: aws.String("SET x = :x"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":x": S("x")}})
			return err
		}},
		{"DeleteItem", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tb), Key: key})
			return err
		}},
		{"Query", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tb), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S("P0")}})
			return err
		}},
		{"Query-index", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(tb), IndexName: aws.String("gsi"), KeyConditionExpression: aws.String("gpk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S("G0")}})
			return err
		}},
		{"Scan", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tb), Select: types.SelectCount})
			return err
		}},
		{"BatchGetItem", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{tb: {Keys: []map[string]types.AttributeValue{key}}}})
			return err
		}},
		{"BatchWriteItem", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tb: {{DeleteRequest: &types.DeleteRequest{Key: key}}}}})
			return err
		}},
		{"TransactGetItems", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: aws.String(tb), Key: key}}}})
			return err
		}},
		{"TransactWriteItems", func(c *dynamodb.Client, tb, _ string) error {
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(tb), Key: key, ConditionExpression: aws.String("attribute_exists(pk)")}}}})
			return err
		}},
	}
	for _, who := range []struct {
		label string
		c     *dynamodb.Client
	}{{"A-admin", A.Admin}, {"A-app", A.App}, {"A-read", A.Read}, {"operator", w.Op}} {
		w.attack(t, "B-table-name-like-never-existing/"+who.label, func(t *testing.T) {
			for _, o := range ops {
				eB := o.run(who.c, tblBOnly, arnB)
				eN := o.run(who.c, never, arnNever)
				if got, want := shape(eB, tblBOnly, arnB), shape(eN, never, arnNever); got != want {
					t.Errorf("LEAK: %s as %s on B's table answers %q, on a never-existing table %q", o.name, who.label, got, want)
				}
				if eB == nil {
					t.Errorf("%s as %s on B's table %s succeeded", o.name, who.label, tblBOnly)
				}
			}
			w.bTableIntact(t)
		})
	}

	w.attack(t, "CreateTable-with-B-table-name", func(t *testing.T) {
		// To A the name is free, exactly like a never-used one; A gets its
		// own table and B's is untouched.
		eB := w.tryCreate(A.Admin, tblBOnly, nil)
		eN := w.tryCreate(A.Admin, never, nil)
		if shape(eB, tblBOnly) != shape(eN, never) {
			t.Errorf("LEAK: CreateTable of B's table name answers %q, of a never-used name %q", shape(eB, tblBOnly), shape(eN, never))
		}
		if eB == nil {
			if st := w.stats(t, A.Admin, tblBOnly); st.items[""] != 0 {
				t.Errorf("LEAK: A's new table %s has ItemCount %d", tblBOnly, st.items[""])
			}
			tags, err := A.Admin.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arnB)})
			if err != nil {
				t.Fatal(err)
			}
			if len(tags.Tags) != 0 {
				t.Errorf("LEAK: A's new table %s shows tags %v", tblBOnly, tags.Tags)
			}
			if got := onlyOwn(t, A, "Scan of A's "+tblBOnly, w.scanAll(t, A.App, tblBOnly, "")); len(got) != 0 {
				t.Errorf("LEAK: A's new table %s holds %v", tblBOnly, got)
			}
			for _, n := range []string{tblBOnly, never} {
				if _, err := A.Admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(n)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.bTableIntact(t)
		// With an app key: refused alike.
		eB = w.tryCreate(A.App, tblBOnly, nil)
		eN = w.tryCreate(A.App, never, nil)
		if shape(eB, tblBOnly, A.app.AccessKeyID) != shape(eN, never, A.app.AccessKeyID) || code(eB) != "AccessDeniedException" {
			t.Errorf("CreateTable as app: B's name %q, never-used name %q", shape(eB, tblBOnly), shape(eN, never))
		}
	})

	w.attack(t, "ListTables", func(t *testing.T) {
		for _, c := range []*dynamodb.Client{A.Admin, A.App, A.Read, w.Op} {
			all := w.listTables(t, c, nil)
			if slices.Contains(all, tblBOnly) {
				t.Errorf("LEAK: ListTables shows B's table %s: %v", tblBOnly, all)
			}
			if n := strings.Count(strings.Join(all, " ")+" ", tblOwn+" "); c != w.Op && n != 1 {
				t.Errorf("ListTables lists %s %d times: %v", tblOwn, n, all)
			}
			if c == w.Op && slices.Contains(all, tblOwn) {
				t.Errorf("LEAK: the operator's ListTables shows tenant-owned %s", tblOwn)
			}
			// Paging from (and just before) B's name.
			for _, start := range []string{tblBOnly, "iso_bonlx", "iso_bonlz"} {
				for _, name := range w.listTables(t, c, aws.String(start)) {
					if !slices.Contains(all, name) {
						t.Errorf("LEAK: ListTables from %s shows %s", start, name)
					}
				}
			}
		}
		// B sees its own.
		if all := w.listTables(t, B.App, nil); !slices.Contains(all, tblBOnly) {
			t.Errorf("B's ListTables misses its own %s: %v", tblBOnly, all)
		}
	})

	w.attack(t, "tags-of-same-named-tenant-tables", func(t *testing.T) {
		arnOwn := arnOf(tblOwn)
		for _, tn := range []*tenant{A, B} {
			out, err := tn.Read.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arnOwn)})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Tags) != 1 || aws.ToString(out.Tags[0].Value) != tn.secret {
				t.Errorf("LEAK: %s's tags of its own %s: %v", tn.label, tblOwn, out.Tags)
			}
		}
		if _, err := A.Admin.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(arnOwn),
			Tags: []types.Tag{{Key: aws.String("owner"), Value: aws.String("overwritten-by-A")}}}); err != nil {
			t.Fatal(err)
		}
		out, err := B.Read.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arnOwn)})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Tags) != 1 || aws.ToString(out.Tags[0].Value) != B.secret {
			t.Errorf("LEAK: A's TagResource on its %s changed B's tags: %v", tblOwn, out.Tags)
		}
		if _, err := A.Admin.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(arnOwn),
			Tags: []types.Tag{{Key: aws.String("owner"), Value: aws.String(A.secret)}}}); err != nil {
			t.Fatal(err)
		}
	})

	w.attack(t, "tenant-admin-on-shared-table-DDL", func(t *testing.T) {
		for _, o := range ops[3:10] { // UpdateTimeToLive ... UntagResource
			o := o
			action := "dynamodb:" + strings.SplitN(o.name, "-", 2)[0]
			if o.name == "ListTagsOfResource" || o.name == "ListTagsOfResource-index-ARN" {
				continue
			}
			w.denied(t, A.id, A.admin.AccessKeyID, action, func() error { return o.run(A.Admin, tblNS, arnOf(tblNS)) })
		}
		if err := w.tryCreate(A.Admin, tblNS, nil); code(err) != "ResourceInUseException" {
			t.Errorf("a tenant CreateTable named like a shared table: %v, want ResourceInUseException", err)
		}
		if st := w.stats(t, A.App, tblNS); st.items[""] != int64(len(A.items[tblNS])) {
			t.Errorf("shared table changed: %v", st)
		}
	})

	w.attack(t, "reserved-isolation-tags", func(t *testing.T) {
		for _, c := range []struct {
			who *dynamodb.Client
			arn string
		}{{A.Admin, arnOf(tblOwn)}, {w.Op, arnOf(tblLK)}, {w.Op, arnOf(tblNS)}} {
			_, err := c.who.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(c.arn),
				Tags: []types.Tag{{Key: aws.String("tenantdb:isolation"), Value: aws.String("namespace")}}})
			if err == nil {
				t.Errorf("TagResource tenantdb:isolation on %s succeeded", c.arn)
			}
			_, err = c.who.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: aws.String(c.arn), TagKeys: []string{"tenantdb:isolation", "tenantdb:leading-key-pattern"}})
			if err == nil {
				// Harmless only if the tags were not removed.
				out, lerr := c.who.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(c.arn)})
				if lerr == nil && c.arn == arnOf(tblLK) && len(out.Tags) < 2 {
					t.Errorf("UntagResource removed the isolation tags of %s: %v", c.arn, out.Tags)
				}
			}
		}
		// The leading-keys table still enforces its pattern.
		_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tblLK), Item: map[string]types.AttributeValue{"pk": S(pkv(B, tblLK, 0)), "sk": S("S0")}})
		wantCode(t, err, "AccessDeniedException")
	})

	w.attack(t, "operator-DescribeTable-has-no-tenant-stats", func(t *testing.T) {
		for _, tb := range []string{tblNS, tblSilo, tblLK} {
			st := w.stats(t, w.Op, tb)
			for ix, n := range st.items {
				if n != 0 || st.bytes[ix] != 0 {
					t.Errorf("LEAK: the operator's DescribeTable %s shows %s: %d items, %d bytes", tb, ix, n, st.bytes[ix])
				}
			}
		}
	})

	w.attack(t, "GSI-backfill-per-tenant", func(t *testing.T) {
		// The operator adds a GSI on the owner attribute to the shared
		// tables; the backfill walks every tenant's items and must keep
		// each tenant's index entries in that tenant's range.
		for _, table := range []string{tblNS, tblSilo} {
			_, err := w.Op.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
				AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("owner"), AttributeType: types.ScalarAttributeTypeS}},
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{
					IndexName:  aws.String("by_owner"),
					KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("owner"), KeyType: types.KeyTypeHash}},
					Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}})
			if err != nil {
				t.Fatalf("UpdateTable %s add GSI: %v", table, err)
			}
			harness.WaitActive(t, w.ctx, w.Op, table)
			for _, tn := range []*tenant{A, B, w.Btest} {
				for _, owner := range []string{"A", "B", "Btest"} {
					out, err := tn.Read.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("by_owner"),
						KeyConditionExpression: aws.String("#o = :o"), ExpressionAttributeNames: map[string]string{"#o": "owner"},
						ExpressionAttributeValues: map[string]types.AttributeValue{":o": S(owner)}})
					if err != nil {
						t.Fatal(err)
					}
					want := 0
					if owner == tn.label {
						want = len(tn.items[table])
					}
					if len(out.Items) != want || int(out.ScannedCount) != want {
						t.Errorf("LEAK: %s's query of the backfilled GSI for owner %s in %s: %d items (scanned %d), want %d",
							tn.label, owner, table, len(out.Items), out.ScannedCount, want)
					}
					onlyOwn(t, tn, "backfilled GSI", out.Items)
				}
				if st := w.stats(t, tn.Read, table); st.items["by_owner"] != int64(len(tn.items[table])) {
					t.Errorf("LEAK: %s's backfilled GSI count in %s: %v, want %d", tn.label, table, st, len(tn.items[table]))
				}
			}
			if w.srv.Remote {
				continue // the remote backend does not delete indexes yet (README, remote backend)
			}
			if _, err := w.Op.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table),
				GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("by_owner")}}}}); err != nil {
				t.Fatalf("UpdateTable %s drop GSI: %v", table, err)
			}
			harness.WaitActive(t, w.ctx, w.Op, table)
		}
	})

	w.attack(t, "operator-shadows-tenant-table-name", func(t *testing.T) {
		const name = "iso_shadow"
		w.createTable(t, B.Admin, name, nil)
		it := makeItem(B, name, 0, "S0", 0)
		if _, err := B.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(name), Item: it}); err != nil {
			t.Fatal(err)
		}
		// The operator cannot see B's table and may create a shared one.
		if err := w.tryCreate(w.Op, name, nil); err != nil {
			t.Fatalf("operator CreateTable %s: %v", name, err)
		}
		harness.WaitActive(t, w.ctx, w.Op, name)
		got := onlyOwn(t, B, "B's Scan of its shadowed table", w.scanAll(t, B.App, name, ""))
		if len(got) != 1 {
			t.Errorf("B's own %s after the operator created a shared one: %v", name, got)
		}
		if got := onlyOwn(t, A, "A's Scan of the shared "+name, w.scanAll(t, A.App, name, "")); len(got) != 0 {
			t.Errorf("LEAK: A sees %v in the new shared %s", got, name)
		}
		if err := w.tryCreate(A.Admin, name, nil); code(err) != "ResourceInUseException" {
			t.Errorf("A CreateTable %s (now shared): %v", name, err)
		}
		if _, err := w.Op.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		if got := onlyOwn(t, B, "B's Scan after the shared one is gone", w.scanAll(t, B.App, name, "")); len(got) != 1 {
			t.Errorf("B's own %s after the shared one was deleted: %v", name, got)
		}
		if _, err := B.Admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
	})
}

// tryCreate creates a table with the suite's schema and returns the error.
func (w *world) tryCreate(c *dynamodb.Client, name string, tags []types.Tag) error {
	_, err := c.CreateTable(w.ctx, tableInput(name, tags))
	return err
}

// listTables returns all table names c lists (from start, if not nil).
func (w *world) listTables(t *testing.T, c *dynamodb.Client, start *string) []string {
	t.Helper()
	var all []string
	in := &dynamodb.ListTablesInput{Limit: aws.Int32(2), ExclusiveStartTableName: start}
	for {
		out, err := c.ListTables(w.ctx, in)
		if err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		all = append(all, out.TableNames...)
		if out.LastEvaluatedTableName == nil {
			return all
		}
		in.ExclusiveStartTableName = out.LastEvaluatedTableName
	}
}

// bTableIntact checks B's own table, its items and its tags.
func (w *world) bTableIntact(t *testing.T) {
	t.Helper()
	got := onlyOwn(t, w.B, "B's own table", w.scanAll(t, w.B.App, tblBOnly, ""))
	if !slices.Equal(got, ownKeys(w.B, tblBOnly)) {
		t.Errorf("LEAK: B's table %s changed: %v", tblBOnly, got)
	}
	d, err := w.B.Admin.DescribeTable(w.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tblBOnly)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Table.BillingModeSummary == nil || d.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("LEAK: B's table %s billing mode changed: %+v", tblBOnly, d.Table.BillingModeSummary)
	}
	tags, err := w.B.Admin.ListTagsOfResource(w.ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: d.Table.TableArn})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Value) != w.B.secret {
		t.Errorf("LEAK: B's table %s tags changed: %v", tblBOnly, tags.Tags)
	}
	ttl, err := w.B.Admin.DescribeTimeToLive(w.ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tblBOnly)})
	if err != nil {
		t.Fatal(err)
	}
	if ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Errorf("LEAK: B's table %s TTL changed: %+v", tblBOnly, ttl.TimeToLiveDescription)
	}
}
