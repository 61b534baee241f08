package verify

// The families of the admin API's tenant features: webhook
// subscriptions, aggregates and per-tenant encryption.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// attackRoutes sends each route (%t the tenant, %k the thing) with A's
// admin, app and read keys, on the victim's tenant by id and slug:
// every one must be refused, and A's admin key must get the answer a
// tenant that does not exist gets.
func (r *run) attackRoutes(ctx context.Context, routes []route, thing string) {
	A, B := r.A, r.B
	nobody := randHex(16)
	for _, k := range []struct {
		name string
		key  client.Key
	}{{"admin", A.admin}, {"app", A.app}, {"read", A.read}} {
		c := r.api(k.key.Key, A.rec)
		for _, rt := range routes {
			for _, tenant := range []string{B.id, B.slug} {
				r.try(ctx, A.rec, fmt.Sprintf("%s key: %s %s (%s)", k.name, rt.method, rt.path, tenant), func(ctx context.Context) string {
					err := r.call(ctx, c, rt, tenant, thing)
					if f := adminRefused(err); f != "" {
						return f
					}
					if tenant == B.id && k.name == "admin" {
						return sameAdminError(err, r.call(ctx, c, rt, nobody, thing), B.id, nobody)
					}
					return ""
				})
			}
		}
	}
	// The victim's thing named under the attacker's own tenant: A has
	// none of that name.
	c := r.api(A.admin.Key, A.rec)
	for _, rt := range routes {
		if !strings.Contains(rt.path, "%k") {
			continue
		}
		r.try(ctx, A.rec, fmt.Sprintf("admin key: %s %s on its own tenant with the victim's id", rt.method, rt.path), func(ctx context.Context) string {
			err := r.call(ctx, c, rt, A.id, thing)
			if err == nil {
				return "acted on the victim's " + thing + " through the attacker's own tenant"
			}
			if s := client.StatusOf(err); s != 404 && s != 400 {
				return fmt.Sprintf("answered HTTP %d, not 404: the victim's exists", s)
			}
			return ""
		})
	}
}

// webhookURLs are the URLs the victim's subscription is created with, in
// order: a loopback one for servers that allow private webhooks, a
// public one for those that do not. Nothing is delivered: the victim
// pauses its subscription at once and writes nothing after it.
var webhookURLs = []string{"http://127.0.0.1:9/tdbverify", "https://192.88.99.1/tdbverify"}

// subscriptions attacks webhook subscriptions: the victim's subscription
// by id (show, deliveries, dead letters, pause, resume, replay, rotate,
// delete) through the victim's tenant and the attacker's own, the
// attacker's listing, and a subscription on the victim's own table.
func (r *run) subscriptions(ctx context.Context) {
	A, B := r.A, r.B
	B.rec.take()
	var sub client.Subscription
	var err error
	for _, u := range webhookURLs {
		sub, err = B.API.CreateSubscription(ctx, B.id, client.CreateSubscriptionRequest{Table: r.tables[kBOnly], URL: u})
		if err == nil {
			break
		}
	}
	if err != nil {
		r.setupFail("the victim's subscription", err)
		return
	}
	if _, err := B.API.PauseSubscription(ctx, B.id, sub.ID); err != nil {
		r.setupFail("pausing the victim's subscription", err)
		return
	}
	B.rec.take()
	A.rec.forbidAll(sub.ID, sub.Secret)
	r.victimThings = append(r.victimThings, "/subscriptions/"+sub.ID)
	const base = "/v1/tenants/%t/subscriptions"
	routes := []route{
		{"GET", base, ""},
		{"POST", base, fmt.Sprintf(`{"table":%q,"url":%q}`, r.tables[kBOnly], webhookURLs[1])},
		{"GET", base + "/%k", ""},
		{"GET", base + "/%k/deliveries", ""},
		{"GET", base + "/%k/dead-letters", ""},
		{"POST", base + "/%k/dead-letters/replay", ""},
		{"POST", base + "/%k/resume", ""},
		{"POST", base + "/%k/pause", ""},
		{"POST", base + "/%k/replay", `{"from":"TRIM_HORIZON"}`},
		{"POST", base + "/%k/rotate-secret", `{"overlap_seconds":0}`},
		{"DELETE", base + "/%k", ""},
	}
	r.attackRoutes(ctx, routes, sub.ID)
	r.try(ctx, A.rec, "a subscription on the victim's own table", func(ctx context.Context) string {
		s, err := A.API.CreateSubscription(ctx, A.id, client.CreateSubscriptionRequest{Table: r.tables[kBOnly], URL: webhookURLs[0]})
		if err == nil {
			A.API.DeleteSubscription(ctx, A.id, s.ID)
			return "subscribed to the victim's own table"
		}
		return ""
	})
	r.try(ctx, A.rec, "the attacker's listing", func(ctx context.Context) string {
		list, err := A.API.Subscriptions(ctx, A.id)
		if err == nil && len(list) > 0 {
			return fmt.Sprintf("lists %d subscriptions; the attacker has none", len(list))
		}
		return ""
	})
	r.try(ctx, A.rec, "the victim's subscription after the attacks", func(ctx context.Context) string {
		got, err := B.API.Subscription(ctx, B.id, sub.ID)
		B.rec.take()
		if err != nil {
			return "the victim's subscription is gone: " + err.Error()
		}
		if got.State != "paused" || len(got.Secrets) != len(sub.Secrets) && len(sub.Secrets) > 0 {
			return fmt.Sprintf("the victim's subscription was changed: state %s, %d secrets", got.State, len(got.Secrets))
		}
		return ""
	})
}

// aggregates attacks aggregates: the victim's aggregate by name (show,
// rebuild, delete) through the victim's tenant and the attacker's own,
// an aggregate on the victim's own table, and the attacker's aggregate of
// a shared table grouped by the secret every item carries: it must count
// the attacker's items only (a group named by the victim's secret is a
// leak the recorder sees).
func (r *run) aggregates(ctx context.Context) {
	A, B := r.A, r.B
	B.rec.take()
	name := "tdbverify_" + r.id
	for _, k := range []string{kBOnly, kNS} {
		if _, err := B.API.CreateAggregate(ctx, B.id, client.CreateAggregateRequest{Name: name + "_" + k, Table: r.tables[k], GroupBy: "secret", Count: true}); err != nil {
			r.setupFail("the victim's aggregate", err)
			return
		}
	}
	B.rec.take()
	r.victimThings = append(r.victimThings, "/aggregates/"+name+"_"+kBOnly)
	const base = "/v1/tenants/%t/aggregates"
	routes := []route{
		{"GET", base, ""},
		{"POST", base, fmt.Sprintf(`{"name":"tdbverify_x","table":%q,"group_by":"secret","count":true}`, r.tables[kBOnly])},
		{"GET", base + "/%k", ""},
		{"POST", base + "/%k/rebuild", ""},
		{"DELETE", base + "/%k", ""},
	}
	r.attackRoutes(ctx, routes, name+"_"+kBOnly)
	r.try(ctx, A.rec, "an aggregate on the victim's own table", func(ctx context.Context) string {
		_, err := A.API.CreateAggregate(ctx, A.id, client.CreateAggregateRequest{Name: name + "_steal", Table: r.tables[kBOnly], GroupBy: "secret", Count: true})
		if err == nil {
			return "aggregates the victim's own table"
		}
		return ""
	})
	want, err := r.countOwn(ctx, A, kNS)
	if err != nil {
		r.setupFail("counting the attacker's items", err)
		return
	}
	r.try(ctx, A.rec, "the attacker's aggregate of a shared table", func(ctx context.Context) string {
		// The victim's name: aggregates of two tenants must not collide.
		if _, err := A.API.CreateAggregate(ctx, A.id, client.CreateAggregateRequest{Name: name + "_" + kNS, Table: r.tables[kNS], GroupBy: "secret", Count: true}); err != nil {
			return ""
		}
		deadline := time.Now().Add(time.Minute)
		for {
			ag, err := A.API.Aggregate(ctx, A.id, name+"_"+kNS)
			if err != nil {
				return ""
			}
			if ag.State == "ready" && ag.LagMillis == 0 {
				var n int64
				for g, v := range ag.Groups {
					if g != A.secret {
						return "the attacker's aggregate has a group of another tenant's"
					}
					if v.Count != nil {
						n += *v.Count
					}
				}
				if n != want {
					return fmt.Sprintf("the attacker's aggregate of a shared table counts %d items; the attacker has %d", n, want)
				}
				return ""
			}
			if time.Now().After(deadline) {
				return ""
			}
			select {
			case <-ctx.Done():
				return ""
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
	r.try(ctx, A.rec, "the victim's aggregates after the attacks", func(ctx context.Context) string {
		list, err := B.API.Aggregates(ctx, B.id)
		B.rec.take()
		if err != nil || len(list) != 2 {
			return fmt.Sprintf("the victim has %d aggregates after the attacks, had 2 (%v)", len(list), err)
		}
		return ""
	})
}

// encryption attacks the per-tenant encryption routes: the victim's
// encryption status and key rotation; the victim's key version must not
// move.
func (r *run) encryption(ctx context.Context) {
	A, B := r.A, r.B
	B.rec.take()
	before, err := B.API.Encryption(ctx, B.id)
	if err != nil {
		r.setupFail("the victim's encryption status", err)
		return
	}
	B.rec.take()
	r.attackRoutes(ctx, []route{
		{"GET", "/v1/tenants/%t/encryption", ""},
		{"POST", "/v1/tenants/%t/rotate-key", ""},
		{"GET", "/v1/server-key", ""},
		{"POST", "/v1/server-key/rotate", ""},
	}, "")
	r.try(ctx, A.rec, "the attacker's own rotation leaves the victim's key alone", func(ctx context.Context) string {
		if _, err := A.API.RotateTenantKey(ctx, A.id); err != nil {
			return ""
		}
		after, err := B.API.Encryption(ctx, B.id)
		B.rec.take()
		if err != nil {
			return ""
		}
		if after.Version != before.Version || after.Rotation != nil {
			b, _ := json.Marshal(after)
			return "the victim's data key moved: " + string(b)
		}
		return ""
	})
}
