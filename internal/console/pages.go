package console

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

func (h *Handler) routes() {
	static, _ := fs.Sub(staticFS, "static")
	h.mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /console/signin", h.signinForm)
	h.mux.HandleFunc("POST /console/signin", h.signin)
	h.mux.HandleFunc("POST /console/signout", h.session(false, h.signout))
	h.mux.HandleFunc("GET /console/memberships", h.platform(h.memberships))
	h.mux.HandleFunc("POST /console/invites/accept", h.platform(h.acceptInvite))
	h.mux.HandleFunc("GET /console/{$}", h.authed(h.home))
	h.mux.HandleFunc("GET /console", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	})

	h.mux.HandleFunc("GET /console/tenants", h.authed(h.tenants))
	h.mux.HandleFunc("POST /console/tenants", h.authed(h.createTenant))
	h.mux.HandleFunc("GET /console/tenants/{tenant}", h.authed(h.tenant))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/suspend", h.authed(h.suspend))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/resume", h.authed(h.resume))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/delete", h.authed(h.deleteForm))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/delete", h.authed(h.deleteTenant))

	h.mux.HandleFunc("POST /console/tenants/{tenant}/keys", h.authed(h.createKey))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/keys/{key}/revoke", h.authed(h.revokeKey))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/keys/{key}/rotate", h.authed(h.rotateKey))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/quota", h.authed(h.quota))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/quota", h.authed(h.setQuota))

	h.mux.HandleFunc("GET /console/audit", h.authed(h.audit))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/audit", h.authed(h.audit))

	h.mux.HandleFunc("GET /console/usage", h.authed(h.topTenants))
	h.mux.HandleFunc("GET /console/health", h.authed(h.health))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/usage", h.authed(h.usage))

	h.mux.HandleFunc("GET /console/tenants/{tenant}/tables", h.authed(h.tables))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/tables/{table}", h.authed(h.browse))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/tables/{table}/item", h.authed(h.item))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/tables/{table}/item/delete", h.authed(h.deleteItem))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/tables/{table}/item", h.authed(h.putItem))

	h.featureRoutes()

	h.mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		h.render(w, http.StatusNotFound, "error", page{Title: "Not found", Status: http.StatusNotFound, Error: "There is no such console page."})
	})
}

// --- sign in and out ---

type signinData struct {
	Next  string
	Token string
}

func (h *Handler) signinForm(w http.ResponseWriter, r *http.Request) {
	h.signinPage(w, r, http.StatusOK, "")
}

func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	tok := token()
	h.setCookie(w, r, preCookieName, tok, 600)
	h.render(w, status, "signin", page{Title: "Sign in", Error: msg, Status: status,
		Data: signinData{Next: safeNext(r.FormValue("next")), Token: tok}})
}

// safeNext keeps a post-sign-in redirect inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.Contains(next, "..") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		h.signinPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	pre, _ := r.Cookie(preCookieName)
	if pre == nil || !equal(pre.Value, r.PostFormValue("csrf")) {
		h.signinPage(w, r, http.StatusForbidden, "The sign-in form expired or did not come from this console. Try again.")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if key == "" {
		h.signinPage(w, r, http.StatusBadRequest, "Enter an API key.")
		return
	}
	// Rate limits, before the key is checked at all.
	now, addr, keyID := h.o.Now(), clientAddr(r.RemoteAddr), ""
	if strings.HasPrefix(key, "sk_") {
		keyID, _ = splitKey(key)
	}
	if d := h.addrLimit.wait(addr, now); d > 0 {
		h.signinLimited(w, r, d, fmt.Sprintf("Too many failed sign-ins from your address (%s). Wait %s and try again.", addr, d))
		return
	}
	if keyID != "" {
		if d := h.keyLimit.wait(keyID, now); d > 0 {
			h.signinLimited(w, r, d, fmt.Sprintf("Too many failed sign-ins with key %s. Wait %s and try again.", keyID, d))
			return
		}
	}
	failed := func() {
		h.addrLimit.fail(addr, now)
		if keyID != "" {
			h.keyLimit.fail(keyID, now)
		}
	}
	c := &client.Client{Endpoint: "http://console.tenantdb.internal",
		HTTP: &http.Client{Transport: inProc{h.o.Admin}, Timeout: 30 * time.Second}}
	ctx := withRemoteAddr(r.Context(), r.RemoteAddr)
	var who client.WhoAmI
	var jwt string
	if strings.HasPrefix(key, "sk_") {
		c.Key = key
		var err error
		if who, err = c.WhoAmI(ctx); err != nil {
			failed()
			// NB: one message for every refusal: nothing about the key is revealed.
			h.signinPage(w, r, http.StatusUnauthorized, "That key was not accepted.")
			return
		}
		if who.Role != "operator" && who.Role != "admin" {
			failed()
			h.signinPage(w, r, http.StatusForbidden, "Only the operator key or a tenant admin key can sign in to the console.")
			return
		}
	} else {
		// A platform user's OIDC token: the admin API verifies it.
		c.Token, jwt = key, key
		pt, err := c.PlatformTenants(ctx)
		if err != nil {
			failed()
			h.signinPage(w, r, http.StatusUnauthorized, "That key was not accepted.")
			return
		}
		who = client.WhoAmI{AccessKeyID: "sub:" + pt.Sub, Role: "platform user"}
	}
	s, err := h.sessions.create(ctx, c.Key, jwt, who)
	if err != nil {
		h.log.Error("creating a session", "err", err)
		h.signinPage(w, r, http.StatusServiceUnavailable, "The console could not start your session. Try again.")
		return
	}
	h.setCookie(w, r, preCookieName, "", -1)
	h.setCookie(w, r, cookieName, s.id, 0)
	http.Redirect(w, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

// signinLimited refuses a sign-in that a rate limit holds back: 429,
// Retry-After, and msg on the sign-in form.
func (h *Handler) signinLimited(w http.ResponseWriter, r *http.Request, wait time.Duration, msg string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)))
	h.signinPage(w, r, http.StatusTooManyRequests, msg)
}

func (h *Handler) signout(q *req) {
	h.endSession(q.w, q.r, q.s)
	http.Redirect(q.w, q.r, Prefix+"signin", http.StatusSeeOther)
}

// memberships lists the tenants of a platform user's session.
func (h *Handler) memberships(q *req) {
	pt, err := q.admin.PlatformTenants(q.ctx)
	if err != nil {
		h.fail(q, err)
		return
	}
	h.show(q, "memberships", q.page("My tenants", pt))
}

func (h *Handler) acceptInvite(q *req) {
	m, err := q.admin.AcceptInvite(q.ctx, strings.TrimSpace(q.r.PostFormValue("invite")))
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, Prefix+"memberships", "You are now a member ("+m.Role+") of "+m.Name+".")
}

func (h *Handler) home(q *req) {
	if q.s.Operator() {
		http.Redirect(q.w, q.r, Prefix+"tenants", http.StatusSeeOther)
		return
	}
	http.Redirect(q.w, q.r, Prefix+"tenants/"+url.PathEscape(q.s.who.TenantID), http.StatusSeeOther)
}

// --- tenants ---

func (h *Handler) tenants(q *req) {
	ts, err := q.admin.Tenants(q.ctx)
	if err != nil {
		h.fail(q, err)
		return
	}
	h.show(q, "tenants", q.page("Tenants", ts))
}

func (h *Handler) createTenant(q *req) {
	t, err := q.admin.CreateTenant(q.ctx, client.CreateTenantRequest{
		Name: strings.TrimSpace(q.r.PostFormValue("name")),
		Slug: strings.TrimSpace(q.r.PostFormValue("slug")),
	})
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, ""), "Created tenant "+t.Name+".")
}

// tenantOf returns the path's tenant as the admin API shows it to the
// session's key (for another tenant's admin key: the API's 404).
func (h *Handler) tenantOf(q *req) (client.Tenant, bool) {
	t, err := q.admin.Tenant(q.ctx, q.r.PathValue("tenant"))
	if err != nil {
		h.fail(q, err)
		return t, false
	}
	return t, true
}

type tenantData struct {
	Keys    []client.Key
	KeysErr string
}

func (h *Handler) tenant(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	var d tenantData
	keys, err := q.admin.Keys(q.ctx, t.ID)
	if err != nil {
		d.KeysErr = err.Error()
	}
	d.Keys = keys
	h.showTenant(q, t, "tenant", "Tenant "+t.Name, d)
}

func (h *Handler) suspend(q *req) {
	t, err := q.admin.SuspendTenant(q.ctx, q.r.PathValue("tenant"))
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, ""), "Suspended "+t.Name+": its keys are refused until it is resumed.")
}

func (h *Handler) resume(q *req) {
	t, err := q.admin.ResumeTenant(q.ctx, q.r.PathValue("tenant"))
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, ""), "Resumed "+t.Name+".")
}

func (h *Handler) deleteForm(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	h.showTenant(q, t, "delete", "Delete "+t.Name, nil)
}

func (h *Handler) deleteTenant(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	if q.r.PostFormValue("confirm") != t.Slug {
		p := q.page("Delete "+t.Name, nil)
		p.Tenant = &t
		p.Error = "Type the tenant's slug exactly to confirm the deletion."
		h.render(q.w, http.StatusBadRequest, "delete", p)
		return
	}
	if _, err := q.admin.DeleteTenant(q.ctx, t.ID); err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, Prefix+"tenants", "Deleted tenant "+t.Name+" and all its data.")
}

// --- keys ---

func (h *Handler) createKey(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	k, err := q.admin.CreateKey(q.ctx, t.ID, client.CreateKeyRequest{
		Role: q.r.PostFormValue("role"),
		Env:  strings.TrimSpace(q.r.PostFormValue("env")),
	})
	if err != nil {
		h.fail(q, err)
		return
	}
	// NB: the secret is rendered once, into this answer (no-store), and
	// kept nowhere.
	p := q.page("New key", k)
	p.Tenant = &t
	h.render(q.w, http.StatusOK, "keycreated", p)
}

func (h *Handler) revokeKey(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	k, err := q.admin.RevokeKey(q.ctx, t.ID, q.r.PathValue("key"))
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, ""), "Revoked key "+k.AccessKeyID+".")
}

// --- audit ---

type auditData struct {
	Records  []client.AuditRecord
	Verify   client.VerifyResult
	VerifyOK bool
	Outcome  string
	Action   string
	Actor    string
	Scanned  int
	Denied   int64
	Platform bool
}

// auditShown and auditScanned bound the audit view: the newest matching
// records among the newest scanned.
const (
	auditShown   = 200
	auditScanned = 20000
)

func (h *Handler) audit(q *req) {
	tenant := q.r.PathValue("tenant")
	var t client.Tenant
	if tenant != "" {
		var ok bool
		if t, ok = h.tenantOf(q); !ok {
			return
		}
		tenant = t.ID
	}
	d := auditData{
		Outcome:  q.r.FormValue("outcome"),
		Action:   strings.TrimSpace(q.r.FormValue("action")),
		Actor:    strings.TrimSpace(q.r.FormValue("actor")),
		Platform: tenant == "",
	}
	match := func(r client.AuditRecord) bool {
		switch d.Outcome {
		case "denied":
			if r.DeniedAttempts() == 0 {
				return false
			}
		case "ok", "error":
			if r.Outcome != d.Outcome {
				return false
			}
		}
		return strings.Contains(strings.ToLower(r.Action), strings.ToLower(d.Action)) &&
			strings.Contains(strings.ToLower(r.Actor), strings.ToLower(d.Actor))
	}
	var after uint64
	for d.Scanned < auditScanned {
		pg, err := q.admin.Audit(q.ctx, tenant, client.AuditQuery{After: after, Limit: 1000})
		if err != nil {
			h.fail(q, err)
			return
		}
		for _, r := range pg.Records {
			d.Scanned++
			if match(r) {
				d.Records = append(d.Records, r)
				d.Denied += r.DeniedAttempts()
			}
		}
		if len(d.Records) > auditShown {
			d.Records = slices.Clone(d.Records[len(d.Records)-auditShown:])
		}
		if pg.NextAfter == 0 || len(pg.Records) == 0 {
			break
		}
		after = pg.NextAfter
	}
	slices.Reverse(d.Records) // newest first
	v, err := q.admin.VerifyAudit(q.ctx, tenant)
	if err != nil {
		h.fail(q, err)
		return
	}
	d.Verify = v
	title := "Platform audit log"
	p := q.page(title, d)
	if tenant != "" {
		p.Title = "Audit log of " + t.Name
		p.Tenant = &t
	}
	h.show(q, "audit", p)
}
