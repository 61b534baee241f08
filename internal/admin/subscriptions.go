package admin

// Webhook subscriptions: the admin endpoints over the webhook manager.
//
//	POST   /v1/tenants/{tenant}/subscriptions                              create (answer has the secret)
//	GET    /v1/tenants/{tenant}/subscriptions                              list
//	GET    /v1/tenants/{tenant}/subscriptions/{id}                         show
//	POST   /v1/tenants/{tenant}/subscriptions/{id}/pause                   pause
//	POST   /v1/tenants/{tenant}/subscriptions/{id}/resume                  resume
//	DELETE /v1/tenants/{tenant}/subscriptions/{id}                         delete
//	POST   /v1/tenants/{tenant}/subscriptions/{id}/replay                  {"from": RFC3339|SEQUENCE|cursor}
//	GET    /v1/tenants/{tenant}/subscriptions/{id}/deliveries[?limit=N]    recent attempts
//	GET    /v1/tenants/{tenant}/subscriptions/{id}/dead-letters[?limit=N]  the dead-letter list
//	POST   /v1/tenants/{tenant}/subscriptions/{id}/dead-letters/replay     deliver it again
//	POST   /v1/tenants/{tenant}/subscriptions/{id}/rotate-secret           {"overlap_seconds": N}
//
// All are tenant routes: the operator, or an admin key of the tenant
// (which sees only its own environment's subscriptions). Every change is
// audited in the tenant's log.

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/webhook"
)

// SubscriptionList is the answer of listing subscriptions.
type SubscriptionList struct {
	Subscriptions []webhook.View `json:"subscriptions"`
}

// DeliveryList is the answer of a subscription's deliveries.
type DeliveryList struct {
	Deliveries []webhook.Attempt `json:"deliveries"`
}

// DeadLetterList is the answer of a subscription's dead-letter list.
type DeadLetterList struct {
	DeadLetters []webhook.DeadLetter `json:"dead_letters"`
}

// ReplayRequest is the body of a replay.
type ReplayRequest struct {
	From string `json:"from"`
}

// RotateSecretRequest is the body of rotate-secret.
type RotateSecretRequest struct {
	OverlapSeconds int64 `json:"overlap_seconds,omitempty"`
}

// Subscriptions is what the subscription endpoints call: a
// *webhook.Manager, or webhook.Unavailable where the server cannot
// deliver webhooks.
type Subscriptions interface {
	Create(ctx context.Context, s tenancy.Scope, in webhook.CreateInput) (webhook.View, error)
	List(ctx context.Context, s tenancy.Scope) ([]webhook.View, error)
	Get(ctx context.Context, s tenancy.Scope, id string) (webhook.View, error)
	Pause(ctx context.Context, s tenancy.Scope, id string) (webhook.View, error)
	Resume(ctx context.Context, s tenancy.Scope, id string) (webhook.View, error)
	Delete(ctx context.Context, s tenancy.Scope, id string) error
	Replay(ctx context.Context, s tenancy.Scope, id, from string) (webhook.View, error)
	Deliveries(ctx context.Context, s tenancy.Scope, id string, limit int) ([]webhook.Attempt, error)
	DeadLetters(ctx context.Context, s tenancy.Scope, id string, limit int) ([]webhook.DeadLetter, error)
	RedriveDeadLetters(ctx context.Context, s tenancy.Scope, id string) (webhook.View, error)
	RotateSecret(ctx context.Context, s tenancy.Scope, id string, overlap time.Duration) (webhook.View, error)
}

var (
	_ Subscriptions = (*webhook.Manager)(nil)
	_ Subscriptions = webhook.Unavailable("")
)

// ServeSubscriptions adds the subscription endpoints over m.
func (h *Handler) ServeSubscriptions(m Subscriptions) {
	const base = "/v1/tenants/{tenant}/subscriptions"
	one := func(method, suffix string, fn func(c *call, id string) error) {
		h.handle(method+" "+base+"/{id}"+suffix, tenantAdmin, func(c *call) error { return fn(c, c.r.PathValue("id")) })
	}
	h.handle("POST "+base, tenantAdmin, func(c *call) error {
		var in webhook.CreateInput
		if err := decode(c.r, &in); err != nil {
			return err
		}
		v, err := m.Create(c.ctx, c.s, in)
		if err != nil {
			return err
		}
		h.record(c, c.s, "subscription.create", v.ID+" table "+v.Table+" ("+v.Env+") -> "+v.URL)
		return WriteJSON(c.w, http.StatusCreated, v)
	})
	h.handle("GET "+base, tenantAdmin, func(c *call) error {
		vs, err := m.List(c.ctx, c.s)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, SubscriptionList{Subscriptions: vs})
	})
	one("GET", "", func(c *call, id string) error {
		v, err := m.Get(c.ctx, c.s, id)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, v)
	})
	one("POST", "/pause", func(c *call, id string) error {
		v, err := m.Pause(c.ctx, c.s, id)
		if err != nil {
			return err
		}
		h.record(c, c.s, "subscription.pause", id)
		return WriteJSON(c.w, http.StatusOK, v)
	})
	one("POST", "/resume", func(c *call, id string) error {
		v, err := m.Resume(c.ctx, c.s, id)
		if err != nil {
			return err
		}
		h.record(c, c.s, "subscription.resume", id)
		return WriteJSON(c.w, http.StatusOK, v)
	})
	one("DELETE", "", func(c *call, id string) error {
		if err := m.Delete(c.ctx, c.s, id); err != nil {
			return err
		}
		h.record(c, c.s, "subscription.delete", id)
		c.w.WriteHeader(http.StatusNoContent)
		return nil
	})
	one("POST", "/replay", func(c *call, id string) error {
		var req ReplayRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		if req.From == "" {
			return apierr.Validationf("from is required: an RFC 3339 time, a record's SequenceNumber or a cursor")
		}
		v, err := m.Replay(c.ctx, c.s, id, req.From)
		if err != nil {
			return err
		}
		h.record(c, c.s, "subscription.replay", id+" from "+apierr.Clip(req.From))
		return WriteJSON(c.w, http.StatusOK, v)
	})
	one("GET", "/deliveries", func(c *call, id string) error {
		n, err := limitParam(c.r)
		if err != nil {
			return err
		}
		ds, err := m.Deliveries(c.ctx, c.s, id, n)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, DeliveryList{Deliveries: ds})
	})
	one("GET", "/dead-letters", func(c *call, id string) error {
		n, err := limitParam(c.r)
		if err != nil {
			return err
		}
		ds, err := m.DeadLetters(c.ctx, c.s, id, n)
		if err != nil {
			return err
		}
		return WriteJSON(c.w, http.StatusOK, DeadLetterList{DeadLetters: ds})
	})
	one("POST", "/dead-letters/replay", func(c *call, id string) error {
		v, err := m.RedriveDeadLetters(c.ctx, c.s, id)
		if err != nil {
			return err
		}
		h.record(c, c.s, "subscription.replay-dead-letters", id)
		return WriteJSON(c.w, http.StatusOK, v)
	})
	one("POST", "/rotate-secret", func(c *call, id string) error {
		var req RotateSecretRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		v, err := m.RotateSecret(c.ctx, c.s, id, time.Duration(req.OverlapSeconds)*time.Second)
		if err != nil {
			return err
		}
		h.record(c, c.s, "subscription.rotate-secret", id)
		return WriteJSON(c.w, http.StatusOK, v)
	})
}

// limitParam reads the optional limit query parameter (0 when absent).
func limitParam(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 1000 {
		return 0, apierr.Validationf("limit must be a number from 1 to 1000")
	}
	return n, nil
}
