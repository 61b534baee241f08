// Package admin serves tenantdb's admin REST API under /v1/. Its client
// (which the tenantdb CLI uses) is the public package
// github.com/tenantdb/tenantdb/client, whose types are the API's shapes.
//
// Every request is authenticated: "Authorization: Bearer <full API key>"
// (or a SigV4 signature) for the operator and tenant admin keys, and
// "Authorization: Bearer <OIDC JWT>" for platform users on the /v1/platform
// and /v1/invites endpoints. Authorization is the tenancy guard's
// (Guard.AdmitAdmin), once per request, by the route's audience; the Scope
// it admits is the only way a handler names a tenant to the catalog, the
// audit log, the quota manager and the tenant lifecycle:
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
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/lifecycle"
	"github.com/tenantdb/tenantdb/internal/sigv4"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

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
	// Guard admits every request into a Scope; nil means a zero Guard.
	Guard *tenancy.Guard
	// Lifecycle creates, suspends, resumes and deletes tenants; nil means
	// one over Catalog and Audit alone (no quota or engine state).
	Lifecycle *lifecycle.Service
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
	// patterns are the routes handle registered, for Routes.
	patterns []string
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
	if o.Guard == nil {
		o.Guard = &tenancy.Guard{}
	}
	if o.Lifecycle == nil {
		o.Lifecycle = lifecycle.New(lifecycle.Options{Catalog: o.Catalog, Audit: o.Audit})
	}
	h := &Handler{o: o, mux: http.NewServeMux(), log: o.Logger.With("component", "admin")}
	h.routes()
	return h, nil
}

// LiveEnv is the default environment of keys, the one whose admin keys
// may read a tenant's tenant-wide reports (audit log, usage).
const LiveEnv = tenancy.LiveEnv

// audience says who may call a route: an API key of an admin class, or a
// platform user.
type audience tenancy.AdminClass

const (
	operatorOnly = audience(tenancy.AdminOperator)   // the operator
	tenantAdmin  = audience(tenancy.AdminTenant)     // the operator or an admin key of the {tenant} in the path
	tenantWide   = audience(tenancy.AdminTenantWide) // tenantAdmin, but only admin keys of the live environment
	anyKey       = audience(tenancy.AdminSelf)       // any authenticated API key
	platformUser = audience(0)                       // a platform user's JWT
)

// call is what a route's function gets: the caller, the Scope the guard
// admitted it to and, for tenant routes, the tenant.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	p      tenancy.Principal
	s      tenancy.Scope  // API key routes: the admitted scope
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
// caller and the Scope the guard admitted it to, bound to the tenant, and
// writes the response; WriteJSON and WriteError write the API's shapes.
func (h *Handler) HandleTenant(pattern string, fn func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope)) {
	h.handle(pattern, tenantAdmin, func(c *call) error {
		fn(c.w, c.r, c.p, c.s)
		return nil
	})
}

// HandleTenantWide is HandleTenant for a route that reports on every
// environment of the tenant (usage): admin keys of other environments than
// live are refused.
func (h *Handler) HandleTenantWide(pattern string, fn func(w http.ResponseWriter, r *http.Request, p tenancy.Principal, s tenancy.Scope)) {
	h.handle(pattern, tenantWide, func(c *call) error {
		fn(c.w, c.r, c.p, c.s)
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

// Routes returns the pattern ("METHOD /v1/path") of every route the
// handler serves, in the order they were added.
func (h *Handler) Routes() []string { return append([]string(nil), h.patterns...) }

func (h *Handler) handle(pattern string, aud audience, fn func(*call) error) {
	h.handleLimit(pattern, aud, maxBody, fn)
}

// handleLimit is handle for a route whose bodies may hold up to limit
// bytes.
func (h *Handler) handleLimit(pattern string, aud audience, limit int64, fn func(*call) error) {
	h.patterns = append(h.patterns, pattern)
	method, path, _ := strings.Cut(pattern, " ")
	action := method + " " + path
	h.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, limit)
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
	// The target is the {tenant} of the path: for the operator, the tenant
	// it names by id or slug (a missing one is 404); for anyone else, the
	// id it names, or none (zero) for a slug or another spelling, which
	// the guard refuses like another tenant's id.
	ref := c.r.PathValue("tenant")
	var target tenancy.TenantID
	if p.IsOperator() && ref != "" && aud != anyKey {
		t, err := h.lookupTenant(c.ctx, ref)
		if err != nil {
			return err
		}
		c.tenant, target = t, t.ID
	} else if id, err := tenancy.ParseTenantID(ref); err == nil && !strings.Contains(ref, "-") {
		target = id
	}
	s, err := h.o.Guard.AdmitAdmin(p, tenancy.AdminClass(aud), c.action, target)
	if err != nil {
		reason := "refused"
		var r *tenancy.AdminRefusal
		if errors.As(err, &r) {
			reason = r.Reason
		}
		if apierr.KindOf(err) == apierr.NotFound {
			reason += " on " + apierr.Clip(c.r.URL.Path)
		}
		return h.deny(c, err, reason)
	}
	c.s = s
	if !p.IsOperator() && ref != "" && aud != anyKey {
		t, err := h.o.Catalog.Tenant(c.ctx, s.Tenant())
		if err != nil {
			return err
		}
		c.tenant = t
	}
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

// record appends a successful action to the log of s's tenant.
func (h *Handler) record(c *call, s tenancy.Scope, action, target string) {
	ev := audit.Event{Actor: c.p.KeyID, Role: c.p.Role.String(), Action: action, Target: target, Source: c.r.RemoteAddr}
	if c.claims.Subject != "" {
		ev.Actor, ev.Role = "sub:"+c.claims.Subject, "platform-user"
	}
	if _, err := h.o.Audit.Append(c.ctx, s, ev); err != nil {
		h.log.Error("audit append failed", "action", action, "tenant", s.Tenant().String(), "err", err)
	}
}

// operatorOn admits the operator of call c to tenant t (keyspace.Platform
// for the platform itself): the scope of a lifecycle action's records in
// the platform log and in a tenant the call has just created.
func (h *Handler) operatorOn(c *call, t tenancy.TenantID) (tenancy.Scope, error) {
	return h.o.Guard.AdmitAdmin(c.p, tenancy.AdminOperator, c.action, t)
}

// recordPlatform appends a successful operator action to the platform log.
func (h *Handler) recordPlatform(c *call, action, target string) {
	s, err := h.operatorOn(c, keyspace.Platform)
	if err != nil {
		h.log.Error("audit append failed", "action", action, "tenant", "platform", "err", err)
		return
	}
	h.record(c, s, action, target)
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
