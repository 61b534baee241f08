package isolation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/sdkhttp"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// The tables every tenant attacks. All have the same schema:
//
//	pk (S, HASH), sk (S, RANGE)
//	LSI lsi:   pk, lsk (S)        ALL
//	GSI gsi:   gpk (S), gsk (S)   ALL
//	GSI gsik:  gpk2 (S)           KEYS_ONLY
const (
	tblNS    = "iso_ns"    // shared, namespace isolation (the default)
	tblSilo  = "iso_silo"  // shared, silo isolation
	tblLK    = "iso_lk"    // shared, leading-keys isolation
	tblOwn   = "iso_own"   // tenant-owned, created by every tenant environment
	tblBOnly = "iso_bonly" // tenant-owned by B (live) only

	lkPattern = "TENANT#{tenant}|*"
)

// dataTables are the tables where every tenant's items live side by side
// under colliding keys, the server alone keeping them apart.
var dataTables = []string{tblNS, tblSilo, tblOwn}

// tenant is one tenant environment: its credentials, clients, the secret
// value planted in every item it writes, and the items it wrote.
type tenant struct {
	label  string // "A", "B", "Btest", ...
	id     string
	env    string
	secret string

	admin, app, read harness.Credential
	Admin, App, Read *dynamodb.Client // clients (all capture through rec)
	rec              *recorder

	// items: table → item key ("pk/sk") → item, as this tenant wrote them.
	items map[string]map[string]map[string]types.AttributeValue
}

// world is one server with the tenants and tables the attacks use.
type world struct {
	srv *harness.Server
	// Op is the operator's DynamoDB client.
	Op    *dynamodb.Client
	opRec *recorder
	A     *tenant // the attacker
	B     *tenant // the victim
	Btest *tenant // B's test environment: same tenant, other data

	mu      sync.Mutex
	attacks int               // leaf attacks run
	denials []denialRecord    // denied attempts and whether they were audited
	notes   []string          // observations for the report (t.Log at the end)
	recs    []*recorder       // every capturing client's recorder
	never   string            // a table name that never existed
	ctx     context.Context   // the test's context
	admin   *client.Client    // operator admin client
	noted   map[string]bool   // dedup of notes
	lekB    map[string]lekSet // B's real page tokens per table
}

// lekSet holds real LastEvaluatedKeys of a tenant's reads.
type lekSet struct {
	scan, query, gsi, lsi, gsik map[string]types.AttributeValue
}

type denialRecord struct {
	attack, log, action string
	audited, probe      bool
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// newWorld starts a server and sets up tenants A and B (live) and B's
// test environment, the shared tables (created by the operator), the
// tenant-owned tables, and each tenant's items.
func newWorld(t *testing.T) *world {
	t.Helper()
	srv := harness.Start(t)
	// A safety net, not a speed goal: under -race on a loaded machine, over
	// a gateway that waits out the fleet's staleness bound at each narrowing
	// change, the attacks take minutes; the package's -timeout still holds.
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	t.Cleanup(cancel)
	w := &world{srv: srv, ctx: ctx, admin: srv.Admin(), never: "iso_never_" + randHex(4), noted: map[string]bool{}, lekB: map[string]lekSet{}}

	w.A = w.newTenant(t, "A", "", "live")
	w.B = w.newTenant(t, "B", "", "live")
	w.Btest = w.newTenant(t, "Btest", w.B.id, "test")
	// Forbidden strings: a tenant environment must never receive another's
	// secret; another tenant's id must never appear unless the request
	// itself carried it (e.g. a guessed TENANT#<id>| prefix).
	w.A.rec.forbid(w.B.secret, w.Btest.secret, w.B.id)
	w.B.rec.forbid(w.A.secret, w.Btest.secret, w.A.id)
	w.Btest.rec.forbid(w.A.secret, w.B.secret, w.A.id)

	w.opRec = newRecorder("operator")
	w.opRec.forbid(w.A.secret, w.B.secret, w.Btest.secret)
	w.recs = append(w.recs, w.opRec)
	w.Op = w.client(srv.Operator, "", w.opRec)

	for _, name := range []string{tblNS, tblSilo, tblLK} {
		var tags []types.Tag
		switch name {
		case tblSilo:
			tags = []types.Tag{{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")}}
		case tblLK:
			tags = []types.Tag{
				{Key: aws.String("tenantdb:isolation"), Value: aws.String("leading-keys")},
				{Key: aws.String("tenantdb:leading-key-pattern"), Value: aws.String(lkPattern)},
			}
		}
		w.createTable(t, w.Op, name, tags)
	}
	for _, tn := range []*tenant{w.A, w.B, w.Btest} {
		w.createTable(t, tn.Admin, tblOwn, []types.Tag{{Key: aws.String("owner"), Value: aws.String(tn.secret)}})
	}
	w.createTable(t, w.B.Admin, tblBOnly, []types.Tag{{Key: aws.String("owner"), Value: aws.String(w.B.secret)}})

	// Items. A: 2 partitions x 2; B: 3 partitions x 4 (+1 whose sort key is
	// its secret), large; Btest: 1. Keys collide across tenants.
	for _, table := range []string{tblNS, tblSilo, tblLK, tblOwn} {
		w.seed(t, w.A, table, 2, 2, 0)
		w.seed(t, w.B, table, 3, 4, 8<<10)
		w.seed(t, w.Btest, table, 1, 1, 0)
	}
	w.seed(t, w.B, tblBOnly, 2, 2, 0)

	// B's real page tokens (Limit 1 reads), to replay as other tenants.
	for _, table := range []string{tblNS, tblSilo, tblLK, tblOwn} {
		w.lekB[table] = w.realTokens(t, w.B, table)
	}

	t.Cleanup(func() { w.report(t) })
	return w
}

// newTenant creates a tenant (id == "") or, with id, another environment
// of it, with admin, app and read keys and capturing clients.
func (w *world) newTenant(t *testing.T, label, id, env string) *tenant {
	t.Helper()
	tn := &tenant{label: label, env: env, secret: "SECRET-" + label + "-" + randHex(8), items: map[string]map[string]map[string]types.AttributeValue{}}
	if id == "" {
		tn.admin = w.srv.NewTenant(t, "iso-"+strings.ToLower(label), "admin")
		id = tn.admin.TenantID
	} else {
		tn.admin = w.newKey(t, id, "admin", env, nil)
	}
	tn.id = id
	tn.app = w.newKey(t, id, "app", env, nil)
	tn.read = w.newKey(t, id, "read", env, nil)
	tn.rec = newRecorder(label)
	w.recs = append(w.recs, tn.rec)
	tn.Admin = w.client(tn.admin, "", tn.rec)
	tn.App = w.client(tn.app, "", tn.rec)
	tn.Read = w.client(tn.read, "", tn.rec)
	return tn
}

// newKey creates an API key through the operator's admin API.
func (w *world) newKey(t *testing.T, tenantID, role, env string, expires *time.Time) harness.Credential {
	t.Helper()
	k, err := w.admin.CreateKey(w.ctx, tenantID, admin.CreateKeyRequest{Role: role, Env: env, ExpiresAt: expires})
	if err != nil {
		t.Fatalf("create %s key (env %s) for %s: %v", role, env, tenantID, err)
	}
	return harness.Credential{TenantID: tenantID, AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, Key: k.Key}
}

// client returns a DynamoDB client for c (with a session token, for
// temporary credentials) whose every exchange rec captures.
func (w *world) client(c harness.Credential, token string, rec *recorder) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       harness.Region,
		BaseEndpoint: aws.String(w.srv.Endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: token}, nil
		}),
		RetryMaxAttempts: 1,
		HTTPClient:       sdkhttp.OwnBody(&http.Client{Transport: rec}), // NB: no retries (see sdkhttp)
	})
}

// createTable creates a pay-per-request table with the suite's schema.
func (w *world) createTable(t *testing.T, c *dynamodb.Client, name string, tags []types.Tag) {
	t.Helper()
	if _, err := c.CreateTable(w.ctx, tableInput(name, tags)); err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	harness.WaitActive(t, w.ctx, c, name)
}

func tableInput(name string, tags []types.Tag) *dynamodb.CreateTableInput {
	s := func(n string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(n), AttributeType: types.ScalarAttributeTypeS}
	}
	ks := func(h, r string) []types.KeySchemaElement {
		k := []types.KeySchemaElement{{AttributeName: aws.String(h), KeyType: types.KeyTypeHash}}
		if r != "" {
			k = append(k, types.KeySchemaElement{AttributeName: aws.String(r), KeyType: types.KeyTypeRange})
		}
		return k
	}
	return &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{s("pk"), s("sk"), s("lsk"), s("gpk"), s("gsk"), s("gpk2")},
		KeySchema:            ks("pk", "sk"),
		BillingMode:          types.BillingModePayPerRequest,
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName: aws.String("lsi"), KeySchema: ks("pk", "lsk"),
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{
			{IndexName: aws.String("gsi"), KeySchema: ks("gpk", "gsk"), Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}},
			{IndexName: aws.String("gsik"), KeySchema: ks("gpk2", ""), Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}},
		},
		Tags: tags,
	}
}

// pkv is partition key p of tenant tn in table (prefixed on the
// leading-keys table).
func pkv(tn *tenant, table string, p int) string {
	if table == tblLK {
		return lkPrefix(tn.id) + fmt.Sprintf("P%d", p)
	}
	return fmt.Sprintf("P%d", p)
}

func lkPrefix(id string) string { return "TENANT#" + id + "|" }

// gpkv is a GSI partition key value (prefixed on the leading-keys table).
func gpkv(tn *tenant, table string, g int) string {
	if table == tblLK {
		return lkPrefix(tn.id) + fmt.Sprintf("G%d", g)
	}
	return fmt.Sprintf("G%d", g)
}

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func N(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

// makeItem builds tenant tn's item (p, sk) of table; blob > 0 adds a
// large attribute (made of the secret) so that sizes differ by tenant.
func makeItem(tn *tenant, table string, p int, sk string, blob int) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"pk":     S(pkv(tn, table, p)),
		"sk":     S(sk),
		"lsk":    S("L" + sk),
		"gpk":    S(gpkv(tn, table, p%2)),
		"gsk":    S(sk),
		"gpk2":   S(gpkv(tn, table, 0)),
		"owner":  S(tn.label),
		"secret": S(tn.secret),
		"n":      N("1"),
		"tags":   &types.AttributeValueMemberSS{Value: []string{tn.secret, tn.label}},
	}
	if blob > 0 {
		it["blob"] = S(strings.Repeat(tn.secret+".", blob/(len(tn.secret)+1)+1))
	}
	return it
}

func keyOf(it map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}
}

func keyStr(it map[string]types.AttributeValue) string { return str(it["pk"]) + "/" + str(it["sk"]) }

func str(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return x.Value
	case *types.AttributeValueMemberN:
		return x.Value
	}
	return ""
}

// seed writes tn's items into table: partitions × sorts, the first
// partition also holding an item whose sort key is tn's secret.
func (w *world) seed(t *testing.T, tn *tenant, table string, partitions, sorts, blob int) {
	t.Helper()
	if tn.items[table] == nil {
		tn.items[table] = map[string]map[string]types.AttributeValue{}
	}
	var reqs []types.WriteRequest
	for p := 0; p < partitions; p++ {
		for s := 0; s < sorts; s++ {
			it := makeItem(tn, table, p, fmt.Sprintf("S%d", s), blob)
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
			tn.items[table][keyStr(it)] = it
		}
	}
	it := makeItem(tn, table, 0, "S-"+tn.secret, blob)
	reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	tn.items[table][keyStr(it)] = it
	for len(reqs) > 0 {
		n := min(len(reqs), 25)
		out, err := tn.App.BatchWriteItem(w.ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: reqs[:n]}})
		if err != nil {
			t.Fatalf("seed %s as %s: %v", table, tn.label, err)
		}
		if len(out.UnprocessedItems) > 0 {
			t.Fatalf("seed %s as %s: unprocessed items", table, tn.label)
		}
		reqs = reqs[n:]
	}
}

// realTokens returns tn's real LastEvaluatedKeys (Limit 1) on table.
func (w *world) realTokens(t *testing.T, tn *tenant, table string) lekSet {
	t.Helper()
	var ls lekSet
	sc, err := tn.App.Scan(w.ctx, &dynamodb.ScanInput{TableName: aws.String(table), Limit: aws.Int32(1)})
	if err != nil || sc.LastEvaluatedKey == nil {
		t.Fatalf("%s Scan %s Limit 1: %v (LastEvaluatedKey %v)", tn.label, table, err, sc)
	}
	ls.scan = sc.LastEvaluatedKey
	q := func(index, cond, name string, v string) map[string]types.AttributeValue {
		in := &dynamodb.QueryInput{
			TableName: aws.String(table), Limit: aws.Int32(1),
			KeyConditionExpression:    aws.String("#k = :v"),
			ExpressionAttributeNames:  map[string]string{"#k": name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": S(v)},
		}
		if index != "" {
			in.IndexName = aws.String(index)
		}
		out, err := tn.App.Query(w.ctx, in)
		if err != nil || out.LastEvaluatedKey == nil {
			t.Fatalf("%s Query %s/%s Limit 1: %v", tn.label, table, index, err)
		}
		return out.LastEvaluatedKey
	}
	ls.query = q("", "", "pk", pkv(tn, table, 0))
	ls.lsi = q("lsi", "", "pk", pkv(tn, table, 0))
	ls.gsi = q("gsi", "", "gpk", gpkv(tn, table, 0))
	ls.gsik = q("gsik", "", "gpk2", gpkv(tn, table, 0))
	return ls
}

// attack runs one attack as a subtest and checks, afterwards, that no
// capturing client received a forbidden string during it.
func (w *world) attack(t *testing.T, name string, fn func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		w.mu.Lock()
		w.attacks++
		marks := make([]int, len(w.recs))
		for i, r := range w.recs {
			marks[i] = r.len()
		}
		w.mu.Unlock()
		fn(t)
		for i, r := range w.recs {
			r.check(t, marks[i])
		}
	})
}

// note records an observation for the final report.
func (w *world) note(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.noted[s] {
		w.noted[s] = true
		w.notes = append(w.notes, s)
	}
}

// report logs the number of attacks, the audit coverage of denials and
// the notes, and checks every captured exchange once more.
func (w *world) report(t *testing.T) {
	for _, r := range w.recs {
		r.check(t, 0)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "isolation: %d attacks, %d captured exchanges\n", w.attacks, w.exchanges())
	for _, r := range w.recs {
		fmt.Fprintf(&b, "  %s\n", r.summary())
	}
	audited, required := 0, 0
	for _, d := range w.denials {
		if !d.probe {
			required++
			if d.audited {
				audited++
			}
		}
	}
	fmt.Fprintf(&b, "denied attempts that must be audited: %d, audited: %d\n", required, audited)
	for _, d := range w.denials {
		mark := "audited"
		switch {
		case !d.audited && d.probe:
			mark = "not audited"
		case !d.audited:
			mark = "NOT AUDITED"
		}
		fmt.Fprintf(&b, "  %-11s %-8s %-45s %s\n", mark, d.log, d.action, d.attack)
	}
	for _, n := range w.notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	t.Log(b.String())
}

func (w *world) exchanges() int {
	n := 0
	for _, r := range w.recs {
		n += r.len()
	}
	return n
}

// ---- errors ----

// code returns the API error code of err ("" if none).
func code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func message(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// wantCode fails unless err carries the API error code want.
func wantCode(t *testing.T, err error, want string) {
	t.Helper()
	if got := code(err); got != want {
		t.Errorf("error %v: code %q, want %q", err, got, want)
	}
}

// shape is what a client learns from an error: status, code and message
// with the given names replaced by a placeholder.
func shape(err error, names ...string) string {
	if err == nil {
		return "<nil>"
	}
	msg := message(err)
	for _, n := range names {
		if n != "" {
			msg = strings.ReplaceAll(msg, n, "<NAME>")
		}
	}
	return fmt.Sprintf("%d %s: %s", status(err), code(err), msg)
}

// ---- audit ----

// auditTail returns the last sequence number of tenant id's audit log
// ("" for the platform log).
func (w *world) auditTail(t *testing.T, id string) uint64 {
	t.Helper()
	var last uint64
	for {
		page, err := w.admin.Audit(w.ctx, id, client.AuditQuery{After: last, Limit: 1000})
		if err != nil {
			t.Fatalf("audit of %q: %v", id, err)
		}
		if len(page.Records) > 0 {
			last = page.Records[len(page.Records)-1].Seq
		}
		if page.NextAfter == 0 || len(page.Records) == 0 {
			return last
		}
		last = page.NextAfter
	}
}

// probeAudited records, without failing, whether tenant id's log got a
// denied record after since (of action, if not ""), for refusals that are
// not required to be audited.
func (w *world) probeAudited(t *testing.T, id string, since uint64, action, what string) {
	t.Helper()
	page, err := w.admin.Audit(w.ctx, id, client.AuditQuery{After: since, Limit: 1000})
	if err != nil {
		t.Fatalf("audit of %q: %v", id, err)
	}
	found := false
	for _, r := range page.Records {
		if audit.DeniedAttempts(audit.Record(r)) > 0 && (action == "" || r.Action == action) {
			found = true
		}
	}
	w.mu.Lock()
	w.denials = append(w.denials, denialRecord{attack: t.Name() + " (probe: " + what + ")", log: w.labelOf(id), action: action, audited: found, probe: true})
	w.mu.Unlock()
}

// wantAudited checks that tenant id's log ("" for the platform log) got,
// after seq since, a denied record of action (by actor, if not "").
func (w *world) wantAudited(t *testing.T, id string, since uint64, actor, action string) {
	t.Helper()
	found := false
	after := since
	for !found {
		page, err := w.admin.Audit(w.ctx, id, client.AuditQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatalf("audit of %q: %v", id, err)
		}
		for _, r := range page.Records {
			// A summary of coalesced denials (audit.OutcomeDeniedCoalesced)
			// accounts for the attempt as well as a record of its own.
			if audit.DeniedAttempts(audit.Record(r)) > 0 && r.Action == action && (actor == "" || r.Actor == actor) {
				found = true
			}
		}
		if page.NextAfter == 0 || len(page.Records) == 0 {
			break
		}
		after = page.NextAfter
	}
	log := id
	if log == "" {
		log = "platform"
	} else {
		log = w.labelOf(id)
	}
	w.mu.Lock()
	w.denials = append(w.denials, denialRecord{attack: t.Name(), log: log, action: action, audited: found})
	w.mu.Unlock()
	if !found {
		t.Errorf("denied %s (actor %s) is not in the audit log of %s after seq %d", action, actor, log, since)
	}
}

func (w *world) labelOf(id string) string {
	for _, tn := range []*tenant{w.A, w.B} {
		if tn.id == id {
			return tn.label
		}
	}
	return id[:8]
}

// denied runs fn, expects AccessDeniedException and checks the audit
// log of tenant logID for action by actor.
func (w *world) denied(t *testing.T, logID, actor, action string, fn func() error) {
	t.Helper()
	since := w.auditTail(t, logID)
	err := fn()
	if code(err) != "AccessDeniedException" {
		t.Errorf("%s: got %v, want AccessDeniedException", action, err)
		return
	}
	w.wantAudited(t, logID, since, actor, action)
}

// ---- views ----

// scanAll returns every item tn's client c sees in table (or index).
func (w *world) scanAll(t *testing.T, c *dynamodb.Client, table, index string) []map[string]types.AttributeValue {
	t.Helper()
	var out []map[string]types.AttributeValue
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	for {
		page, err := c.Scan(w.ctx, in)
		if err != nil {
			t.Fatalf("Scan %s/%s: %v", table, index, err)
		}
		out = append(out, page.Items...)
		if page.LastEvaluatedKey == nil {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// onlyOwn fails for any item not written by tn (by owner and secret),
// and returns the keys seen.
func onlyOwn(t *testing.T, tn *tenant, what string, items []map[string]types.AttributeValue) []string {
	t.Helper()
	var keys []string
	for _, it := range items {
		if o, ok := it["owner"]; ok && str(o) != tn.label {
			t.Errorf("LEAK: %s: %s sees an item of %s: %v", what, tn.label, str(o), keyStr(it))
		}
		if s, ok := it["secret"]; ok && str(s) != tn.secret {
			t.Errorf("LEAK: %s: %s sees another tenant's secret in %v", what, tn.label, keyStr(it))
		}
		keys = append(keys, keyStr(it))
	}
	sort.Strings(keys)
	return keys
}

// ownKeys returns tn's item keys in table, sorted.
func ownKeys(tn *tenant, table string) []string {
	var keys []string
	for k := range tn.items[table] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// bOnlyKey returns a key of B in table that A does not have.
func (w *world) bOnlyKey(table string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": S(pkv(w.B, table, 2)), "sk": S("S3")}
}

// sharedKey returns a key both A and B have (namespace-like tables).
func (w *world) sharedKey(table string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": S(pkv(w.A, table, 0)), "sk": S("S0")}
}

// getB reads B's item at key with B's own credential.
func (w *world) getB(t *testing.T, table string, key map[string]types.AttributeValue) map[string]types.AttributeValue {
	t.Helper()
	out, err := w.B.App.GetItem(w.ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("B GetItem %s: %v", table, err)
	}
	return out.Item
}

// bIntact checks that B's item at key is exactly as B wrote it.
func (w *world) bIntact(t *testing.T, table string, key map[string]types.AttributeValue) {
	t.Helper()
	got := w.getB(t, table, key)
	want := w.B.items[table][keyStr(key)]
	if want == nil {
		t.Fatalf("test bug: B has no item %s in %s", keyStr(key), table)
	}
	if !sameItem(got, want) {
		t.Errorf("LEAK: B's item %s in %s was changed by another tenant: got %v", keyStr(key), table, describeItem(got))
	}
}

func sameItem(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if avString(v) != avString(b[k]) {
			return false
		}
	}
	return true
}

func avString(v types.AttributeValue) string {
	switch x := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + x.Value
	case *types.AttributeValueMemberN:
		return "N:" + x.Value
	case *types.AttributeValueMemberSS:
		s := append([]string(nil), x.Value...)
		sort.Strings(s)
		return "SS:" + strings.Join(s, ",")
	case *types.AttributeValueMemberNS:
		s := append([]string(nil), x.Value...)
		sort.Strings(s)
		return "NS:" + strings.Join(s, ",")
	case *types.AttributeValueMemberB:
		return "B:" + string(x.Value)
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint("BOOL:", x.Value)
	case *types.AttributeValueMemberNULL:
		return "NULL"
	case *types.AttributeValueMemberL:
		var parts []string
		for _, e := range x.Value {
			parts = append(parts, avString(e))
		}
		return "L:[" + strings.Join(parts, ",") + "]"
	case *types.AttributeValueMemberM:
		var parts []string
		for k, e := range x.Value {
			parts = append(parts, k+"="+avString(e))
		}
		sort.Strings(parts)
		return "M:{" + strings.Join(parts, ",") + "}"
	case nil:
		return "<nil>"
	}
	return fmt.Sprintf("%T", v)
}

func describeItem(it map[string]types.AttributeValue) string {
	if it == nil {
		return "<no item>"
	}
	var parts []string
	for k, v := range it {
		s := avString(v)
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		parts = append(parts, k+"="+s)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, " ") + "}"
}
