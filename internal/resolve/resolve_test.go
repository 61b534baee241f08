package resolve

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// memCatalog is a Catalog over definitions held in memory.
type memCatalog struct {
	shared []*schema.Table
	owned  map[string][]*schema.Table // namespace -> tables
	loads  int                        // LoadOwned calls
}

func (c *memCatalog) LoadShared(context.Context) ([]*schema.Table, error) { return c.shared, nil }

func (c *memCatalog) LoadOwned(_ context.Context, ns []byte) ([]*schema.Table, error) {
	c.loads++
	return c.owned[string(ns)], nil
}

var ctx = context.Background()

func scope(t testing.TB, p tenancy.Principal, action string) tenancy.Scope {
	t.Helper()
	var g tenancy.Guard
	s, err := g.Admit(p, dynamo.ActionOf(action))
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return s
}

func app(t testing.TB, tenant tenancy.TenantID, action string) tenancy.Scope {
	return scope(t, tenancy.Principal{Tenant: tenant, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDAPP"}, action)
}

func operator(t testing.TB, action string) tenancy.Scope {
	return scope(t, tenancy.Principal{Role: tenancy.RoleOperator, KeyID: "AKIDOP"}, action)
}

func table(id uint64, name string, owner tenancy.TenantID) *schema.Table {
	t := &schema.Table{ID: id, Name: name, Hash: schema.KeyAttr{Name: "pk", Type: attr.S}}
	if !owner.IsZero() {
		t.Owner, t.OwnerEnv = owner, "live"
	}
	return t
}

// fixture: shared tables Orders and Shared; tenant a owns Orders (its own,
// shadowing the shared one) and Mine; tenant b owns Secret.
func fixture(t *testing.T) (*Resolver, *memCatalog, tenancy.TenantID, tenancy.TenantID) {
	t.Helper()
	a, b := tenancy.NewTenantID(), tenancy.NewTenantID()
	cat := &memCatalog{
		shared: []*schema.Table{table(1, "Orders", tenancy.TenantID{}), table(2, "Shared", tenancy.TenantID{})},
		owned: map[string][]*schema.Table{
			string(Namespace(app(t, a, "GetItem"))): {table(3, "Orders", a), table(4, "Mine", a)},
			string(Namespace(app(t, b, "GetItem"))): {table(5, "Secret", b)},
		},
	}
	r, err := New(ctx, cat, Options{Region: "r", Account: "1", MaxTenantTables: 2})
	if err != nil {
		t.Fatal(err)
	}
	return r, cat, a, b
}

func wantKind(t *testing.T, err error, kind apierr.Kind, msg string) {
	t.Helper()
	if !apierr.Is(err, kind) {
		t.Fatalf("err = %v, want %v", err, kind)
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Fatalf("err = %v, want it to contain %q", err, msg)
	}
}

func TestOpenResolvesOwnBeforeShared(t *testing.T) {
	r, cat, a, b := fixture(t)
	tg, err := r.Open(ctx, app(t, a, "GetItem"), "Orders")
	if err != nil {
		t.Fatal(err)
	}
	if tg.Table.ID != 3 || string(tg.Namespace) != string(Namespace(app(t, a, "GetItem"))) {
		t.Errorf("a's Orders resolved to table %d in %q, want its own table 3 in its namespace", tg.Table.ID, tg.Namespace)
	}
	if tg, err = r.Open(ctx, app(t, b, "GetItem"), "Orders"); err != nil || tg.Table.ID != 1 {
		t.Errorf("b's Orders = %v, %v; want the shared table 1", tg.Table, err)
	}
	if _, err := r.Open(ctx, app(t, a, "GetItem"), "Mine"); err != nil {
		t.Fatal(err)
	}
	if cat.loads != 2 {
		t.Errorf("LoadOwned called %d times, want once per tenant environment (2)", cat.loads)
	}
}

// Another tenant's table is not found, with the very message of a table
// that does not exist.
func TestOpenNeverRevealsAnotherTenantsTable(t *testing.T) {
	r, _, a, _ := fixture(t)
	_, errOther := r.Open(ctx, app(t, a, "GetItem"), "Secret")
	_, errNone := r.Open(ctx, app(t, a, "GetItem"), "Nothing")
	wantKind(t, errOther, apierr.ResourceNotFound, "Table: Secret not found")
	wantKind(t, errNone, apierr.ResourceNotFound, "Table: Nothing not found")
}

func TestOpenDeniesOperatorAndNarrowedCredential(t *testing.T) {
	r, _, a, _ := fixture(t)
	_, err := r.Open(ctx, operator(t, "DescribeTable"), "Shared") // the guard admits no operator data-plane action
	wantKind(t, err, apierr.AccessDenied, "operator credential has no access to table data")

	narrow := scope(t, tenancy.Principal{Tenant: a, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDN",
		Policy: &tenancy.Policy{Tables: []string{"Mine"}}}, "GetItem")
	if _, err := r.Open(ctx, narrow, "Mine"); err != nil {
		t.Fatalf("narrowed credential on its table: %v", err)
	}
	for _, name := range []string{"Orders", "Nothing"} { // existing or not: the same denial
		_, err := r.Open(ctx, narrow, name)
		wantKind(t, err, apierr.AccessDenied, "resource: table/"+name)
	}
	_, err = r.Open(ctx, app(t, a, "GetItem"), "x")
	wantKind(t, err, apierr.Validation, "tableName")
}

func TestVisible(t *testing.T) {
	r, _, a, _ := fixture(t)
	for _, tc := range []struct {
		s    tenancy.Scope
		want []string
	}{
		{app(t, a, "ListTables"), []string{"Mine", "Orders", "Shared"}},
		{app(t, tenancy.NewTenantID(), "ListTables"), []string{"Orders", "Shared"}},
		{operator(t, "ListTables"), []string{"Orders", "Shared"}},
		{scope(t, tenancy.Principal{Tenant: a, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDN",
			Policy: &tenancy.Policy{Tables: []string{"Mine", "Shared"}}}, "ListTables"), []string{"Mine", "Shared"}},
	} {
		got, err := r.Visible(ctx, tc.s)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Visible = %v, %v; want %v", got, err, tc.want)
		}
	}
}

func TestAdmitCreate(t *testing.T) {
	r, _, a, b := fixture(t)
	admin := func(tenant tenancy.TenantID) tenancy.Scope {
		return scope(t, tenancy.Principal{Tenant: tenant, Env: "live", Role: tenancy.RoleAdmin, KeyID: "AKIDADM"}, "CreateTable")
	}
	wantKind(t, r.MayCreate(app(t, a, "DescribeTable"), "T1"), apierr.AccessDenied, "on resource: arn:aws:dynamodb:r:1:table/T1")
	if err := r.MayCreate(admin(a), "T1"); err != nil {
		t.Fatal(err)
	}
	wantKind(t, r.AdmitCreate(ctx, admin(b), table(0, "Shared", tenancy.TenantID{})), apierr.ResourceInUse, "Table already exists: Shared")
	wantKind(t, r.AdmitCreate(ctx, admin(a), table(0, "New", tenancy.TenantID{})), apierr.LimitExceeded, "limit of 2 tables")
	nt := table(0, "Secret", tenancy.TenantID{}) // b's name: a may use it
	if err := r.AdmitCreate(ctx, admin(tenancy.NewTenantID()), nt); err != nil {
		t.Fatal(err)
	}
	if nt.Shared() || nt.OwnerEnv != "live" {
		t.Errorf("a tenant's new table: owner %v env %q; want the tenant's, live", nt.Owner, nt.OwnerEnv)
	}
	st := table(0, "Secret", tenancy.TenantID{})
	if err := r.AdmitCreate(ctx, operator(t, "CreateTable"), st); err != nil || !st.Shared() {
		t.Errorf("operator's table %q: %v, shared %v; want a shared table (it never sees tenant tables)", st.Name, err, st.Shared())
	}
}

func TestCheckManage(t *testing.T) {
	r, _, a, b := fixture(t)
	admin := func(tenant tenancy.TenantID) tenancy.Scope {
		return scope(t, tenancy.Principal{Tenant: tenant, Env: "live", Role: tenancy.RoleAdmin, KeyID: "AKIDADM"}, "UpdateTable")
	}
	shared, own := table(2, "Shared", tenancy.TenantID{}), table(4, "Mine", a)
	for _, tc := range []struct {
		s     tenancy.Scope
		t     *schema.Table
		allow bool
	}{
		{operator(t, "UpdateTable"), shared, true},
		{operator(t, "UpdateTable"), own, false},
		{admin(a), own, true},
		{admin(a), shared, false},
		{admin(b), own, false},
		{app(t, a, "DescribeTable"), own, false},
	} {
		err := r.CheckManage(tc.s, tc.t)
		if (err == nil) != tc.allow {
			t.Errorf("CheckManage(%v, %s) = %v, want allowed %v", tc.s.KeyID(), tc.t.Name, err, tc.allow)
		}
	}
}

func TestPublishUnpublish(t *testing.T) {
	r, _, a, _ := fixture(t)
	s := app(t, a, "GetItem")
	if _, err := r.Open(ctx, s, "Mine"); err != nil {
		t.Fatal(err)
	}
	nt := table(9, "Fresh", a)
	r.Publish(nt)
	if tg, err := r.Open(ctx, s, "Fresh"); err != nil || tg.Table != nt {
		t.Fatalf("published table: %v, %v", tg.Table, err)
	}
	r.Unpublish(nt)
	if _, err := r.Current(nt); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("Current of an unpublished table: %v, want ResourceNotFound", err)
	}
	r.ForgetTenant(a)
	if r.ByID(4) != nil {
		t.Error("a forgotten tenant's table is still published by id")
	}
}

func TestLookupARN(t *testing.T) {
	r, _, a, _ := fixture(t)
	s := app(t, a, "ListTagsOfResource")
	tg, err := r.LookupARN(ctx, s, "arn:aws:dynamodb:r:1:table/Mine/index/gsi")
	if err != nil || tg.Table.ID != 4 {
		t.Fatalf("LookupARN = %v, %v", tg.Table, err)
	}
	_, err = r.LookupARN(ctx, s, "arn:aws:dynamodb:other:1:table/Mine")
	wantKind(t, err, apierr.AccessDenied, "")
	_, err = r.LookupARN(ctx, s, "arn:aws:dynamodb:r:1:table/Secret")
	wantKind(t, err, apierr.ResourceNotFound, "ResourcArn: arn:aws:dynamodb:r:1:table/Secret not found")
	_, err = r.LookupARN(ctx, s, "nope")
	wantKind(t, err, apierr.Validation, "Invalid TableArn")
}

func TestApplyIsolationTags(t *testing.T) {
	tag := func(kv ...string) []wire.Tag {
		var out []wire.Tag
		for i := 0; i < len(kv); i += 2 {
			out = append(out, wire.Tag{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		tags    []wire.Tag
		hash    attr.Type
		mode    tenancy.IsolationMode
		pattern string
		err     string
	}{
		{tags: nil, hash: attr.S, mode: tenancy.Namespace},
		{tags: tag("env", "prod"), hash: attr.N, mode: tenancy.Namespace},
		{tags: tag(tenancy.TagIsolation, "silo"), hash: attr.N, mode: tenancy.Silo},
		{tags: tag(tenancy.TagIsolation, "leading-keys", tenancy.TagLeadingKeyPattern, "TENANT#{tenant}|*"), hash: attr.S, mode: tenancy.LeadingKeys, pattern: "TENANT#{tenant}|*"},
		{tags: tag(tenancy.TagIsolation, "leading-keys", tenancy.TagLeadingKeyPattern, "TENANT#{tenant}|*"), hash: attr.N, err: "needs a partition key of type S"},
		{tags: tag(tenancy.TagIsolation, "leading-keys"), hash: attr.S, err: "pattern containing {tenant}"},
		{tags: tag(tenancy.TagIsolation, "leading-keys", tenancy.TagLeadingKeyPattern, "T#*{tenant}*"), hash: attr.S, err: "* only at its end"},
		{tags: tag(tenancy.TagLeadingKeyPattern, "{tenant}"), hash: attr.S, err: "requires tenantdb:isolation=leading-keys"},
		{tags: tag(tenancy.TagIsolation, "bogus"), hash: attr.S, err: "must be one of namespace, leading-keys, silo"},
		{tags: tag("tenantdb:other", "x"), hash: attr.S, err: "Unknown reserved tag key tenantdb:other"},
	} {
		tb := &schema.Table{Tags: tc.tags, Hash: schema.KeyAttr{Name: "pk", Type: tc.hash}}
		err := ApplyIsolationTags(tb)
		if tc.err != "" {
			wantKind(t, err, apierr.Validation, tc.err)
			continue
		}
		if err != nil || tb.Isolation != tc.mode || tb.LeadingKeyPattern != tc.pattern {
			t.Errorf("tags %v: mode %v pattern %q err %v; want %v %q", tc.tags, tb.Isolation, tb.LeadingKeyPattern, err, tc.mode, tc.pattern)
		}
	}
}

// A leading-keys Target checks the partition key of a key, of an item and
// of every GSI key the item carries, and of a page token.
func TestTargetLeadingKeys(t *testing.T) {
	a := tenancy.NewTenantID()
	tb := &schema.Table{
		Isolation: tenancy.LeadingKeys, LeadingKeyPattern: "TENANT#{tenant}|*",
		Hash:    schema.KeyAttr{Name: "pk", Type: attr.S},
		Indexes: []*schema.Index{{Name: "g", Hash: schema.KeyAttr{Name: "gpk", Type: attr.S}}},
	}
	tg := Target{Table: tb, Scope: app(t, a, "PutItem")}
	mine, theirs := attr.Value{Type: attr.S, S: "TENANT#" + a.String() + "|x"}, attr.Value{Type: attr.S, S: "TENANT#other|x"}
	for _, tc := range []struct {
		name string
		err  error
		ok   bool
	}{
		{"own key", tg.CheckKey(attr.Item{"pk": mine}), true},
		{"other key", tg.CheckKey(attr.Item{"pk": theirs}), false},
		{"item", tg.CheckItem(attr.Item{"pk": mine, "gpk": mine}), true},
		{"item without GSI key", tg.CheckItem(attr.Item{"pk": mine}), true},
		{"item with other GSI key", tg.CheckItem(attr.Item{"pk": mine, "gpk": theirs}), false},
		{"table page token", tg.CheckStartKey(nil, attr.Item{"pk": mine}), true},
		{"index page token", tg.CheckStartKey(tb.Indexes[0], attr.Item{"pk": mine, "gpk": theirs}), false},
		{"value", tg.CheckLeadingKey(theirs), false},
	} {
		if (tc.err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, tc.err, tc.ok)
		}
		if tc.err != nil && !apierr.Is(tc.err, apierr.AccessDenied) {
			t.Errorf("%s: %v, want AccessDenied", tc.name, tc.err)
		}
	}
	ns := Target{Table: &schema.Table{Hash: tb.Hash}, Scope: app(t, a, "PutItem")}
	if err := ns.CheckItem(attr.Item{"pk": theirs}); err != nil {
		t.Errorf("a namespace table enforces no pattern: %v", err)
	}
}

// Open is on every request's path: it allocates the namespace only.
func TestOpenAllocs(t *testing.T) {
	r, _, a, _ := fixture(t)
	s := app(t, a, "GetItem")
	if _, err := r.Open(ctx, s, "Orders"); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(100, func() {
		if _, err := r.Open(ctx, s, "Shared"); err != nil {
			t.Fatal(err)
		}
	})
	if n > 1 {
		t.Errorf("Open allocates %v times per call, want at most 1 (the namespace)", n)
	}
}
