package isolation

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
)

// lifecycleAttacks deletes a tenant that holds data everywhere and checks
// that nothing of it survives — not even for a new tenant created with
// the same id — and that the other tenants are untouched.
func (w *world) lifecycleAttacks(t *testing.T) {
	ctx := w.ctx

	w.attack(t, "create-tenant-with-existing-id", func(t *testing.T) {
		_, err := w.admin.CreateTenant(ctx, admin.CreateTenantRequest{Name: "impostor", Slug: "impostor-" + randHex(3), ID: w.B.id})
		if err == nil {
			t.Fatalf("LEAK: a second tenant was created with B's id")
		}
		w.bKeysIntact(t)
	})

	w.attack(t, "deleted-tenant-id-reused", func(t *testing.T) {
		// D lives everywhere: shared tables of every mode, its own table
		// with TTL and tags, a test environment, an idempotency token.
		dAdmin := w.srv.NewTenant(t, "iso-doomed", "admin")
		D := &tenant{label: "D", id: dAdmin.TenantID, env: "live", secret: "SECRET-D-" + randHex(8), items: map[string]map[string]map[string]types.AttributeValue{}}
		D.admin = dAdmin
		D.app = w.newKey(t, D.id, "app", "live", nil)
		D.read = w.newKey(t, D.id, "read", "live", nil)
		D.rec = newRecorder("D")
		D.Admin, D.App, D.Read = w.client(D.admin, "", D.rec), w.client(D.app, "", D.rec), w.client(D.read, "", D.rec)
		dTest := w.newKey(t, D.id, "app", "test", nil)
		w.createTable(t, D.Admin, tblOwn, []types.Tag{{Key: aws.String("owner"), Value: aws.String(D.secret)}})
		w.createTable(t, D.Admin, "iso_doomed_only", nil)
		for _, table := range []string{tblNS, tblSilo, tblLK, tblOwn} {
			w.seed(t, D, table, 2, 2, 0)
		}
		if _, err := D.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tblNS),
			Item: map[string]types.AttributeValue{"pk": S("P0"), "sk": S("test-env"), "secret": S(D.secret)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.client(dTest, "", D.rec).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tblNS),
			Item: map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0"), "secret": S(D.secret)}}); err != nil {
			t.Fatal(err)
		}
		token := "iso-doomed-" + randHex(4)
		if _, err := D.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(tblNS), Item: map[string]types.AttributeValue{"pk": S("P1"), "sk": S("tx")}}}}}); err != nil {
			t.Fatal(err)
		}

		aBefore, bBefore := w.stats(t, w.A.App, tblNS), w.stats(t, w.B.App, tblNS)
		if _, err := w.admin.DeleteTenant(ctx, D.id); err != nil {
			t.Fatalf("DeleteTenant: %v", err)
		}
		for _, c := range []*dynamodb.Client{D.Admin, D.App, w.client(dTest, "", D.rec)} {
			if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err == nil {
				t.Errorf("a key of the deleted tenant still works")
			}
		}
		w.aViewIntact(t)
		if got := w.stats(t, w.A.App, tblNS); got.String() != aBefore.String() {
			t.Errorf("A's statistics changed by D's deletion: %v -> %v", aBefore, got)
		}
		if got := w.stats(t, w.B.App, tblNS); got.String() != bBefore.String() {
			t.Errorf("B's statistics changed by D's deletion: %v -> %v", bBefore, got)
		}
		w.bTableIntact(t)

		// A new tenant with D's id (the seeding path) starts empty.
		if _, err := w.admin.CreateTenant(ctx, admin.CreateTenantRequest{Name: "reborn", Slug: "reborn-" + randHex(3), ID: D.id}); err != nil {
			w.note("a deleted tenant's id cannot be reused (%v); the reuse checks did not run", err)
			return
		}
		R := &tenant{label: "R", id: D.id, secret: "SECRET-R-" + randHex(8)}
		R.admin = w.newKey(t, D.id, "admin", "live", nil)
		R.rec = newRecorder("R (D's id reused)")
		R.rec.forbid(D.secret, w.A.secret, w.B.secret, w.Btest.secret)
		w.mu.Lock()
		w.recs = append(w.recs, R.rec)
		w.mu.Unlock()
		R.Admin = w.client(R.admin, "", R.rec)
		rTest := w.client(w.newKey(t, D.id, "admin", "test", nil), "", R.rec)
		for _, c := range []*dynamodb.Client{R.Admin, rTest} {
			if all := w.listTables(t, c, nil); slices.Contains(all, "iso_doomed_only") {
				t.Errorf("LEAK: the reborn tenant lists D's table: %v", all)
			}
			for _, table := range []string{tblNS, tblSilo, tblLK, tblOwn} {
				_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
				if err != nil {
					continue // D's own table is gone, as it should be
				}
				if got := w.scanAll(t, c, table, ""); len(got) != 0 {
					t.Errorf("LEAK: the reborn tenant sees %d of D's items in %s", len(got), table)
				}
				if st := w.stats(t, c, table); st.items[""] != 0 || st.bytes[""] != 0 {
					t.Errorf("LEAK: the reborn tenant's DescribeTable %s shows D's statistics: %v", table, st)
				}
			}
		}
		_, err := R.Admin.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: aws.String(tblNS), Item: map[string]types.AttributeValue{"pk": S("P2"), "sk": S("other")}}}}})
		if err != nil {
			t.Errorf("LEAK: the reborn tenant reusing D's ClientRequestToken: %v", err)
		}
		page, err := w.admin.Audit(ctx, D.id, client.AuditQuery{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if r.Actor == D.admin.AccessKeyID || r.Actor == D.app.AccessKeyID {
				t.Errorf("LEAK: the reborn tenant's audit log holds D's records: %+v", r)
				break
			}
		}
		w.mu.Lock()
		w.recs = slices.DeleteFunc(w.recs, func(r *recorder) bool { return r == R.rec })
		w.mu.Unlock()
		R.rec.check(t, 0)
	})
}
