package isolation

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// envAttacks attacks B's live data with B's own test-environment keys
// (and the other way round): the environment is a data boundary within
// one tenant.
func (w *world) envAttacks(t *testing.T) {
	B, T := w.B, w.Btest
	ctx := w.ctx

	for _, table := range []string{tblNS, tblSilo, tblLK, tblOwn} {
		w.attack(t, "test-key-reads-live-data/"+table, func(t *testing.T) {
			for k, it := range B.items[table] {
				out, err := T.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: keyOf(it), ConsistentRead: aws.Bool(true)})
				if err != nil {
					t.Fatal(err)
				}
				if out.Item != nil && str(out.Item["owner"]) != T.label {
					t.Errorf("LEAK: B's test key reads live item %s: %s", k, describeItem(out.Item))
				}
			}
			for _, index := range []string{"", "gsi", "gsik", "lsi"} {
				got := onlyOwn(t, T, "test-key Scan "+index, w.scanAll(t, T.App, table, index))
				if !slices.Equal(got, ownKeys(T, table)) {
					t.Errorf("B's test key Scan %s %q: %v, want %v", table, index, got, ownKeys(T, table))
				}
				got = onlyOwn(t, B, "live Scan "+index, w.scanAll(t, B.App, table, index))
				if !slices.Equal(got, ownKeys(B, table)) {
					t.Errorf("B's live Scan %s %q: %v, want %v", table, index, got, ownKeys(B, table))
				}
			}
			if st := w.stats(t, T.App, table); st.items[""] != int64(len(T.items[table])) {
				t.Errorf("LEAK: B's test key DescribeTable %s: %v, test env has %d items", table, st, len(T.items[table]))
			}
			// Replayed live page tokens.
			out, err := T.App.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table), ExclusiveStartKey: w.lekB[table].scan})
			if err != nil {
				t.Fatalf("test key Scan from a live token: %v", err)
			}
			onlyOwn(t, T, "test-key Scan from a live token", out.Items)
		})
	}

	w.attack(t, "test-key-writes-stay-in-test", func(t *testing.T) {
		// The same tenant's prefix is allowed on the leading-keys table, but
		// the item lands in the test environment only.
		for _, table := range []string{tblNS, tblLK} {
			key := w.keyAt(B, table, 2, "S3") // a live item of B
			if _, err := T.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{"pk": key["pk"], "sk": key["sk"], "owner": S(T.label), "secret": S(T.secret)}}); err != nil {
				t.Fatalf("test key PutItem %s: %v", table, err)
			}
			w.bIntact(t, table, key)
			if _, err := T.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
				t.Fatal(err)
			}
			w.bIntact(t, table, key)
		}
	})

	w.attack(t, "test-admin-live-tables", func(t *testing.T) {
		if all := w.listTables(t, T.Admin, nil); slices.Contains(all, tblBOnly) {
			t.Errorf("LEAK: B's test admin lists live table %s: %v", tblBOnly, all)
		}
		_, eB := T.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tblBOnly)})
		_, eN := T.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(w.never)})
		if shape(eB, tblBOnly) != shape(eN, w.never) {
			t.Errorf("LEAK: test admin DescribeTable of a live table %q vs never-existing %q", shape(eB, tblBOnly), shape(eN, w.never))
		}
		_, err := T.Admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(tblBOnly)})
		wantCode(t, err, "ResourceNotFoundException")
		_, err = T.Admin.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tblOwn),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
		if err != nil {
			t.Fatalf("test admin UpdateTimeToLive on its own %s: %v", tblOwn, err)
		}
		ttl, err := B.Read.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tblOwn)})
		if err != nil {
			t.Fatal(err)
		}
		if ttl.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
			t.Errorf("LEAK: the test environment's TTL change reached B's live %s: %+v", tblOwn, ttl.TimeToLiveDescription)
		}
		w.bTableIntact(t)
	})

	w.attack(t, "test-admin-on-tenant-level-admin-reads", func(t *testing.T) {
		// Keys are per environment; the audit log and usage are per tenant
		// and name live keys and tables, so a test admin key is refused
		// there. Quota (configuration, no data) stays readable; nothing of
		// the live environment may show in it.
		live := map[string]string{
			"a live access key id": B.app.AccessKeyID, "a live admin key id": B.admin.AccessKeyID,
			"the live-only table name " + tblBOnly: tblBOnly,
		}
		rec := newRecorder("Btest (tenant-level reads)")
		rec.forbid(w.A.secret, B.secret, w.A.id)
		for _, p := range []string{"/v1/tenants/" + B.id + "/audit?limit=1000", "/v1/tenants/" + B.id + "/audit/verify", "/v1/tenants/" + B.id + "/usage", "/v1/tenants/" + B.id + "/quota"} {
			if !w.routeExists(t, "GET", p) {
				continue // quota and usage are served only by the real binary (TENANTDB_BIN)
			}
			st, body := w.raw(t, rec, "GET", p, T.admin.Key, "")
			shown := strings.Replace(p, B.id, "{B}", 1)
			if strings.Contains(p, "/quota") {
				if st != 200 {
					t.Errorf("GET %s with B's test admin key: status %d, want 200: %s", shown, st, body)
				}
			} else if st != 403 || !strings.Contains(body, "AccessDenied") {
				t.Errorf("GET %s with B's test admin key: status %d, want 403 AccessDenied: %s", shown, st, body)
			}
			for what, s := range live {
				if strings.Contains(body, s) {
					t.Errorf("LEAK: B's test-environment admin key sees %s in GET %s", what, shown)
				}
			}
		}
		rec.check(t, 0)
	})
}
