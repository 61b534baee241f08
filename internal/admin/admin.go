// Package admin serves tenantdb's admin REST API under /v1/ and provides
// the client the tenantdb CLI uses.
//
// Every request is authenticated: "Authorization: Bearer <full API key>"
// (or a SigV4 signature) for the operator and tenant admin keys, and
// "Authorization: Bearer <OIDC JWT>" for platform users on the /v1/platform
// and /v1/invites endpoints. Authorization is decided here, once per
// route, by the route's audience:
//
//   - operator routes (tenant lifecycle, the platform audit log, seeding
//     memberships): the operator only; anyone else gets 403.
//   - tenant routes (/v1/tenants/{tenant}/keys, sessions, audit, invites
//     and GET /v1/tenants/{tenant}): the operator, or an admin key of that
//     tenant, limited to its own environment for keys and sessions (a
//     temporary credential narrowed by a policy is refused). An
//     admin key naming another tenant gets exactly the 404 a tenant that
//     does not exist gets, so nothing is revealed; app and read keys get
//     403.
//   - tenant-wide reports (the tenant's audit log and, through
//     HandleTenantWide, its usage): as tenant routes, but an admin key of
//     another environment than live is refused with 403, since these cover
//     every environment's keys and tables.
//
// Every change and every refusal is written to the audit log: a tenant's
// own log for actions on the tenant, the platform log for the operator's
// tenant lifecycle actions, the caller's own log for its refused attempts.
//
// Errors are JSON {"error": {"code": ..., "message": ...}} with the HTTP
// status of errors.go's table.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/quota"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TenantDropper removes a tenant's data kept outside the main key range
// (silo stores, in-memory table caches) when the tenant is deleted. The
// engine implements it.
type TenantDropper interface {
	DropTenant(ctx context.Context, t tenancy.TenantID) error
}

// TenantReviver is implemented by a TenantDropper that refuses a dropped
// tenant's late writes: ReviveTenant is called when a tenant is created
// with an explicit id, which may be a deleted tenant's.
type TenantReviver interface {
	ReviveTenant(t tenancy.TenantID)
}

// Options configure a Handler. Catalog, Auth and Audit are required.
type Options struct {
	Catalog *catalog.Catalog
	Auth    *auth.Authenticator
	Audit   *audit.Log
	// JWT verifies platform users' tokens; nil disables the platform
	// endpoints (they answer 404).
	JWT *auth.JWTVerifier
	// JWKS, if set, refreshes JWT's keys when a token names an unknown kid.
	JWKS *JWKS
	// Dropper, if set, is called when a tenant is deleted.
	Dropper TenantDropper
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Now; nil means time.Now.
	Now func() time.Time
}

// Handler is the /v1/ admin API.
type Handler struct {
	o   Options
	mux *http.ServeMux
	log *slog.Logger
	// quotas, set by ServeQuotas, forgets a deleted tenant's buckets.
	quotas *quota.Manager
}

var _ http.Handler = (*Handler)(nil)

// maxBody bounds admin request bodies.
const maxBody = 64 << 10

// New returns the admin API handler.
func New(o Options) (*Handler, error) {
	if o.Catalog == nil || o.Auth == nil || o.Audit == nil {
		return nil, errors.New("admin: Catalog, Auth and Audit are required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	h := &Handler{o: o, mux: http.NewServeMux(), log: o.Logger.With("component", "admin")}
	h.routes()
	return h, nil
}

// LiveEnv is the default environment of keys, the one whose admin keys
// may read a tenant's tenant-wide reports (audit log, usage).
const LiveEnv = "live"

// audience says who may call a route.
type audience int

const (
	operatorOnly audience = iota // the operator
	tenantAdmin                  // the operator or an admin key of the {tenant} in the path
	tenantWide                   // tenantAdmin, but only admin keys of the live environment
	anyKey                       // any authenticated API key
	platformUser                 // a platform user's JWT
)

// call is what a route's function gets: the caller and, for tenant
// routes, the tenant.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	p      tenancy.Principal
	tenant catalog.Tenant // tenant routes only
	claims auth.Claims    // platform routes only
	action string         // for audit: "METHOD /v1/pattern"
}

func (h *Handler) routes() {
	h.handle("GET /v1/whoami", anyKey, h.whoami)

	h.handle("POST /v1/tenants", operatorOnly, h.createTenant)
	h.handle("GET /v1/tenants", operatorOnly, h.listTenants)
	h.handle("GET /v1/tenants/{tenant}", tenantAdmin, h.showTenant)
	h.handle("POST /v1/tenants/{tenant}/suspend", operatorOnly, h.suspendTenant)
	h.handle("POST /v1/tenants/{tenant}/resume", operatorOnly, h.resumeTenant)
	h.handle("DELETE /v1/tenants/{tenant}", operatorOnly, h.deleteTenant)

	h.handle("POST /v1/tenants/{tenant}/keys", tenantAdmin, h.createKey)
	h.handle("GET /v1/tenants/{tenant}/keys", tenantAdmin, h.listKeys)
	h.handle("GET /v1/tenants/{tenant}/keys/{key}", tenantAdmin, h.showKey)
	h.handle("DELETE /v1/tenants/{tenant}/keys/{key}", tenantAdmin, h.revokeKey)
	h.handle("POST /v1/tenants/{tenant}/keys/{key}/rotate", tenantAdmin, h.rotateKey)

	h.handle("POST /v1/tenants/{tenant}/sessions", tenantAdmin, h.createSession)

	// NB: the audit log spans all of a tenant's environments (it names
	// every key and table), so a test-environment admin key may not read it.
	h.handle("GET /v1/tenants/{tenant}/audit", tenantWide, h.tenantAudit)
	h.handle("GET /v1/tenants/{tenant}/audit/verify", tenantWide, h.verifyTenantAudit)
	h.handle("GET /v1/audit", operatorOnly, h.platformAudit)
	h.handle("GET /v1/audit/verify", operatorOnly, h.verifyPlatformAudit)

	h.handle("POST /v1/tenants/{tenant}/invites", tenantAdmin, h.createInvite)
	h.handle("POST /v1/tenants/{tenant}/members", operatorOnly, h.addMember)
	h.handle("POST /v1/invites/accept", platformUser, h.acceptInvite)
	h.handle("GET /v1/platform/tenants", platformUser, h.platformTenants)

	h.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, apierr.New(apierr.NotFound, "no such admin endpoint: %s %s", r.Method, apierr.Clip(r.URL.Path)))
	})
}

// HandleTenant adds a tenant route (pattern like "GET
// /v1/tenants/{tenant}/usage") with the same authentication,
// authorization and audit of refusals as the built-in ones. fn gets the
// caller and the tenant and writes the response; WriteJSON and WriteError
// write the API's shapes.
func (h *Handler) HandleTenant(pattern string, fn func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, t tenancy.TenantID)) {
	h.handle(pattern, tenantAdmin, func(c *call) error {
		fn(c.w, c.r, c.p, c.tenant.ID)
		return nil
	})
}

// HandleTenantWide is HandleTenant for a route that reports on every
// environment of the tenant (usage): admin keys of other environments than
// live are refused.
func (h *Handler) HandleTenantWide(pattern string, fn func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, t tenancy.TenantID)) {
	h.handle(pattern, tenantWide, func(c *call) error {
		fn(c.w, c.r, c.p, c.tenant.ID)
		return nil
	})
}

// HandleOperator adds an operator-only route.
func (h *Handler) HandleOperator(pattern string, fn func(w http.ResponseWriter, r *http.Request, p tenancy.Principal)) {
	h.handle(pattern, operatorOnly, func(c *call) error {
		fn(c.w, c.r, c.p)
		return nil
	})
}

// ServeHTTP serves the admin API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) handle(pattern string, aud audience, fn func(*call) error) {
	method, path, _ := strings.Cut(pattern, " ")
	action := method + " " + path
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		c := &call{w: w, r: r, ctx: audit.WithSource(r.Context(), r.RemoteAddr), action: action}
		if err := h.authorize(c, aud); err != nil {
			writeError(w, err)
			return
		}
		if err := fn(c); err != nil {
			if apierr.KindOf(err) == apierr.Internal {
				h.log.Error("admin request failed", "action", action, "key", c.p.KeyID, "err", err)
			}
			writeError(w, err)
		}
	})
}

// authorize authenticates the caller and applies the route's audience.
func (h *Handler) authorize(c *call, aud audience) error {
	hv := c.r.Header.Get("Authorization")
	if hv == "" {
		return apierr.New(apierr.Unauthorized, "the admin API needs an Authorization header: Bearer <key>")
	}
	if aud == platformUser {
		if h.o.JWT == nil || !h.o.JWT.Configured() {
			return apierr.New(apierr.NotFound, "platform sign-in is not configured on this server")
		}
		tok, ok := strings.CutPrefix(hv, "Bearer ")
		if !ok {
			return apierr.New(apierr.Unauthorized, "this endpoint needs Authorization: Bearer <platform JWT>")
		}
		claims, err := h.verifyJWT(c.ctx, strings.TrimSpace(tok))
		if err != nil {
			return err
		}
		c.claims = claims
		return nil
	}

	p, err := h.authenticate(c, hv)
	if err != nil {
		return err
	}
	c.p = p
	switch aud {
	case anyKey:
		return nil
	case operatorOnly:
		if p.IsOperator() {
			return h.resolveOperatorTenant(c)
		}
		return h.deny(c, apierr.New(apierr.AccessDenied, "only the operator may call %s", c.action), "not the operator")
	case tenantAdmin, tenantWide:
		if p.IsOperator() {
			return h.resolveOperatorTenant(c)
		}
		if p.Role != tenancy.RoleAdmin {
			return h.deny(c, apierr.New(apierr.AccessDenied, "a %s key may not use the admin API; use an admin key", p.Role), "role "+p.Role.String())
		}
		if p.Policy != nil {
			// NB: a policy narrows a temporary credential to some tables and
			// DynamoDB actions; none of them is an admin action, and minting
			// or rotating a key would escape the policy and the expiry.
			return h.deny(c, apierr.New(apierr.AccessDenied, "a temporary credential narrowed to tables or actions may not use the admin API"), "narrowed session")
		}
		id, err := tenancy.ParseTenantID(c.r.PathValue("tenant"))
		if err != nil || strings.Contains(c.r.PathValue("tenant"), "-") || id != p.Tenant {
			// NB: the same answer as for a tenant that does not exist.
			return h.deny(c, tenantNotFound(), "cross-tenant attempt on "+apierr.Clip(c.r.URL.Path))
		}
		if aud == tenantWide && p.Env != LiveEnv {
			return h.deny(c, apierr.New(apierr.AccessDenied, "%s reports on every environment of the tenant; use an admin key of the %s environment (this key is of %s)", c.action, LiveEnv, p.Env), "environment "+apierr.Clip(p.Env)+" on a tenant-wide route")
		}
		t, err := h.o.Catalog.Tenant(c.ctx, id)
		if err != nil {
			return err
		}
		c.tenant = t
		return nil
	}
	return apierr.New(apierr.Internal, "admin: unknown audience")
}

// resolveOperatorTenant loads the {tenant} of the path (an id or a slug)
// for the operator.
func (h *Handler) resolveOperatorTenant(c *call) error {
	ref := c.r.PathValue("tenant")
	if ref == "" {
		return nil
	}
	t, err := h.lookupTenant(c.ctx, ref)
	if err != nil {
		return err
	}
	c.tenant = t
	return nil
}

func (h *Handler) lookupTenant(ctx context.Context, ref string) (catalog.Tenant, error) {
	var t catalog.Tenant
	var err error
	if id, perr := tenancy.ParseTenantID(ref); perr == nil {
		t, err = h.o.Catalog.Tenant(ctx, id)
	} else if catalog.ValidSlug(ref) {
		t, err = h.o.Catalog.TenantBySlug(ctx, ref)
	} else {
		return t, tenantNotFound()
	}
	if errors.Is(err, catalog.ErrNotFound) {
		return t, tenantNotFound()
	}
	return t, err
}

func tenantNotFound() error { return apierr.New(apierr.NotFound, "tenant not found") }

// authenticate checks an API key given as a bearer token or a SigV4
// signature.
func (h *Handler) authenticate(c *call, hv string) (tenancy.Principal, error) {
	if tok, ok := strings.CutPrefix(hv, "Bearer "); ok {
		tok = strings.TrimSpace(tok)
		if !strings.HasPrefix(tok, auth.KeyPrefix) {
			return tenancy.Principal{}, apierr.New(apierr.Unauthorized, "the bearer token is not a tenantdb API key")
		}
		p, err := h.o.Auth.AuthenticateBearer(c.ctx, tok)
		return p, authError(err)
	}
	if strings.HasPrefix(hv, sigv4.Algorithm) {
		body, err := io.ReadAll(c.r.Body)
		if err != nil {
			return tenancy.Principal{}, apierr.New(apierr.RequestTooLarge, "request body too large")
		}
		c.r.Body = io.NopCloser(strings.NewReader(string(body)))
		p, err := h.o.Auth.Authenticate(c.ctx, &sigv4.Request{
			Method: c.r.Method, Path: c.r.URL.EscapedPath(), RawQuery: c.r.URL.RawQuery,
			Host: c.r.Host, Header: c.r.Header, Body: body,
		})
		return p, authError(err)
	}
	return tenancy.Principal{}, apierr.New(apierr.Unauthorized, "unsupported Authorization scheme; use Bearer <key>")
}

// authError maps the data plane's authentication errors to 401 (or keeps
// TenantSuspended's 403) for the REST API.
func authError(err error) error {
	if err == nil {
		return nil
	}
	var e *apierr.Error
	if errors.As(err, &e) {
		switch e.Kind {
		case apierr.UnrecognizedClient, apierr.InvalidSignature, apierr.IncompleteSignature,
			apierr.MissingAuthenticationToken, apierr.ExpiredToken:
			return &apierr.Error{Kind: apierr.Unauthorized, Message: e.Message, Cause: err}
		}
	}
	return err
}

// deny records a refused call on the caller's own log and returns err.
func (h *Handler) deny(c *call, err error, reason string) error {
	h.o.Audit.Denied(c.ctx, c.p, "admin:"+c.action, reason)
	return err
}

// record appends a successful action to tenant t's log.
func (h *Handler) record(c *call, t tenancy.TenantID, action, target string) {
	ev := audit.Event{Actor: c.p.KeyID, Role: c.p.Role.String(), Action: action, Target: target, Source: c.r.RemoteAddr}
	if c.claims.Subject != "" {
		ev.Actor, ev.Role = "sub:"+c.claims.Subject, "platform-user"
	}
	if _, err := h.o.Audit.Append(c.ctx, t, ev); err != nil {
		h.log.Error("audit append failed", "action", action, "tenant", t.String(), "err", err)
	}
}

func (h *Handler) whoami(c *call) error {
	out := WhoAmI{AccessKeyID: c.p.KeyID, Role: c.p.Role.String()}
	if !c.p.IsOperator() {
		out.TenantID, out.Env = c.p.Tenant.String(), c.p.Env
	}
	return WriteJSON(c.w, http.StatusOK, out)
}

// decode reads the JSON body strictly into v. An empty body leaves v as is.
func decode(r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apierr.New(apierr.RequestTooLarge, "request body exceeds %d bytes", maxBody)
		}
		return apierr.Wrap(apierr.Validation, err, "could not read the request body")
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apierr.Validationf("malformed JSON body: %s", apierr.Clip(err.Error()))
	}
	if dec.More() {
		return apierr.Validationf("malformed JSON body: more than one value")
	}
	return nil
}

// WriteJSON writes v as the JSON response with status.
func WriteJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("admin: encode response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
	return nil
}

// WriteError writes err as {"error": {"code", "message"}} with its status.
func WriteError(w http.ResponseWriter, err error) { writeError(w, err) }

func writeError(w http.ResponseWriter, err error) {
	var e *apierr.Error
	if !errors.As(err, &e) {
		e = &apierr.Error{Kind: apierr.Internal, Message: "internal server error"}
	}
	msg := e.Message
	if e.Kind == apierr.Internal && msg == "" {
		msg = "internal server error"
	}
	body := errorBody{}
	body.Error.Code = Code(e.Kind)
	body.Error.Message = msg
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(Status(e.Kind))
	w.Write(append(b, '\n'))
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}
