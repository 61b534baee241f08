package seeds

// Seed 004 ("Amazon DynamoDB data modeling for Multi-Tenancy – Part 2"):
// its AWS CLI commands, verbatim, against the SupportTicket table.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// seed004Commands reads testdata/seed004_commands.txt: name → command as
// printed in the seed.
func seed004Commands(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/seed004_commands.txt")
	if err != nil {
		t.Fatal(err)
	}
	cmds := map[string]string{}
	var name string
	var lines []string
	flush := func() {
		if name != "" {
			cmds[name] = strings.Join(lines, "\n")
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		switch {
		case strings.HasPrefix(l, "## "):
			flush()
			name, lines = strings.TrimPrefix(l, "## "), nil
		case strings.HasPrefix(l, "#"):
		default:
			lines = append(lines, l)
		}
	}
	flush()
	for _, n := range []string{"ticket", "summary", "open", "open-resolver", "transact", "aggregate"} {
		if cmds[n] == "" {
			t.Fatalf("testdata/seed004_commands.txt has no command %q", n)
		}
	}
	return cmds
}

// TestSeed004Verbatim: every command in testdata is in the seed document
// exactly as printed there.
func TestSeed004Verbatim(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join(seedDir, "004_fb34aaf36fef85d9.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for name, cmd := range seed004Commands(t) {
		if !bytes.Contains(seed, []byte(cmd+"\n")) {
			t.Errorf("command %s is not verbatim in the seed:\n%s", name, cmd)
		}
	}
}

// ticketData is testdata/seed004_data.json.
type ticketData struct {
	Items        []map[string]any       `json:"items"`
	Expect       map[string][][2]string `json:"expect"`
	ClosedStatus string                 `json:"closed_status"`
}

// loadTickets reads the data set with the seed's TENANT#1 replaced by
// prefix (e.g. TENANT#<tenant id>).
func loadTickets(t *testing.T, prefix string) ticketData {
	t.Helper()
	b, err := os.ReadFile("testdata/seed004_data.json")
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("TENANT#1"), []byte(prefix))
	var d ticketData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// createSupportTicket creates seed 004's table with the operator key:
// pk/sk strings and GSI1 on tenant_status (HASH) / resolver (RANGE),
// projecting ALL; tags choose the isolation mode.
func createSupportTicket(t *testing.T, srv *harness.Server, tags ...map[string]string) {
	t.Helper()
	op := rawClient{srv.Endpoint, srv.Operator}
	in := map[string]any{
		"TableName":   "SupportTicket",
		"BillingMode": "PAY_PER_REQUEST",
		"AttributeDefinitions": []map[string]string{
			{"AttributeName": "pk", "AttributeType": "S"}, {"AttributeName": "sk", "AttributeType": "S"},
			{"AttributeName": "tenant_status", "AttributeType": "S"}, {"AttributeName": "resolver", "AttributeType": "S"},
		},
		"KeySchema": []map[string]string{{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}},
		"GlobalSecondaryIndexes": []map[string]any{{
			"IndexName":  "GSI1",
			"KeySchema":  []map[string]string{{"AttributeName": "tenant_status", "KeyType": "HASH"}, {"AttributeName": "resolver", "KeyType": "RANGE"}},
			"Projection": map[string]string{"ProjectionType": "ALL"},
		}},
	}
	if len(tags) > 0 {
		in["Tags"] = tags
	}
	out := op.call(t, "CreateTable", in)
	if d, _ := out["TableDescription"].(map[string]any); d["TableStatus"] != "ACTIVE" {
		t.Fatalf("CreateTable SupportTicket: %v", out)
	}
}

// seedTickets writes items with one tenant's key.
func seedTickets(t *testing.T, c rawClient, its []map[string]any) {
	t.Helper()
	var reqs []any
	for _, it := range its {
		reqs = append(reqs, map[string]any{"PutRequest": map[string]any{"Item": it}})
	}
	for len(reqs) > 0 {
		n := min(len(reqs), 25)
		out := c.call(t, "BatchWriteItem", map[string]any{"RequestItems": map[string]any{"SupportTicket": reqs[:n]}})
		if u, _ := out["UnprocessedItems"].(map[string]any); len(u) > 0 {
			t.Fatalf("BatchWriteItem left %v", u)
		}
		reqs = reqs[n:]
	}
}

// ticketTenant is one tenant running the seed's commands: its profile,
// key, data set and key prefix.
type ticketTenant struct {
	profile string
	cred    harness.Credential
	prefix  string // TENANT#1, or TENANT#<id> on a leading-keys table
	data    ticketData
	byKey   map[[2]string]map[string]any
}

func newTicketTenant(t *testing.T, profile string, cred harness.Credential, prefix string) *ticketTenant {
	tt := &ticketTenant{profile: profile, cred: cred, prefix: prefix, data: loadTickets(t, prefix), byKey: map[[2]string]map[string]any{}}
	for _, it := range tt.data.Items {
		tt.byKey[[2]string{s(it, "pk"), s(it, "sk")}] = it
	}
	return tt
}

// cmd returns a seed command for tt: verbatim, with the seed's TENANT#1
// replaced by tt's prefix.
func (tt *ticketTenant) cmd(cmds map[string]string, name string) string {
	return strings.ReplaceAll(cmds[name], "TENANT#1", tt.prefix)
}

// checkItems compares the items a query returned with the expected keys,
// in order, and each item with the model in full. Items with equal GSI1
// keys may come in any order (DynamoDB does not define it); they are
// compared in table-key order.
func (tt *ticketTenant) checkItems(t *testing.T, what string, got []map[string]any, want [][2]string, gsi bool) {
	t.Helper()
	if gsi {
		sorted := slices.IsSortedFunc(got, func(a, b map[string]any) int { return strings.Compare(s(a, "resolver"), s(b, "resolver")) })
		if !sorted {
			t.Errorf("%s: items not in resolver order: %v", what, jsonString(got))
		}
		sort.SliceStable(got, func(i, j int) bool {
			a, b := got[i], got[j]
			if s(a, "resolver") != s(b, "resolver") {
				return s(a, "resolver") < s(b, "resolver")
			}
			return s(a, "pk")+"\x00"+s(a, "sk") < s(b, "pk")+"\x00"+s(b, "sk")
		})
	}
	var gotKeys [][2]string
	for _, it := range got {
		gotKeys = append(gotKeys, [2]string{s(it, "pk"), s(it, "sk")})
	}
	if !reflect.DeepEqual(gotKeys, want) && !(len(gotKeys) == 0 && len(want) == 0) {
		t.Errorf("%s: got keys %v, want %v", what, gotKeys, want)
		return
	}
	for _, it := range got {
		if m := tt.byKey[[2]string{s(it, "pk"), s(it, "sk")}]; !reflect.DeepEqual(it, m) {
			t.Errorf("%s: item\n%s\nwant\n%s", what, jsonString(it), jsonString(m))
		}
	}
}

// checkCapacity checks the ConsumedCapacity of a command run with
// --return-consumed-capacity TOTAL: the table, and units (at least units
// if atLeast).
func checkCapacity(t *testing.T, what string, cc any, units float64, atLeast bool) {
	t.Helper()
	m, ok := cc.(map[string]any)
	if !ok {
		if l, _ := cc.([]any); len(l) == 1 {
			m, ok = l[0].(map[string]any)
		}
	}
	got, _ := m["CapacityUnits"].(float64)
	if !ok || m["TableName"] != "SupportTicket" || got < units || !atLeast && got != units {
		t.Errorf("%s: ConsumedCapacity %v, want SupportTicket with %v units (at least: %v)", what, jsonString(cc), units, atLeast)
	}
}

// checkCount: a query read no more items than it returned (key
// conditions, no filters) and says so in Count and ScannedCount.
func checkCount(t *testing.T, what string, out map[string]any) {
	t.Helper()
	n := float64(len(items(out)))
	if out["Count"] != n || out["ScannedCount"] != n {
		t.Errorf("%s: Count %v, ScannedCount %v, want %v", what, out["Count"], out["ScannedCount"], n)
	}
}

// setStatus records in the model that ticket n's summary has status st.
func (tt *ticketTenant) setStatus(n, st string) {
	it := tt.byKey[[2]string{tt.prefix + "|TICKET#" + n, "SUMMARY"}]
	it["tenant_status"] = map[string]any{"S": st}
}

// statusCounts counts tt's ticket summaries in the model by status (the
// part of tenant_status after "|": OPEN, CLOSED).
func (tt *ticketTenant) statusCounts() map[string]int {
	n := map[string]int{}
	for k, it := range tt.byKey {
		if k[1] == "SUMMARY" {
			st := s(it, "tenant_status")
			n[st[strings.LastIndexByte(st, '|')+1:]]++
		}
	}
	return n
}

// aggregateKey is the key of tt's aggregate item for status.
func (tt *ticketTenant) aggregateKey(status string) [2]string {
	return [2]string{tt.prefix + "|AGGREGATE", "STATUS#" + status}
}

// aggregateName is the server-maintained aggregate of tt's tickets.
const aggregateName = "tickets-by-status"

// defineAggregate has the server maintain tt's AGGREGATE items (the
// seed's Lambda function on the table's stream): the operator defines,
// for tt's tenant, an aggregate counting ticket summaries by the status
// after the "|" of tenant_status, materialised as the seed's
// <prefix>|AGGREGATE / STATUS#<status> items with their "count". It is
// built from the items already there.
func (tt *ticketTenant) defineAggregate(t *testing.T, srv *harness.Server) {
	t.Helper()
	_, err := srv.Admin().CreateAggregate(context.Background(), tt.cred.TenantID, client.CreateAggregateRequest{
		Name: aggregateName, Table: "SupportTicket", GroupBy: "tenant_status", GroupAfter: "|", Count: true,
		Where: "sk = :s", Values: map[string]json.RawMessage{":s": json.RawMessage(`{"S": "SUMMARY"}`)},
		Item: map[string]string{"pk": tt.prefix + "|AGGREGATE", "sk": "STATUS#{group}"},
	})
	if err != nil {
		t.Fatalf("create the aggregate: %v", err)
	}
}

// awaitMaintained waits until the server's aggregate counts the model's
// tickets by status and its materialised items hold those counts, and
// records them in the model: nothing but the server keeps them.
func (tt *ticketTenant) awaitMaintained(t *testing.T, srv *harness.Server, c rawClient, what string) {
	t.Helper()
	counts := tt.statusCounts()
	want := map[string]int64{}
	for st, n := range counts {
		want[st] = int64(n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err := srv.Admin().Aggregate(context.Background(), tt.cred.TenantID, aggregateName)
		if err != nil {
			t.Fatalf("%s: show the aggregate: %v", what, err)
		}
		got := map[string]int64{}
		for g, v := range a.Groups {
			if v.Count != nil {
				got[g] = *v.Count
			}
		}
		ok := a.State == "ready" && reflect.DeepEqual(got, want)
		for st, n := range counts {
			k := tt.aggregateKey(st)
			it := c.call(t, "GetItem", map[string]any{"TableName": "SupportTicket", "ConsistentRead": true,
				"Key": map[string]any{"pk": map[string]any{"S": k[0]}, "sk": map[string]any{"S": k[1]}}})
			m, _ := it["Item"].(map[string]any)
			if m == nil || num(m, "count") != strconv.Itoa(n) {
				ok = false
			}
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the server's aggregate is %v (state %s, error %q), want the tickets' %v", what, got, a.State, a.Error, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for st, n := range counts {
		tt.byKey[tt.aggregateKey(st)]["count"] = map[string]any{"N": strconv.Itoa(n)}
	}
}

// checkAggregates runs the seed's aggregate query and checks that it
// returns tt's aggregate items as the model has them, and that these
// count the tickets the model has: an aggregate that disagrees with the
// tickets is never accepted.
func (tt *ticketTenant) checkAggregates(t *testing.T, e *awsEnv, cmds map[string]string, what string) {
	t.Helper()
	counts := tt.statusCounts()
	var want [][2]string
	for _, st := range []string{"CLOSED", "OPEN"} {
		k := tt.aggregateKey(st)
		want = append(want, k)
		if got := num(tt.byKey[k], "count"); got != strconv.Itoa(counts[st]) {
			t.Fatalf("%s: the model's aggregate %s is %s, but it has %d such tickets", what, st, got, counts[st])
		}
	}
	out := e.mustShell(t, tt.profile, tt.cmd(cmds, "aggregate"))
	tt.checkItems(t, what, items(out), want, false)
	checkCapacity(t, what, out["ConsumedCapacity"], 0.5, false)
	checkCount(t, what, out)
}

// queryGSI1 returns the items of GSI1 partition status, read with tt's key.
func (tt *ticketTenant) queryGSI1(t *testing.T, c rawClient, status string) []map[string]any {
	t.Helper()
	return items(c.call(t, "Query", map[string]any{
		"TableName": "SupportTicket", "IndexName": "GSI1",
		"KeyConditionExpression":    "tenant_status = :s",
		"ExpressionAttributeValues": map[string]any{":s": map[string]any{"S": status}},
	}))
}

// runSeed004 runs the seed's commands in its order as tenant tt, checking
// each against the model. With leadingKeys, the seed's verbatim
// transaction (whose new GSI1 key " TENANT#...|CLOSED" starts with a
// space, outside the table's TENANT#{tenant}|* pattern) must be refused,
// and the same transaction without the stray space must succeed.
func runSeed004(t *testing.T, e *awsEnv, cmds map[string]string, tt *ticketTenant, leadingKeys bool) {
	c := rawClient{e.srv.Endpoint, tt.cred}
	ex := tt.data.Expect

	// "get a single ticket and all comments"
	out := e.mustShell(t, tt.profile, tt.cmd(cmds, "ticket"))
	tt.checkItems(t, "ticket", items(out), ex["ticket"], false)
	checkCapacity(t, "ticket", out["ConsumedCapacity"], 0.5, false)
	checkCount(t, "ticket", out)
	// "view a single ticket summary"
	out = e.mustShell(t, tt.profile, tt.cmd(cmds, "summary"))
	tt.checkItems(t, "summary", items(out), ex["summary"], false)
	checkCapacity(t, "summary", out["ConsumedCapacity"], 0.5, false)
	checkCount(t, "summary", out)
	// "get all open tickets"
	out = e.mustShell(t, tt.profile, tt.cmd(cmds, "open"))
	tt.checkItems(t, "open", items(out), ex["open"], true)
	checkCapacity(t, "open", out["ConsumedCapacity"], 0.5, false)
	checkCount(t, "open", out)
	// "view all open tickets for a given resolver"
	out = e.mustShell(t, tt.profile, tt.cmd(cmds, "open-resolver"))
	tt.checkItems(t, "open-resolver", items(out), ex["open-resolver"], true)
	checkCapacity(t, "open-resolver", out["ConsumedCapacity"], 0.5, false)
	checkCount(t, "open-resolver", out)
	// "view an aggregate of the tickets by status", before any change:
	// the data set's aggregates count its tickets, and so does the
	// server's aggregate defined now, which takes the items over.
	tt.checkAggregates(t, e, cmds, "aggregate before the transaction")
	// NB: the remote backend maintains no aggregates yet (they follow the
	// embedded engine's change log): there the seed's own aggregate items
	// stay as loaded, and the model with them.
	aggregates := !e.srv.Remote
	if aggregates {
		tt.defineAggregate(t, e.srv)
		tt.awaitMaintained(t, e.srv, c, "aggregate defined")
		tt.checkAggregates(t, e, cmds, "aggregate defined")
	} else {
		t.Log("over the remote backend: no server-maintained aggregate (not served there yet)")
	}

	// "change the status of multiple tickets atomically"
	transact := tt.cmd(cmds, "transact")
	closed := tt.data.ClosedStatus // " TENANT#...|CLOSED", as printed
	closedKeys := ex["closed-after-transact"]
	if leadingKeys {
		r := e.shell(t, tt.profile, transact)
		if r.code == 0 || !strings.Contains(r.stderr, "AccessDeniedException") {
			t.Errorf("verbatim transaction with GSI1 key %q on a leading-keys table: exit %d, stderr %q; want AccessDeniedException", closed, r.code, r.stderr)
		}
		tt.checkItems(t, "open after the refused transaction", tt.queryGSI1(t, c, tt.prefix+"|OPEN"), ex["open"], true)
		transact = strings.ReplaceAll(transact, `" `+tt.prefix+`|CLOSED"`, `"`+tt.prefix+`|CLOSED"`)
		closed = strings.TrimSpace(closed)
		closedKeys = ex["closed-after-corrected-transact"]
	}
	// A failing variant first: ticket 1 and a ticket 9 that does not
	// exist, each required to exist. Neither changes.
	failing := strings.ReplaceAll(transact, `"UpdateExpression"`, `"ConditionExpression": "attribute_exists(pk)", "UpdateExpression"`)
	failing = strings.ReplaceAll(failing, tt.prefix+"|TICKET#2", tt.prefix+"|TICKET#9")
	r := e.shell(t, tt.profile, failing)
	if r.code == 0 || !strings.Contains(r.stderr, "TransactionCanceledException") || !strings.Contains(r.stderr, "[None, ConditionalCheckFailed]") {
		t.Errorf("failing transaction: exit %d, stderr %q; want TransactionCanceledException [None, ConditionalCheckFailed]", r.code, r.stderr)
	}
	tt.checkItems(t, "open after the failed transaction", tt.queryGSI1(t, c, tt.prefix+"|OPEN"), ex["open"], true)
	if out := c.call(t, "GetItem", map[string]any{"TableName": "SupportTicket", "Key": map[string]any{
		"pk": map[string]any{"S": tt.prefix + "|TICKET#9"}, "sk": map[string]any{"S": "SUMMARY"}}}); out["Item"] != nil {
		t.Errorf("the failed transaction created ticket 9: %v", out["Item"])
	}
	// The seed's transaction: both tickets change. (Queries above read
	// under 4 KB eventually consistently: half a unit.) The table alone
	// charges 2 WCU per transactional write of an item under 1 KB; GSI1
	// writes (its key changes) come on top.
	out = e.mustShell(t, tt.profile, transact)
	checkCapacity(t, "transact", out["ConsumedCapacity"], 4, true)
	tt.setStatus("1", closed)
	tt.setStatus("2", closed)
	tt.checkItems(t, "open after the transaction", tt.queryGSI1(t, c, tt.prefix+"|OPEN"), ex["open-after-transact"], true)
	tt.checkItems(t, "closed after the transaction", tt.queryGSI1(t, c, closed), closedKeys, true)

	// The seed keeps the aggregates from the table's stream (a Lambda
	// function); here the server maintains them from the change log. The
	// refused and failed transactions changed nothing; the seed's closes
	// two tickets: the seed's query shows the tickets as they now are.
	if aggregates {
		tt.awaitMaintained(t, e.srv, c, "aggregate after the transaction")
		if n := num(tt.byKey[tt.aggregateKey("CLOSED")], "count"); n != "3" {
			t.Errorf("CLOSED tickets after the transaction: %s, want 3", n)
		}
		tt.checkAggregates(t, e, cmds, "aggregate after the transaction")
	}

	// Whatever else is in the table, the tenant's whole view is its own.
	var its []map[string]any
	for _, it := range items(c.call(t, "Scan", map[string]any{"TableName": "SupportTicket"})) {
		its = append(its, it)
		if m := tt.byKey[[2]string{s(it, "pk"), s(it, "sk")}]; !reflect.DeepEqual(it, m) {
			t.Errorf("Scan returned %s, want %s", jsonString(it), jsonString(m))
		}
	}
	if len(its) != len(tt.byKey) {
		t.Errorf("Scan returned %d items, want the tenant's %d", len(its), len(tt.byKey))
	}
}

// TestSeed004CLI runs seed 004's commands verbatim with the AWS CLI and a
// tenant key in a credentials profile: (a) on a namespace table, exactly
// as printed (TENANT#1), while another tenant holds items under the same
// keys; (b) for two tenants on one leading-keys table with their own
// TENANT#<id>| prefixes, each seeing only its tickets and refused the
// other's prefix.
func TestSeed004CLI(t *testing.T) {
	needAWSCLI(t)
	t.Parallel()
	cmds := seed004Commands(t)

	t.Run("namespace", func(t *testing.T) {
		t.Parallel()
		srv := harness.Start(t)
		createSupportTicket(t, srv)
		one := newTicketTenant(t, "tenant-1", srv.NewTenant(t, "acme", "app"), "TENANT#1")
		other := newTicketTenant(t, "other", srv.NewTenant(t, "globex", "app"), "TENANT#1")
		// The other tenant: the same keys, other titles, one more open
		// ticket of johnd.
		for _, it := range other.data.Items {
			if _, ok := it["title"]; ok {
				it["title"] = map[string]any{"S": "globex: " + s(it, "title")}
			}
		}
		other.data.Items = append(other.data.Items, map[string]any{
			"pk": map[string]any{"S": "TENANT#1|TICKET#5"}, "sk": map[string]any{"S": "SUMMARY"},
			"tenant_status": map[string]any{"S": "TENANT#1|OPEN"}, "resolver": map[string]any{"S": "johnd"},
			"title": map[string]any{"S": "globex: VPN down"},
		})
		seedTickets(t, rawClient{srv.Endpoint, other.cred}, other.data.Items)
		seedTickets(t, rawClient{srv.Endpoint, one.cred}, one.data.Items)
		e := newAWSEnv(t, srv, map[string]harness.Credential{one.profile: one.cred, other.profile: other.cred})
		runSeed004(t, e, cmds, one, false)

		// The other tenant's tickets are untouched by tenant 1's
		// transaction and still all open.
		c := rawClient{srv.Endpoint, other.cred}
		got := other.queryGSI1(t, c, "TENANT#1|OPEN")
		for _, it := range got {
			if !strings.HasPrefix(s(it, "title"), "globex: ") {
				t.Errorf("the other tenant sees %s", jsonString(it))
			}
		}
		if len(got) != 4 {
			t.Errorf("the other tenant has %d open tickets, want 4: %s", len(got), jsonString(got))
		}
	})

	t.Run("leading-keys", func(t *testing.T) {
		t.Parallel()
		srv := harness.Start(t)
		createSupportTicket(t, srv,
			map[string]string{"Key": "tenantdb:isolation", "Value": "leading-keys"},
			map[string]string{"Key": "tenantdb:leading-key-pattern", "Value": "TENANT#{tenant}|*"})
		ca, cb := srv.NewTenant(t, "acme", "app"), srv.NewTenant(t, "globex", "app")
		a := newTicketTenant(t, "tenant-a", ca, "TENANT#"+ca.TenantID)
		b := newTicketTenant(t, "tenant-b", cb, "TENANT#"+cb.TenantID)
		seedTickets(t, rawClient{srv.Endpoint, a.cred}, a.data.Items)
		seedTickets(t, rawClient{srv.Endpoint, b.cred}, b.data.Items)
		e := newAWSEnv(t, srv, map[string]harness.Credential{a.profile: a.cred, b.profile: b.cred})

		// Tenant A with tenant B's prefix: refused, as IAM's LeadingKeys
		// would, for reads, index queries and the transaction; B's tickets
		// do not change.
		for _, name := range []string{"ticket", "open", "transact"} {
			cmd := b.cmd(cmds, name)
			if name == "transact" {
				cmd = strings.ReplaceAll(cmd, `" `+b.prefix, `"`+b.prefix)
			}
			r := e.shell(t, a.profile, cmd)
			if r.code == 0 || !strings.Contains(r.stderr, "AccessDeniedException") {
				t.Errorf("tenant A running %s with tenant B's prefix: exit %d, stdout %v, stderr %q; want AccessDeniedException", name, r.code, r.out, r.stderr)
			}
		}
		b.checkItems(t, "B's open tickets after A's attempts", b.queryGSI1(t, rawClient{srv.Endpoint, b.cred}, b.prefix+"|OPEN"), b.data.Expect["open"], true)

		// Each tenant then runs the seed's commands on its own prefix, at
		// the same time as the other.
		for _, tt := range []*ticketTenant{a, b} {
			t.Run(tt.profile, func(t *testing.T) {
				t.Parallel()
				runSeed004(t, e, cmds, tt, true)
			})
		}
	})
}
