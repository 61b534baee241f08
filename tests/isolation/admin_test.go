package isolation

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
)

// adminCall is one request to the admin API; %s in path is the tenant.
type adminCall struct {
	method, path, body string
	route              string // the audited action, "admin:METHOD /v1/pattern"
}

// raw sends an admin API request with bearer through rec and returns the
// status and body.
func (w *world) raw(t *testing.T, rec *recorder, method, path, bearer, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(w.ctx, method, w.srv.Endpoint+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := (&http.Client{Transport: rec}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

// routeExists reports whether the server serves a route (the operator
// gets something other than "no such admin endpoint").
func (w *world) routeExists(t *testing.T, method, path string) bool {
	t.Helper()
	st, body := w.raw(t, w.opRec, method, path, w.srv.Operator.Key, "")
	return !(st == http.StatusNotFound && strings.Contains(body, "no such admin endpoint"))
}

// adminAttacks attacks the admin API: tenant A's keys on tenant B's
// endpoints, A's app and read keys on A's own, and A's admin key on B's
// keys through A's own endpoints.
func (w *world) adminAttacks(t *testing.T) {
	A, B := w.A, w.B
	nobody := randHex(16)
	bKey := B.app.AccessKeyID
	calls := []adminCall{
		{"GET", "/v1/tenants/%s", "", "GET /v1/tenants/{tenant}"},
		{"GET", "/v1/tenants/%s/keys", "", "GET /v1/tenants/{tenant}/keys"},
		{"POST", "/v1/tenants/%s/keys", `{"role":"admin"}`, "POST /v1/tenants/{tenant}/keys"},
		{"GET", "/v1/tenants/%s/keys/" + bKey, "", "GET /v1/tenants/{tenant}/keys/{key}"},
		{"DELETE", "/v1/tenants/%s/keys/" + bKey, "", "DELETE /v1/tenants/{tenant}/keys/{key}"},
		{"POST", "/v1/tenants/%s/keys/" + bKey + "/rotate", "", "POST /v1/tenants/{tenant}/keys/{key}/rotate"},
		{"POST", "/v1/tenants/%s/sessions", `{"role":"app"}`, "POST /v1/tenants/{tenant}/sessions"},
		{"POST", "/v1/tenants/%s/sessions", `{"role":"admin","env":"test"}`, "POST /v1/tenants/{tenant}/sessions"},
		{"GET", "/v1/tenants/%s/audit", "", "GET /v1/tenants/{tenant}/audit"},
		{"GET", "/v1/tenants/%s/audit/verify", "", "GET /v1/tenants/{tenant}/audit/verify"},
		{"POST", "/v1/tenants/%s/invites", `{}`, "POST /v1/tenants/{tenant}/invites"},
		{"GET", "/v1/tenants/%s/usage", "", "GET /v1/tenants/{tenant}/usage"},
		{"GET", "/v1/tenants/%s/quota", "", "GET /v1/tenants/{tenant}/quota"},
		{"PUT", "/v1/tenants/%s/quota", `{"read_units":1}`, "PUT /v1/tenants/{tenant}/quota"},
		{"POST", "/v1/tenants/%s/suspend", "", "POST /v1/tenants/{tenant}/suspend"},
		{"POST", "/v1/tenants/%s/resume", "", "POST /v1/tenants/{tenant}/resume"},
		{"DELETE", "/v1/tenants/%s", "", "DELETE /v1/tenants/{tenant}"},
		{"POST", "/v1/tenants/%s/members", `{"sub":"attacker"}`, "POST /v1/tenants/{tenant}/members"},
	}
	norm := func(s string) string {
		for _, r := range []string{B.id, nobody, strings.ToUpper(B.id), strings.ToUpper(nobody), uuid(B.id), uuid(nobody)} {
			s = strings.ReplaceAll(s, r, "<ID>")
		}
		return s
	}

	for _, who := range []struct {
		label string
		key   string
		actor string
	}{{"A-admin", A.admin.Key, A.admin.AccessKeyID}, {"A-app", A.app.Key, A.app.AccessKeyID}, {"A-read", A.read.Key, A.read.AccessKeyID}} {
		w.attack(t, who.label+"-on-B-endpoints", func(t *testing.T) {
			for _, c := range calls {
				exists := w.routeExists(t, c.method, strings.ReplaceAll(c.path, "%s", nobody))
				for _, form := range []func(string) string{
					func(id string) string { return id }, strings.ToUpper, uuid,
				} {
					since := w.auditTail(t, A.id)
					pathB := strings.ReplaceAll(c.path, "%s", form(B.id))
					stB, bodyB := w.raw(t, A.rec, c.method, pathB, who.key, c.body)
					stN, bodyN := w.raw(t, A.rec, c.method, strings.ReplaceAll(c.path, "%s", form(nobody)), who.key, c.body)
					if stB < 400 {
						t.Errorf("LEAK: %s %s as %s: HTTP %d %s", c.method, pathB, who.label, stB, bodyB)
						continue
					}
					if stB != stN || norm(bodyB) != norm(bodyN) {
						t.Errorf("LEAK: %s %s as %s answers %d %s; for a tenant that does not exist %d %s",
							c.method, c.path, who.label, stB, bodyB, stN, bodyN)
					}
					if !exists {
						w.note("route %s %s is not served by this server; its refusals cannot be audited", c.method, c.path)
						continue
					}
					w.wantAudited(t, A.id, since, who.actor, "admin:"+c.route)
				}
			}
			w.bKeysIntact(t)
		})
	}

	w.attack(t, "A-admin-on-B-key-through-own-path", func(t *testing.T) {
		other := strings.Replace(bKey, B.id, nobody, 1)
		for _, c := range []adminCall{
			{"GET", "/v1/tenants/" + A.id + "/keys/%s", "", ""},
			{"DELETE", "/v1/tenants/" + A.id + "/keys/%s", "", ""},
			{"POST", "/v1/tenants/" + A.id + "/keys/%s/rotate", "", ""},
		} {
			stB, bodyB := w.raw(t, A.rec, c.method, strings.ReplaceAll(c.path, "%s", bKey), A.admin.Key, "")
			stN, bodyN := w.raw(t, A.rec, c.method, strings.ReplaceAll(c.path, "%s", other), A.admin.Key, "")
			if stB < 400 || stB != stN || norm(bodyB) != norm(bodyN) {
				t.Errorf("LEAK: %s with B's key id: %d %s; with a never-issued one: %d %s", c.method, stB, bodyB, stN, bodyN)
			}
		}
		st, body := w.raw(t, A.rec, "GET", "/v1/tenants/"+A.id+"/keys", A.admin.Key, "")
		if st != 200 || strings.Contains(body, B.id) {
			t.Errorf("LEAK: A's key list: %d %s", st, body)
		}
		w.bKeysIntact(t)
	})

	w.attack(t, "path-tricks", func(t *testing.T) {
		for _, p := range []string{
			"/v1/tenants/" + A.id + "/../" + B.id + "/keys",
			"/v1/tenants/" + A.id + "%2F..%2F" + B.id + "/keys",
			"/v1/tenants/" + B.id + "%00/keys",
			"/v1/tenants/" + A.id + "/keys/../../" + B.id + "/audit",
			"//v1/tenants/" + B.id + "/keys",
			"/v1/tenants/" + B.id + "/keys?tenant=" + A.id,
			"/v1/tenants/" + A.id + "/keys?tenant=" + B.id,
		} {
			st, body := w.raw(t, A.rec, "GET", p, A.admin.Key, "")
			if st < 300 && strings.Contains(body, B.id) {
				t.Errorf("LEAK: GET %s: %d %s", p, st, body)
			}
		}
		w.bKeysIntact(t)
	})

	w.attack(t, "usage-per-tenant", func(t *testing.T) {
		path := "/v1/tenants/" + A.id + "/usage"
		if !w.routeExists(t, "GET", path) {
			w.note("usage-per-tenant: GET /v1/tenants/{id}/usage is not served by this server")
			return
		}
		type usage struct {
			StorageBytes int64 `json:"storage_bytes"`
			Items        int64 `json:"items"`
			Storage      []struct {
				Table string `json:"table"`
				Env   string `json:"env"`
				Items int64  `json:"items"`
			} `json:"storage"`
		}
		get := func() usage {
			var u usage
			if err := (&client.Client{Endpoint: w.srv.Endpoint, Key: A.admin.Key, HTTP: &http.Client{Transport: A.rec}}).Do(w.ctx, "GET", path, nil, &u); err != nil {
				t.Fatalf("A's usage: %v", err)
			}
			return u
		}
		before := get()
		var reqs []types.WriteRequest
		for i := 0; i < 10; i++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: makeItem(B, tblNS, 8, fmt.Sprintf("U%d", i), 2<<10)}})
		}
		if _, err := B.App.BatchWriteItem(w.ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tblNS: reqs}}); err != nil {
			t.Fatal(err)
		}
		after := get()
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("LEAK: A's usage moved when B wrote: %+v -> %+v", before, after)
		}
		for _, s := range after.Storage {
			if s.Table == tblBOnly {
				t.Errorf("LEAK: A's usage lists B's table %s", tblBOnly)
			}
		}
		for i := range reqs {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(reqs[i].PutRequest.Item)}}
		}
		if _, err := B.App.BatchWriteItem(w.ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tblNS: reqs}}); err != nil {
			t.Fatal(err)
		}
	})

	w.attack(t, "body-tricks", func(t *testing.T) {
		// The tenant comes from the path and the credential only; extra
		// members naming B are refused or ignored.
		for _, c := range []adminCall{
			{"POST", "/v1/tenants/" + A.id + "/keys", `{"role":"admin","tenant_id":"` + B.id + `"}`, ""},
			{"POST", "/v1/tenants/" + A.id + "/keys", `{"role":"admin","env":"live","TenantID":"` + B.id + `"}`, ""},
			{"POST", "/v1/tenants/" + A.id + "/sessions", `{"role":"admin","tenant_id":"` + B.id + `"}`, ""},
			{"POST", "/v1/tenants/" + A.id + "/sessions", `{"role":"operator"}`, ""},
			{"POST", "/v1/tenants/" + A.id + "/keys", `{"role":"operator"}`, ""},
			{"POST", "/v1/tenants/" + A.id + "/keys", `{"role":"admin","env":"op"}`, ""},
		} {
			st, body := w.raw(t, A.rec, c.method, c.path, A.admin.Key, c.body)
			if st < 300 && (strings.Contains(body, B.id) || strings.Contains(body, `"role":"operator"`) || !strings.Contains(body, A.id)) {
				t.Errorf("LEAK: %s %s %s: %d %s", c.method, c.path, c.body, st, body)
			}
		}
		w.bKeysIntact(t)
	})

	w.attack(t, "operator-only-lists", func(t *testing.T) {
		for _, c := range []adminCall{
			{"GET", "/v1/tenants", "", "GET /v1/tenants"},
			{"POST", "/v1/tenants", `{"name":"evil"}`, "POST /v1/tenants"},
			{"GET", "/v1/audit", "", "GET /v1/audit"},
			{"GET", "/v1/audit/verify", "", "GET /v1/audit/verify"},
		} {
			since := w.auditTail(t, A.id)
			st, body := w.raw(t, A.rec, c.method, c.path, A.admin.Key, c.body)
			if st != http.StatusForbidden {
				t.Errorf("%s %s as A's admin: %d %s, want 403", c.method, c.path, st, body)
			}
			w.wantAudited(t, A.id, since, A.admin.AccessKeyID, "admin:"+c.route)
		}
	})

	w.attack(t, "test-env-admin-on-live-keys", func(t *testing.T) {
		T := w.Btest
		st, body := w.raw(t, T.rec, "GET", "/v1/tenants/"+B.id+"/keys", T.admin.Key, "")
		if st != 200 {
			t.Fatalf("test admin listing its keys: %d %s", st, body)
		}
		for _, live := range []string{B.admin.AccessKeyID, B.app.AccessKeyID, B.read.AccessKeyID} {
			if strings.Contains(body, live) {
				t.Errorf("LEAK: B's test admin key lists live key %s", live)
			}
		}
		for _, c := range []adminCall{
			{"POST", "/v1/tenants/%s/keys", `{"role":"admin","env":"live"}`, "POST /v1/tenants/{tenant}/keys"},
			{"POST", "/v1/tenants/%s/sessions", `{"role":"admin","env":"live"}`, "POST /v1/tenants/{tenant}/sessions"},
			{"GET", "/v1/tenants/%s/keys/" + B.app.AccessKeyID, "", "GET /v1/tenants/{tenant}/keys/{key}"},
			{"DELETE", "/v1/tenants/%s/keys/" + B.app.AccessKeyID, "", "DELETE /v1/tenants/{tenant}/keys/{key}"},
			{"POST", "/v1/tenants/%s/keys/" + B.app.AccessKeyID + "/rotate", "", "POST /v1/tenants/{tenant}/keys/{key}/rotate"},
		} {
			since := w.auditTail(t, B.id)
			st, body := w.raw(t, T.rec, c.method, strings.ReplaceAll(c.path, "%s", B.id), T.admin.Key, c.body)
			if st < 400 {
				t.Errorf("LEAK: %s %s with B's test admin key: %d %s", c.method, c.path, st, body)
				continue
			}
			w.wantAudited(t, B.id, since, T.admin.AccessKeyID, "admin:"+c.route)
		}
		w.bKeysIntact(t)
	})
}

// bKeysIntact checks that B's live keys still work.
func (w *world) bKeysIntact(t *testing.T) {
	t.Helper()
	for _, c := range []*dynamodb.Client{w.B.Admin, w.B.App, w.B.Read} {
		if _, err := c.ListTables(w.ctx, &dynamodb.ListTablesInput{}); err != nil {
			t.Errorf("LEAK: a key of B stopped working after A's attempts: %v", err)
		}
	}
}

// uuid writes a 32-hex id in the dashed UUID form.
func uuid(id string) string {
	if len(id) != 32 {
		return id
	}
	return id[:8] + "-" + id[8:12] + "-" + id[12:16] + "-" + id[16:20] + "-" + id[20:]
}
