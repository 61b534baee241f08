package verify

// The admin-plane families: A's keys on B's admin routes, sessions, B's
// other environment, revoked keys and a suspended tenant.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
)

// sameAdminError compares the admin API's answers on a victim's thing and
// on one that does not exist, with the names swapped.
func sameAdminError(victim, never error, vName, nName string) string {
	var ve, ne *client.Error
	if !errors.As(victim, &ve) {
		if victim == nil {
			return "succeeded; it must be refused"
		}
		return ""
	}
	if !errors.As(never, &ne) {
		return ""
	}
	if ve.Status != ne.Status || ve.Code != ne.Code || strings.ReplaceAll(ve.Message, vName, nName) != ne.Message {
		return fmt.Sprintf("answered %d %s %q, but %d %s %q for one that does not exist", ve.Status, ve.Code, ve.Message, ne.Status, ne.Code, ne.Message)
	}
	return ""
}

// adminRefused is the finding of an admin call that must be refused.
func adminRefused(err error) string {
	if err == nil {
		return "succeeded; it must be refused"
	}
	if s := client.StatusOf(err); s != 0 && s != 401 && s != 403 && s != 404 {
		return fmt.Sprintf("answered HTTP %d, not a refusal", s)
	}
	return ""
}

// route is an admin route to attack; %t is the victim's tenant, %k one of
// its keys.
type route struct{ method, path, body string }

var victimRoutes = []route{
	{"GET", "/v1/tenants/%t", ""},
	{"GET", "/v1/tenants/%t/keys", ""},
	{"GET", "/v1/tenants/%t/keys/%k", ""},
	{"POST", "/v1/tenants/%t/keys", `{"role":"admin"}`},
	{"POST", "/v1/tenants/%t/keys/%k/rotate", `{}`},
	{"POST", "/v1/tenants/%t/sessions", `{"role":"admin"}`},
	{"GET", "/v1/tenants/%t/audit", ""},
	{"GET", "/v1/tenants/%t/audit/verify", ""},
	{"POST", "/v1/tenants/%t/invites", `{"role":"admin"}`},
	{"POST", "/v1/tenants/%t/members", `{"sub":"tdbverify"}`},
	{"GET", "/v1/tenants/%t/quota", ""},
	{"PUT", "/v1/tenants/%t/quota", `{"read_units":1}`},
	{"GET", "/v1/tenants/%t/usage", ""},
	{"POST", "/v1/tenants/%t/suspend", ""},
	{"POST", "/v1/tenants/%t/resume", ""},
	{"DELETE", "/v1/tenants/%t/keys/%k", ""},
	{"DELETE", "/v1/tenants/%t", ""},
}

// operatorRoutes are routes of the operator alone.
var operatorRoutes = []route{
	{"GET", "/v1/tenants", ""},
	{"POST", "/v1/tenants", `{"name":"tenantdb verify: must be refused"}`},
	{"GET", "/v1/audit", ""},
	{"GET", "/v1/audit/verify", ""},
}

// call sends a route with c; a tenant it created by mistake is cleaned up.
func (r *run) call(ctx context.Context, c *client.Client, rt route, tenant, key string) error {
	path := strings.NewReplacer("%t", tenant, "%k", key).Replace(rt.path)
	var in any
	if rt.body != "" {
		in = json.RawMessage(rt.body)
	}
	var out json.RawMessage
	err := c.Do(ctx, rt.method, path, in, &out)
	if err == nil && rt.method == "POST" && path == "/v1/tenants" {
		var t client.Tenant
		if json.Unmarshal(out, &t) == nil && t.ID != "" {
			r.mu.Lock()
			r.tenants = append(r.tenants, t.ID)
			r.mu.Unlock()
		}
	}
	return err
}

func (r *run) adminRoutes(ctx context.Context) {
	A, B := r.A, r.B
	nobody := randHex(16)
	for _, k := range []struct {
		name string
		key  client.Key
	}{{"admin", A.admin}, {"app", A.app}, {"read", A.read}} {
		c := r.api(k.key.Key, A.rec)
		for _, rt := range victimRoutes {
			for _, tenant := range []string{B.id, B.slug} {
				r.try(ctx, A.rec, fmt.Sprintf("%s key: %s %s (%s)", k.name, rt.method, rt.path, tenant), func(ctx context.Context) string {
					err := r.call(ctx, c, rt, tenant, B.app.KeyID)
					if f := adminRefused(err); f != "" {
						return f
					}
					if tenant == B.id && k.name == "admin" {
						// Another tenant's is exactly a tenant that does not exist.
						return sameAdminError(err, r.call(ctx, c, rt, nobody, B.app.KeyID), B.id, nobody)
					}
					return ""
				})
			}
		}
		// The victim's key named under the attacker's own tenant.
		for _, rt := range victimRoutes[2:3] {
			r.try(ctx, A.rec, fmt.Sprintf("%s key: %s %s with the victim's key id", k.name, rt.method, rt.path), func(ctx context.Context) string {
				return adminRefused(r.call(ctx, c, rt, A.id, B.app.AccessKeyID))
			})
		}
		// Paths that name the attacker's own tenant on their way to the
		// victim's.
		for _, p := range []string{
			"/v1/tenants/" + A.id + "/../" + B.id + "/keys",
			"/v1/tenants/" + A.id + "/keys/../../" + B.id + "/keys",
			"/v1/tenants/" + A.id + "%2F..%2F" + B.id + "/keys",
			"/v1/tenants/" + B.id + "/keys?tenant=" + A.id,
			"/v1/tenants/" + strings.ToUpper(B.id) + "/keys",
			"/v1/tenants/" + B.id + "/keys/",
		} {
			r.try(ctx, A.rec, fmt.Sprintf("%s key: GET %s", k.name, p), func(ctx context.Context) string {
				var out json.RawMessage
				return adminRefused(c.Do(ctx, "GET", p, nil, &out))
			})
		}
		for _, rt := range operatorRoutes {
			r.try(ctx, A.rec, fmt.Sprintf("%s key: %s %s", k.name, rt.method, rt.path), func(ctx context.Context) string {
				return adminRefused(r.call(ctx, c, rt, "", ""))
			})
		}
	}
}

func (r *run) sessions(ctx context.Context) {
	A, B := r.A, r.B
	r.try(ctx, A.rec, "A's admin key mints a session of B", func(ctx context.Context) string {
		_, err := A.API.CreateSession(ctx, B.id, client.SessionRequest{Role: "admin"})
		return adminRefused(err)
	})
	narrowed, err := A.API.CreateSession(ctx, A.id, client.SessionRequest{Role: "app", Tables: []string{r.tables[kNS]}})
	if err != nil {
		r.try(ctx, A.rec, "minting A's narrowed session", func(context.Context) string { return "" })
		return
	}
	sdb := r.dynamo(Credential{AccessKeyID: narrowed.AccessKeyID, SecretAccessKey: narrowed.SecretAccessKey}, narrowed.SessionToken, A.rec)
	r.try(ctx, A.rec, "narrowed session reads a table outside its policy", func(ctx context.Context) string {
		_, err := sdb.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kOwn), Key: keyOf(item(A, kOwn, 0, 0))})
		return refused(err)
	})
	r.try(ctx, A.rec, "narrowed session reads the victim-only table", func(ctx context.Context) string {
		_, err := sdb.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kBOnly), Key: keyOf(r.bItems[kBOnly][0])})
		return refused(err)
	})
	r.try(ctx, A.rec, "narrowed session scans its table", func(ctx context.Context) string {
		out, err := sdb.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(kNS)})
		if err != nil {
			return ""
		}
		return ownOnly(A, out.Items)
	})
	read, err := A.API.CreateSession(ctx, A.id, client.SessionRequest{Role: "read"})
	if err == nil {
		rdb := r.dynamo(Credential{AccessKeyID: read.AccessKeyID, SecretAccessKey: read.SecretAccessKey}, read.SessionToken, A.rec)
		r.try(ctx, A.rec, "read session writes", func(ctx context.Context) string {
			_, err := rdb.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kNS), Item: item(A, kNS, 0, 0)})
			return refused(err)
		})
	}
	// Forged sessions: A's session id with B's token and secret, and the
	// other way round.
	bs, err := r.op.CreateSession(ctx, B.id, client.SessionRequest{Role: "admin"})
	if err != nil {
		return
	}
	for _, f := range []struct {
		name  string
		creds Credential
		token string
	}{
		{"A's session id with B's session secret and token", Credential{AccessKeyID: narrowed.AccessKeyID, SecretAccessKey: bs.SecretAccessKey}, bs.SessionToken},
		{"B's session id and secret with A's token", Credential{AccessKeyID: bs.AccessKeyID, SecretAccessKey: bs.SecretAccessKey}, narrowed.SessionToken},
		{"A's session id and secret with B's token", Credential{AccessKeyID: narrowed.AccessKeyID, SecretAccessKey: narrowed.SecretAccessKey}, bs.SessionToken},
		{"A's app key with B's session token", Credential{AccessKeyID: A.app.AccessKeyID, SecretAccessKey: A.app.SecretAccessKey}, bs.SessionToken},
	} {
		db := r.dynamo(f.creds, f.token, A.rec)
		r.try(ctx, A.rec, f.name, func(ctx context.Context) string {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kBOnly), Key: keyOf(r.bItems[kBOnly][0])})
			return refused(err)
		})
	}
}

func (r *run) environments(ctx context.Context) {
	T, B := r.Btest, r.B
	for _, k := range []string{kNS, kSilo, kOwn} {
		r.try(ctx, T.rec, "test environment scans "+k, func(ctx context.Context) string {
			out, err := T.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), ConsistentRead: aws.Bool(true)})
			if err != nil {
				return ""
			}
			if f := ownOnly(T, out.Items); f != "" {
				return f
			}
			if len(out.Items) != len(r.btItems[k]) {
				return fmt.Sprintf("scanned %d items, the environment has %d", len(out.Items), len(r.btItems[k]))
			}
			return ""
		})
		r.try(ctx, T.rec, "test environment reads the live keys "+k, func(ctx context.Context) string {
			for _, it := range r.bItems[k][1:] {
				out, err := T.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(k), Key: keyOf(it)})
				if err == nil && out.Item != nil {
					if f := ownOnly(T, []map[string]types.AttributeValue{out.Item}); f != "" {
						return f
					}
				}
			}
			return ""
		})
	}
	r.try(ctx, T.rec, "test environment reads the live-only table", func(ctx context.Context) string {
		_, err := T.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kBOnly), Key: keyOf(r.bItems[kBOnly][0])})
		return notFound(err)
	})
	r.try(ctx, T.rec, "test environment lists tables", func(ctx context.Context) string {
		out, err := T.Read.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err == nil {
			for _, n := range out.TableNames {
				if n == r.tables[kBOnly] {
					return "lists the live environment's table"
				}
			}
		}
		return ""
	})
	r.try(ctx, T.rec, "test admin lists the tenant's keys", func(ctx context.Context) string {
		ks, err := T.API.Keys(ctx, B.id)
		if err == nil {
			for _, k := range ks {
				if k.Env != T.env {
					return "listed a key of environment " + k.Env
				}
			}
		}
		return ""
	})
	for _, c := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"revokes a live key", func(ctx context.Context) error { _, err := T.API.RevokeKey(ctx, B.id, B.read.KeyID); return err }},
		{"rotates a live key", func(ctx context.Context) error { _, err := T.API.RotateKey(ctx, B.id, B.read.KeyID, 0); return err }},
		{"reads a live key", func(ctx context.Context) error { _, err := T.API.GetKey(ctx, B.id, B.app.AccessKeyID); return err }},
		{"creates a live key", func(ctx context.Context) error {
			_, err := T.API.CreateKey(ctx, B.id, client.CreateKeyRequest{Role: "admin", Env: "live"})
			return err
		}},
		{"mints a live session", func(ctx context.Context) error {
			_, err := T.API.CreateSession(ctx, B.id, client.SessionRequest{Role: "admin", Env: "live"})
			return err
		}},
		{"reads the tenant's audit log", func(ctx context.Context) error { _, err := T.API.Audit(ctx, B.id, client.AuditQuery{}); return err }},
		{"reads the tenant's usage", func(ctx context.Context) error { _, err := T.API.Usage(ctx, B.id, zeroTime, zeroTime); return err }},
	} {
		r.try(ctx, T.rec, "test admin "+c.name, func(ctx context.Context) string { return adminRefused(c.do(ctx)) })
	}
}

func (r *run) revocation(ctx context.Context) {
	A := r.A
	for _, role := range []string{"app", "admin"} {
		k, err := r.op.CreateKey(ctx, A.id, client.CreateKeyRequest{Role: role})
		if err != nil {
			continue
		}
		db := r.dynamo(cred(k), "", A.rec)
		api := r.api(k.Key, A.rec)
		if _, err := r.op.RevokeKey(ctx, A.id, k.KeyID); err != nil {
			continue
		}
		r.try(ctx, A.rec, "revoked "+role+" key reads", func(ctx context.Context) string {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kNS), Key: keyOf(item(A, kNS, 0, 0))})
			return refused(err)
		})
		r.try(ctx, A.rec, "revoked "+role+" key calls the admin API", func(ctx context.Context) string {
			_, err := api.WhoAmI(ctx)
			return adminRefused(err)
		})
	}
	k, err := r.op.CreateKey(ctx, A.id, client.CreateKeyRequest{Role: "app"})
	if err == nil {
		if _, err := r.op.RotateKey(ctx, A.id, k.KeyID, 0); err == nil {
			db := r.dynamo(cred(k), "", A.rec)
			r.try(ctx, A.rec, "key rotated without grace reads", func(ctx context.Context) string {
				_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kNS), Key: keyOf(item(A, kNS, 0, 0))})
				return refused(err)
			})
		}
	}
	// A session outlives nothing: one issued by a key revoked since is
	// refused too.
	adm, err := r.op.CreateKey(ctx, A.id, client.CreateKeyRequest{Role: "admin"})
	if err != nil {
		return
	}
	s, err := r.api(adm.Key, A.rec).CreateSession(ctx, A.id, client.SessionRequest{Role: "admin"})
	if err != nil {
		return
	}
	if _, err := r.op.RevokeKey(ctx, A.id, adm.KeyID); err != nil {
		return
	}
	db := r.dynamo(Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
	r.try(ctx, A.rec, "session of a revoked key reads", func(ctx context.Context) string {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kNS), Key: keyOf(item(A, kNS, 0, 0))})
		return refused(err)
	})
}

func (r *run) suspension(ctx context.Context) {
	A := r.A
	s, serr := A.API.CreateSession(ctx, A.id, client.SessionRequest{Role: "app"})
	if _, err := r.op.SuspendTenant(ctx, A.id); err != nil {
		r.try(ctx, A.rec, "suspending the attacker", func(context.Context) string { return "" })
		return
	}
	defer r.op.ResumeTenant(context.WithoutCancel(ctx), A.id)
	r.try(ctx, A.rec, "suspended tenant's app key reads", func(ctx context.Context) string {
		_, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kNS), Key: keyOf(item(A, kNS, 0, 0))})
		return refused(err)
	})
	r.try(ctx, A.rec, "suspended tenant's app key writes", func(ctx context.Context) string {
		_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kNS), Item: item(A, kNS, 0, 0)})
		return refused(err)
	})
	r.try(ctx, A.rec, "suspended tenant's admin key creates a table", func(ctx context.Context) string {
		err := r.createTable(ctx, A.Admin, "tdbverify_"+r.id+"_suspended", nil)
		return refused(err)
	})
	r.try(ctx, A.rec, "suspended tenant's admin key lists its keys", func(ctx context.Context) string {
		_, err := A.API.Keys(ctx, A.id)
		return adminRefused(err)
	})
	r.try(ctx, A.rec, "suspended tenant's admin key mints a session", func(ctx context.Context) string {
		_, err := A.API.CreateSession(ctx, A.id, client.SessionRequest{Role: "app"})
		return adminRefused(err)
	})
	r.try(ctx, A.rec, "suspended tenant's admin key creates a key", func(ctx context.Context) string {
		_, err := A.API.CreateKey(ctx, A.id, client.CreateKeyRequest{Role: "app"})
		return adminRefused(err)
	})
	if serr == nil {
		db := r.dynamo(Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
		r.try(ctx, A.rec, "suspended tenant's session reads", func(ctx context.Context) string {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kNS), Key: keyOf(item(A, kNS, 0, 0))})
			return refused(err)
		})
	}
}

var zeroTime time.Time
