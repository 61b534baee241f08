// Package console serves tenantdb's web console under /console/: server-
// rendered HTML (html/template) with a little plain JavaScript, embedded in
// the binary, for the operator and for tenant admins.
//
// A browser signs in with an API key (the operator key or a tenant admin
// key). The console keeps the key in a server-side session, sealed in the
// control plane's store so that every gateway of a fleet serves it (the
// cookie holds only a random token; HttpOnly, SameSite=Strict, Secure over
// TLS, 30 minutes idle) and acts with it, and only with it: every page calls
// the admin API (/v1/, through the public client package) and the
// DynamoDB API in-process, through the same handlers the network reaches,
// with the session's key as bearer token or SigV4 credential. So a tenant
// admin sees exactly what the admin API lets its key see.
//
// NB: the console never decides isolation. It never looks a tenant up by
// itself, never widens a credential, and shows the API's refusals as they
// are (a tenant admin asking for another tenant gets the API's 404).
//
// Every POST carries the session's CSRF token (sign-in: a pre-session
// token, double-submitted), compared in constant time.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/tenantdb/tenantdb/client"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is the path the console is served under.
const Prefix = "/console/"

const (
	cookieName    = "tenantdb_console"
	preCookieName = "tenantdb_console_signin"
	// IdleTimeout ends a session not used for this long.
	IdleTimeout = 30 * time.Minute
	// MaxLifetime ends any session this long after sign-in.
	MaxLifetime = 8 * time.Hour
)

// Options configure a Handler.
type Options struct {
	// Admin is the /v1/ admin API handler. Required.
	Admin http.Handler
	// Sessions is where sessions are kept: the control plane's store, so
	// that every gateway of a fleet serves every session. Required.
	Sessions Store
	// Server is the server's own handler: DynamoDB requests (POST /) and
	// /metrics. nil disables the table and health pages; SetServer sets it
	// once the server exists.
	Server http.Handler
	// Region is the region the console signs DynamoDB requests for.
	Region string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
	// Now; nil means time.Now.
	Now func() time.Time
}

// Handler serves the console.
type Handler struct {
	o        Options
	mux      *http.ServeMux
	sessions *store
	pages    map[string]*template.Template
	log      *slog.Logger
	// addrLimit and keyLimit hold back sign-ins after failures, per client
	// address and per access key id (ratelimit.go).
	addrLimit, keyLimit *limiter
	healthState
}

// New returns the console handler.
func New(o Options) (*Handler, error) {
	if o.Admin == nil {
		return nil, errors.New("console: Admin is required")
	}
	if o.Sessions == nil {
		return nil, errors.New("console: Sessions is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	h := &Handler{o: o, mux: http.NewServeMux(), sessions: newStore(o.Sessions, IdleTimeout, MaxLifetime, o.Now),
		log:       o.Logger.With("component", "console"),
		addrLimit: newLimiter(signinAddrBurst, signinAddrRefill), keyLimit: newLimiter(signinKeyBurst, signinKeyRefill)}
	if err := h.parse(); err != nil {
		return nil, err
	}
	h.routes()
	return h, nil
}

func (h *Handler) parse() error {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return err
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return err
	}
	h.pages = map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimPrefix(n, "templates/")
		if base == "layout.html" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return err
		}
		h.pages[strings.TrimSuffix(base, ".html")] = t
	}
	return nil
}

var funcs = template.FuncMap{
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"tsp": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"path": url.PathEscape,
	// ms formats a DynamoDB epoch-seconds timestamp.
	"ms": func(f float64) string {
		if f == 0 {
			return ""
		}
		return epochTime(f).Format("2006-01-02 15:04:05Z")
	},
	"f1": func(f float64) string { return fmt.Sprintf("%.1f", f) },
}

// ServeHTTP serves everything under /console/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// SetServer sets Options.Server, for the assembly that builds the server
// after the console (which the server serves). NB: call it before the
// server serves a request.
func (h *Handler) SetServer(s http.Handler) { h.o.Server = s }

// page is what every template gets.
type page struct {
	Title   string
	Session *session
	CSRF    string
	Flash   string
	Error   string
	Status  int
	Tenant  *client.Tenant
	Data    any
}

func (h *Handler) render(w http.ResponseWriter, status int, name string, p page) {
	t := h.pages[name]
	if t == nil {
		http.Error(w, "no such page", http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout.html", p); err != nil {
		h.log.Error("rendering", "page", name, "err", err)
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// req is one authenticated console request: the session, an admin client
// acting with the session's key, and (for pages of a tenant) the tenant as
// the admin API showed it to that key.
type req struct {
	w     http.ResponseWriter
	r     *http.Request
	ctx   context.Context
	s     *session
	admin *client.Client
}

// page returns a page for this request.
func (q *req) page(title string, data any) page {
	return page{Title: title, Session: q.s, CSRF: q.s.csrf, Data: data}
}

// authed wraps a page handler of API key sessions: no session redirects to
// sign-in; a POST without the session's CSRF token is refused; a platform
// user's session is sent to its memberships (those pages act with API
// keys, which it has none of).
func (h *Handler) authed(fn func(q *req)) http.HandlerFunc {
	return h.session(false, fn)
}

// platform wraps a page handler of platform user sessions.
func (h *Handler) platform(fn func(q *req)) http.HandlerFunc {
	return h.session(true, fn)
}

func (h *Handler) session(platform bool, fn func(q *req)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var s *session
		if c, err := r.Cookie(cookieName); err == nil {
			var err error
			if s, err = h.sessions.get(r.Context(), c.Value); err != nil {
				h.log.Error("reading a session", "err", err)
				h.render(w, http.StatusServiceUnavailable, "error", page{Title: "Unavailable", Status: http.StatusServiceUnavailable,
					Error: "The console could not read your session. Try again."})
				return
			}
		}
		if s == nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, Prefix+"signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			h.render(w, http.StatusUnauthorized, "error", page{Title: "Signed out", Error: "Your session has ended. Sign in again.", Status: http.StatusUnauthorized})
			return
		}
		if r.Method == http.MethodPost {
			// NB: room for an item of DynamoDB's 400 KB limit as JSON.
			r.Body = http.MaxBytesReader(w, r.Body, 2<<20)
			if err := r.ParseForm(); err != nil || !equal(r.PostFormValue("csrf"), s.csrf) {
				h.render(w, http.StatusForbidden, "error", page{Title: "Refused", Session: s, CSRF: s.csrf, Status: http.StatusForbidden,
					Error: "This form is stale or did not come from this console (CSRF check failed). Reload the page and try again."})
				return
			}
		}
		if s.Platform() != platform && r.URL.Path != Prefix+"signout" {
			where := Prefix + "memberships"
			if !s.Platform() {
				where = Prefix
			}
			http.Redirect(w, r, where, http.StatusSeeOther)
			return
		}
		ctx := withRemoteAddr(r.Context(), r.RemoteAddr)
		q := &req{w: w, r: r, ctx: ctx, s: s, admin: &client.Client{
			Endpoint: "http://console.tenantdb.internal",
			Key:      s.key,
			Token:    s.token,
			HTTP:     &http.Client{Transport: inProc{h.o.Admin}, Timeout: 30 * time.Second},
		}}
		fn(q)
	}
}

// fail shows err: the admin or DynamoDB API's refusal with its status, or
// ends the session if the key no longer authenticates.
func (h *Handler) fail(q *req, err error) {
	status, msg := http.StatusInternalServerError, err.Error()
	var ce *client.Error
	var de *dynamoError
	switch {
	case errors.As(err, &ce):
		status, msg = ce.Status, ce.Message
		if ce.Code != "" {
			msg = ce.Code + ": " + ce.Message
		}
		if status == http.StatusUnauthorized {
			h.endSession(q.w, q.r, q.s)
			h.render(q.w, status, "error", page{Title: "Signed out", Status: status,
				Error: "Your key no longer authenticates (" + msg + "). Sign in again."})
			return
		}
	case errors.As(err, &de):
		status, msg = de.Status, de.Type+": "+de.Message
	default:
		h.log.Error("console request", "path", q.r.URL.Path, "err", err)
		msg = "internal error"
	}
	p := q.page(http.StatusText(status), nil)
	p.Error, p.Status = msg, status
	h.render(q.w, status, "error", p)
}

// redirect answers a POST with a redirect to path (303) and a message.
func (h *Handler) redirect(q *req, path, flash string) {
	if flash != "" {
		if err := h.sessions.setFlash(q.ctx, q.s, flash); err != nil {
			h.log.Warn("keeping a message for the next page", "err", err)
		}
	}
	http.Redirect(q.w, q.r, path, http.StatusSeeOther)
}

func (h *Handler) show(q *req, name string, p page) {
	var err error
	if p.Flash, err = h.sessions.takeFlash(q.ctx, q.s); err != nil {
		h.log.Warn("clearing the message shown", "err", err)
	}
	h.render(q.w, http.StatusOK, name, p)
}

// showTenant shows page name of tenant t, titled title, with data.
func (h *Handler) showTenant(q *req, t client.Tenant, name, title string, data any) {
	p := q.page(title, data)
	p.Tenant = &t
	h.show(q, name, p)
}

// tenantURL is the console's path of tenant t's page rest ("/backups").
func tenantURL(t client.Tenant, rest string) string {
	return Prefix + "tenants/" + url.PathEscape(t.ID) + rest
}

func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name:     name,
		Value:    value,
		Path:     Prefix,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	})
}

func (h *Handler) endSession(w http.ResponseWriter, r *http.Request, s *session) {
	if err := h.sessions.delete(r.Context(), s); err != nil {
		h.log.Error("ending a session", "err", err)
	}
	h.setCookie(w, r, cookieName, "", -1)
}

// dynamo returns a DynamoDB client acting with the session's key.
func (h *Handler) dynamo(q *req) *dynamoClient {
	akid, secret := splitKey(q.s.key)
	return &dynamoClient{h: h.o.Server, region: h.o.Region, signer: v4.NewSigner(),
		creds: aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret}}
}

// splitKey splits a full key sk_<env>_<tenant>_<id>_<secret> into its
// access key id and secret.
func splitKey(full string) (akid, secret string) {
	i := strings.LastIndexByte(full, '_')
	if i < 0 {
		return full, ""
	}
	return full[:i], full[i+1:]
}
