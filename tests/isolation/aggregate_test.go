package isolation

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
)

// aggregateAttacks: aggregates are per tenant environment. Every tenant
// environment defines an aggregate of the same name on each shared table,
// grouped by the item's secret (so a group of another tenant would carry
// that tenant's secret, which the recorders catch): each counts exactly
// its own items. A's admin key cannot list, show, delete or rebuild B's
// aggregates, neither through B's path nor by naming them on its own; A
// cannot define one on B's own table; B's test environment sees none of
// B's live aggregates; errors say nothing about what exists elsewhere.
func (w *world) aggregateAttacks(t *testing.T) {
	if !w.routeExists(t, "GET", "/v1/tenants/"+w.A.id+"/aggregates") {
		t.Skip("this server maintains no aggregates")
	}
	A, B, Bt := w.A, w.B, w.Btest
	send := func(t *testing.T, tn *tenant, method, path, body string) (int, string) {
		t.Helper()
		return w.raw(t, tn.rec, method, path, tn.admin.Key, body)
	}
	create := func(t *testing.T, tn *tenant, name, table string) {
		t.Helper()
		body := fmt.Sprintf(`{"name":%q,"table":%q,"group_by":"secret","count":true,"sum":["n"]}`, name, table)
		if st, got := send(t, tn, "POST", "/v1/tenants/"+tn.id+"/aggregates", body); st != http.StatusCreated {
			t.Fatalf("%s creates %s on %s: %d %s", tn.label, name, table, st, got)
		}
	}
	shared := []string{tblNS, tblSilo, tblLK}
	for _, tn := range []*tenant{A, B, Bt} {
		for _, tb := range shared {
			create(t, tn, "agg-"+tb, tb)
		}
	}
	create(t, B, "b-only", tblBOnly)

	// count returns what tn's own Scan counts of table.
	count := func(t *testing.T, tn *tenant, table string) int {
		t.Helper()
		n := 0
		var start map[string]types.AttributeValue
		for {
			out, err := tn.App.Scan(w.ctx, &dynamodb.ScanInput{TableName: aws.String(table), Select: types.SelectCount, ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatalf("%s scans %s: %v", tn.label, table, err)
			}
			n += int(out.Count)
			if start = out.LastEvaluatedKey; start == nil {
				return n
			}
		}
	}
	show := func(t *testing.T, tn *tenant, name string) client.Aggregate {
		t.Helper()
		st, got := send(t, tn, "GET", "/v1/tenants/"+tn.id+"/aggregates/"+name, "")
		if st != http.StatusOK {
			t.Fatalf("%s shows %s: %d %s", tn.label, name, st, got)
		}
		var a client.Aggregate
		if err := json.Unmarshal([]byte(got), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	// Each counts exactly its own items: one group, its own secret, as
	// many as its own Scan sees (all items hold the secret; the where
	// clause is absent, so nothing else could be counted but others').
	own := func(t *testing.T, tn *tenant, name, table string) {
		t.Helper()
		want := count(t, tn, table)
		deadline := time.Now().Add(30 * time.Second)
		for {
			a := show(t, tn, name)
			g, ok := a.Groups[tn.secret]
			if a.State == "ready" && len(a.Groups) == 1 && ok && g.Count != nil && *g.Count == int64(want) && g.Sum["n"] == fmt.Sprint(want) {
				return
			}
			if len(a.Groups) > 1 || (len(a.Groups) == 1 && !ok) {
				t.Fatalf("LEAK: %s's aggregate %s on %s counts other groups: %+v", tn.label, name, table, a.Groups)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's aggregate %s on %s: %+v (state %s, error %q), want %d of its own", tn.label, name, table, a.Groups, a.State, a.Error, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	w.attack(t, "each-counts-its-own", func(t *testing.T) {
		for _, tn := range []*tenant{A, B, Bt} {
			for _, tb := range shared {
				own(t, tn, "agg-"+tb, tb)
			}
		}
		own(t, B, "b-only", tblBOnly)
	})

	// A writes to the shared table now; B's aggregate does not move.
	w.attack(t, "a-writes-b-unmoved", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			it := makeItem(A, tblNS, 9, fmt.Sprintf("AGG%d", i), 0)
			if _, err := A.App.PutItem(w.ctx, &dynamodb.PutItemInput{TableName: aws.String(tblNS), Item: it}); err != nil {
				t.Fatal(err)
			}
			A.items[tblNS][keyStr(it)] = it
		}
		own(t, A, "agg-"+tblNS, tblNS)
		own(t, B, "agg-"+tblNS, tblNS)
		own(t, Bt, "agg-"+tblNS, tblNS)
	})

	// A's admin key on B's aggregates: through B's path (by id and by
	// slug), the answer of a tenant that does not exist; through its own
	// path, B's names are not found exactly as names nobody uses.
	w.attack(t, "a-on-b-aggregates", func(t *testing.T) {
		nobody := randHex(16)
		routes := []struct{ method, suffix, body string }{
			{"GET", "/aggregates", ""},
			{"GET", "/aggregates/b-only", ""},
			{"DELETE", "/aggregates/b-only", ""},
			{"POST", "/aggregates/b-only/rebuild", ""},
			{"POST", "/aggregates", `{"name":"x","table":"iso_ns","group_by":"secret","count":true}`},
		}
		for _, r := range routes {
			stV, gotV := send(t, A, r.method, "/v1/tenants/"+B.id+r.suffix, r.body)
			stN, gotN := send(t, A, r.method, "/v1/tenants/"+nobody+r.suffix, r.body)
			if stV != http.StatusNotFound || stV != stN || strings.ReplaceAll(gotV, B.id, "<T>") != strings.ReplaceAll(gotN, nobody, "<T>") {
				t.Errorf("LEAK: A %s B%s: %d %s; for no tenant %d %s", r.method, r.suffix, stV, gotV, stN, gotN)
			}
		}
		for _, r := range routes[1:4] {
			stV, gotV := send(t, A, r.method, "/v1/tenants/"+A.id+r.suffix, r.body)
			other := strings.Replace(r.suffix, "b-only", "never-"+randHex(4), 1)
			stN, gotN := send(t, A, r.method, "/v1/tenants/"+A.id+other, r.body)
			norm := func(s string) string {
				s = strings.ReplaceAll(s, "b-only", "<N>")
				return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '"' }), "")
			}
			if stV != http.StatusNotFound || stV != stN || norm(gotV) != strings.ReplaceAll(norm(gotN), other[len("/aggregates/"):len("/aggregates/")+len("never-")+8], "<N>") {
				t.Errorf("LEAK: A %s own%s: %d %s; a name nobody uses %d %s", r.method, r.suffix, stV, gotV, stN, gotN)
			}
		}
		// Listing shows A's own only.
		st, got := send(t, A, "GET", "/v1/tenants/"+A.id+"/aggregates", "")
		var list client.AggregateList
		if err := json.Unmarshal([]byte(got), &list); st != http.StatusOK || err != nil || len(list.Aggregates) != len(shared) {
			t.Errorf("A's list: %d %s", st, got)
		}
		// A defines an aggregate on B's own table: not found, exactly as a
		// table that never existed.
		stV, gotV := send(t, A, "POST", "/v1/tenants/"+A.id+"/aggregates", `{"name":"steal","table":"`+tblBOnly+`","group_by":"secret","count":true}`)
		stN, gotN := send(t, A, "POST", "/v1/tenants/"+A.id+"/aggregates", `{"name":"steal","table":"`+w.never+`","group_by":"secret","count":true}`)
		if stV != http.StatusBadRequest && stV != http.StatusNotFound || stV != stN || strings.ReplaceAll(gotV, tblBOnly, "<T>") != strings.ReplaceAll(gotN, w.never, "<T>") {
			t.Errorf("LEAK: A's aggregate on B's own table: %d %s; on a table that never existed: %d %s", stV, gotV, stN, gotN)
		}
	})

	// B's test environment shares B's tenant but not its live data.
	w.attack(t, "btest-on-b-live", func(t *testing.T) {
		st, got := send(t, Bt, "GET", "/v1/tenants/"+B.id+"/aggregates/b-only", "")
		if st != http.StatusNotFound {
			t.Errorf("LEAK: B's test admin shows B's live aggregate: %d %s", st, got)
		}
		st, got = send(t, Bt, "GET", "/v1/tenants/"+B.id+"/aggregates", "")
		if st != http.StatusOK || strings.Contains(got, "b-only") {
			t.Errorf("LEAK: B's test admin lists B's live aggregates: %d %s", st, got)
		}
		for _, m := range []struct{ method, suffix string }{{"DELETE", "/aggregates/b-only"}, {"POST", "/aggregates/b-only/rebuild"}} {
			if st, got := send(t, Bt, m.method, "/v1/tenants/"+B.id+m.suffix, ""); st != http.StatusNotFound {
				t.Errorf("LEAK: B's test admin %s %s: %d %s", m.method, m.suffix, st, got)
			}
		}
	})

	// App and read keys of B itself may not use the aggregate API.
	w.attack(t, "b-app-read-keys", func(t *testing.T) {
		for _, k := range []string{B.app.Key, B.read.Key} {
			if st, got := w.raw(t, B.rec, "GET", "/v1/tenants/"+B.id+"/aggregates/b-only", k, ""); st != http.StatusForbidden {
				t.Errorf("a non-admin key shows an aggregate: %d %s", st, got)
			}
		}
	})

	// The operator's aggregate for every tenant of a shared table: each
	// tenant environment's copy counts its own items only, and a tenant
	// cannot delete its copy.
	w.attack(t, "every-tenant-aggregate", func(t *testing.T) {
		body := `{"name":"fleet-ns","table":"` + tblNS + `","group_by":"secret","count":true,"sum":["n"]}`
		st, got := w.raw(t, w.opRec, "POST", "/v1/aggregates", w.srv.Operator.Key, body)
		if st == http.StatusBadRequest && strings.Contains(got, "not available on a gateway") {
			t.Skip("remote backend: aggregates for every tenant are not served there (README)")
		}
		if st != http.StatusCreated {
			t.Fatalf("operator defines an aggregate for every tenant: %d %s", st, got)
		}
		for _, tn := range []*tenant{A, B, Bt} {
			deadline := time.Now().Add(20 * time.Second)
			for {
				if st, _ := send(t, tn, "GET", "/v1/tenants/"+tn.id+"/aggregates/fleet-ns", ""); st == http.StatusOK {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s got no copy of the every-tenant aggregate", tn.label)
				}
				time.Sleep(20 * time.Millisecond)
			}
			own(t, tn, "fleet-ns", tblNS)
		}
		if st, got := send(t, A, "DELETE", "/v1/tenants/"+A.id+"/aggregates/fleet-ns", ""); st != http.StatusForbidden {
			t.Errorf("A deletes its copy of the operator's aggregate: %d %s", st, got)
		}
		if st, got := w.raw(t, w.opRec, "DELETE", "/v1/aggregates/fleet-ns", w.srv.Operator.Key, ""); st != http.StatusNoContent {
			t.Errorf("operator deletes the every-tenant aggregate: %d %s", st, got)
		}
	})

	// B's aggregates survived it all.
	own(t, B, "b-only", tblBOnly)
}
