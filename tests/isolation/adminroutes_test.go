package isolation

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// adminRouteBodies holds, for every route the admin API registers, the
// body its attack sends: what the route would need to act, were the
// attacker admitted. adminRouteAttacks fails for a registered route
// missing here, so a new route cannot go unattacked.
var adminRouteBodies = map[string]string{
	"GET /v1/whoami":                              "",
	"POST /v1/tenants":                            `{"name":"evil"}`,
	"GET /v1/tenants":                             "",
	"GET /v1/tenants/{tenant}":                    "",
	"POST /v1/tenants/{tenant}/suspend":           "",
	"POST /v1/tenants/{tenant}/resume":            "",
	"DELETE /v1/tenants/{tenant}":                 "",
	"POST /v1/tenants/{tenant}/keys":              `{"role":"admin"}`,
	"GET /v1/tenants/{tenant}/keys":               "",
	"GET /v1/tenants/{tenant}/keys/{key}":         "",
	"DELETE /v1/tenants/{tenant}/keys/{key}":      "",
	"POST /v1/tenants/{tenant}/keys/{key}/rotate": `{}`,
	"POST /v1/tenants/{tenant}/sessions":          `{"role":"admin"}`,
	"GET /v1/tenants/{tenant}/audit":              "",
	"GET /v1/tenants/{tenant}/audit/verify":       "",
	"GET /v1/audit":                               "",
	"GET /v1/audit/verify":                        "",
	"POST /v1/tenants/{tenant}/invites":           `{"role":"admin"}`,
	"POST /v1/tenants/{tenant}/members":           `{"sub":"attacker","role":"admin"}`,
	"POST /v1/invites/accept":                     `{"token":"%invite"}`,
	"GET /v1/platform/tenants":                    "",
	"GET /v1/tenants/{tenant}/quota":              "",
	"PUT /v1/tenants/{tenant}/quota":              `{"read_units":1}`,
	"GET /v1/tenants/{tenant}/usage":              "",
	"GET /v1/gateways":                            "",
	"POST /v1/tenants/{tenant}/exports":           `{}`,
	"POST /v1/tenants/{tenant}/imports":           `{"table":"iso_ns","items":[{"pk":{"S":"p0"},"sk":{"S":"s0"},"v":{"S":"planted"}}]}`,

	"POST /v1/tenants/{tenant}/aggregates":                             `{"name":"evil","table":"orders","group_by":"status","count":true}`,
	"GET /v1/tenants/{tenant}/aggregates":                              "",
	"GET /v1/tenants/{tenant}/aggregates/{name}":                       "",
	"DELETE /v1/tenants/{tenant}/aggregates/{name}":                    "",
	"POST /v1/tenants/{tenant}/aggregates/{name}/rebuild":              "",
	"POST /v1/aggregates":                                              `{"name":"evil","table":"iso_ns","group_by":"secret","count":true}`,
	"GET /v1/aggregates":                                               "",
	"DELETE /v1/aggregates/{name}":                                     "",
	"POST /v1/tenants/{tenant}/subscriptions":                          `{"table":"iso_ns","url":"https://93.184.216.34/evil"}`,
	"GET /v1/tenants/{tenant}/subscriptions":                           "",
	"GET /v1/tenants/{tenant}/subscriptions/{id}":                      "",
	"POST /v1/tenants/{tenant}/subscriptions/{id}/pause":               "",
	"POST /v1/tenants/{tenant}/subscriptions/{id}/resume":              "",
	"DELETE /v1/tenants/{tenant}/subscriptions/{id}":                   "",
	"POST /v1/tenants/{tenant}/subscriptions/{id}/replay":              `{"from":"2020-01-01T00:00:00Z"}`,
	"GET /v1/tenants/{tenant}/subscriptions/{id}/deliveries":           "",
	"GET /v1/tenants/{tenant}/subscriptions/{id}/dead-letters":         "",
	"POST /v1/tenants/{tenant}/subscriptions/{id}/dead-letters/replay": "",
	"POST /v1/tenants/{tenant}/subscriptions/{id}/rotate-secret":       `{}`,
	"GET /v1/tenants/{tenant}/encryption":                              "",
	"POST /v1/tenants/{tenant}/rotate-key":                             `{}`,
	"POST /v1/tenants/{tenant}/restore":                                `{"to_time":"2020-01-01T00:00:00Z"}`,
	"GET /v1/tenants/{tenant}/restore":                                 "",
	"GET /v1/server-key":                                               "",
	"POST /v1/server-key/rotate":                                       `{}`,
	"POST /v1/tenants/{tenant}/moves":                                  `{"table":"iso_ns","to":"silo"}`,
	"GET /v1/tenants/{tenant}/moves":                                   "",
	"POST /v1/tenants/{tenant}/shards":                                 `{"shards":8}`,
	"GET /v1/tenants/{tenant}/shards":                                  "",
	"POST /v1/backups":                                                 `{"to":"/tmp/tenantdb-isolation-evil-backup"}`,
}

// adminRoutes returns the routes of the admin API of a node assembled as
// the server assembles it.
func adminRoutes(t *testing.T) []string {
	t.Helper()
	n, err := node.Open(context.Background(), node.Options{InMemory: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	return n.AdminRoutes()
}

// adminState is what the operator sees of a tenant through the admin API.
type adminState struct {
	tenant, keys, quota, audit, subscriptions string
}

func (w *world) adminStateOf(t *testing.T, id string) adminState {
	t.Helper()
	js := func(v any, err error) string {
		if err != nil {
			t.Fatalf("state of %s: %v", w.labelOf(id), err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	var q json.RawMessage
	st := adminState{
		tenant: js(w.admin.Tenant(w.ctx, id)),
		keys:   js(w.admin.Keys(w.ctx, id)),
		quota:  js(q, w.admin.Do(w.ctx, "GET", "/v1/tenants/"+id+"/quota", nil, &q)),
	}
	if !w.srv.Remote {
		st.subscriptions = js(w.admin.Subscriptions(w.ctx, id))
	}
	v, err := w.admin.VerifyAudit(w.ctx, id)
	st.audit = js(struct {
		Tail   uint64
		Verify admin.VerifyResult
	}{w.auditTail(t, id), v}, err)
	return st
}

// signedRaw is raw for temporary credentials, which reach the admin API
// only with a SigV4 signature.
func (w *world) signedRaw(t *testing.T, rec *recorder, method, path string, s admin.Session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(w.ctx, method, w.srv.Endpoint+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "dynamodb", harness.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rec}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

// adminRouteAttacks attacks every route the admin API registers, and each
// of its paths with a method it does not serve, with every credential of
// the attacking tenant A (admin, app and read keys; admin, app and read
// sessions) naming the victim B by id and by slug. Every answer must be a
// refusal (403 or 404), identical to the answer for a tenant that does not
// exist named the same way, and B's tenant record, keys, quota and audit
// log must be unchanged afterwards.
func (w *world) adminRouteAttacks(t *testing.T) {
	A, B := w.A, w.B
	routes := adminRoutes(t)
	for _, r := range routes {
		if _, ok := adminRouteBodies[r]; !ok {
			t.Errorf("admin route %q has no attack: add it to adminRouteBodies", r)
		}
	}
	for r := range adminRouteBodies {
		if !slices.Contains(routes, r) {
			t.Errorf("adminRouteBodies attacks %q, which the admin API no longer registers", r)
		}
	}

	bt, err := w.admin.Tenant(w.ctx, B.id)
	if err != nil {
		t.Fatal(err)
	}
	// B has a (paused) subscription for the {id} routes to name.
	bSub, err := w.admin.CreateSubscription(w.ctx, B.id, client.CreateSubscriptionRequest{Table: tblNS, URL: "https://93.184.216.34/b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.admin.PauseSubscription(w.ctx, B.id, bSub.ID); err != nil {
		t.Fatal(err)
	}
	noSub := "sub_" + randHex(12)

	nobodyID := randHex(16)
	nobodySlug := "iso-nobody-" + randHex(4)
	inv, err := w.admin.CreateInvite(w.ctx, B.id, admin.InviteRequest{Role: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	norm := func(s string) string {
		for _, r := range []string{B.id, nobodyID, bt.Slug, nobodySlug, bSub.ID, noSub} {
			s = strings.ReplaceAll(s, r, "<TENANT>")
		}
		return strings.ReplaceAll(s, strings.Replace(B.app.AccessKeyID, B.id, "<TENANT>", 1), "<KEY>")
	}

	type caller struct {
		label string
		send  func(t *testing.T, method, path, body string) (int, string)
	}
	var callers []caller
	for _, k := range []struct {
		label string
		cred  harness.Credential
	}{{"A-admin-key", A.admin}, {"A-app-key", A.app}, {"A-read-key", A.read}} {
		callers = append(callers, caller{k.label, func(t *testing.T, method, path, body string) (int, string) {
			return w.raw(t, A.rec, method, path, k.cred.Key, body)
		}})
	}
	for _, role := range []string{"admin", "app", "read"} {
		s := w.session(t, A, admin.SessionRequest{Role: role})
		callers = append(callers, caller{"A-" + role + "-session", func(t *testing.T, method, path, body string) (int, string) {
			return w.signedRaw(t, A.rec, method, path, s, body)
		}})
	}

	before := w.adminStateOf(t, B.id)
	for _, r := range routes {
		method, pattern, _ := strings.Cut(r, " ")
		body := strings.ReplaceAll(adminRouteBodies[r], "%invite", inv.Token)
		path := func(ref, key, sub string) string {
			p := strings.ReplaceAll(pattern, "{tenant}", ref)
			p = strings.ReplaceAll(p, "{id}", sub)
			return strings.ReplaceAll(p, "{key}", key)
		}
		for _, c := range callers {
			w.attack(t, r+" as "+c.label, func(t *testing.T) {
				if !strings.Contains(pattern, "{tenant}") {
					st, got := c.send(t, method, pattern, body)
					if r == "GET /v1/whoami" {
						if st != http.StatusOK || !strings.Contains(got, A.id) {
							t.Errorf("%s as %s: %d %s, want A's own identity", r, c.label, st, got)
						}
						return
					}
					if st < 400 {
						t.Errorf("LEAK: %s as %s: HTTP %d %s", r, c.label, st, got)
					}
					return
				}
				bKey := B.app.AccessKeyID
				noKey := strings.Replace(bKey, B.id, nobodyID, 1)
				for _, m := range []string{method, "PATCH"} {
					for _, ref := range []struct{ victim, nobody string }{{B.id, nobodyID}, {bt.Slug, nobodySlug}} {
						pv, pn := path(ref.victim, bKey, bSub.ID), path(ref.nobody, noKey, noSub)
						stV, gotV := c.send(t, m, pv, body)
						stN, gotN := c.send(t, m, pn, body)
						if stV != http.StatusForbidden && stV != http.StatusNotFound {
							t.Errorf("LEAK: %s %s as %s: HTTP %d %s, want 403 or 404", m, pv, c.label, stV, gotV)
						}
						if stV != stN || norm(gotV) != norm(gotN) {
							t.Errorf("LEAK: %s %s as %s answers %d %s; for a tenant that does not exist %d %s",
								m, pv, c.label, stV, gotV, stN, gotN)
						}
						if strings.Contains(gotV, B.secret) || (strings.Contains(gotV, B.id) && !strings.Contains(pv, B.id)) {
							t.Errorf("LEAK: %s %s as %s names B: %s", m, pv, c.label, gotV)
						}
					}
				}
			})
		}
	}
	if after := w.adminStateOf(t, B.id); after != before {
		t.Errorf("LEAK: B's admin state changed under A's attacks:\nbefore %+v\nafter  %+v", before, after)
	}
	w.bKeysIntact(t)
}
