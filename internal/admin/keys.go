package admin

import (
	"errors"
	"net/http"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// NB: a tenant admin key acts only within its own environment: the env is
// a data boundary, so a test admin key must not mint, list, revoke or
// rotate live keys.

// denySession refuses temporary credentials the minting of API keys: a
// key outlives the session, so a 15-minute admin session could otherwise
// leave a permanent admin key behind (sessions cannot mint sessions
// either; see auth.IssueSession).
func (h *Handler) denySession(c *call) error {
	if _, session, err := auth.ParseAccessKeyID(c.p.KeyID); err == nil && !session {
		return nil
	}
	return h.deny(c, apierr.New(apierr.AccessDenied, "temporary credentials cannot create or rotate API keys"), "session minting a key")
}

func (h *Handler) createKey(c *call) error {
	if err := h.denySession(c); err != nil {
		return err
	}
	var req CreateKeyRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	role, err := parseRole(req.Role, tenancy.RoleApp)
	if err != nil {
		return err
	}
	env := req.Env
	if env == "" {
		env = LiveEnv
		if !c.p.IsOperator() {
			env = c.p.Env
		}
	}
	if !c.p.IsOperator() && env != c.p.Env {
		return h.deny(c, apierr.New(apierr.AccessDenied, "an admin key may create keys only in its own environment (%s)", c.p.Env), "other environment "+apierr.Clip(env))
	}
	nk := auth.NewKey{Tenant: c.s.Tenant(), Role: role, Env: env, CreatedBy: c.p.KeyID}
	if req.ExpiresAt != nil {
		nk.Expires = *req.ExpiresAt
	}
	ik, err := h.o.Auth.CreateKey(c.ctx, nk)
	if err != nil {
		return err
	}
	h.record(c, c.s, "key.create", ik.Key.AccessKeyID())
	return WriteJSON(c.w, http.StatusCreated, issuedOut(ik, h.o.Now()))
}

func issuedOut(ik auth.IssuedKey, now time.Time) Key {
	k := keyOut(ik.Credential, now)
	k.SecretAccessKey = ik.Key.Secret
	k.Key = ik.Key.String()
	return k
}

func parseRole(s string, def tenancy.Role) (tenancy.Role, error) {
	if s == "" {
		return def, nil
	}
	r, ok := tenancy.ParseRole(s)
	if !ok || r == tenancy.RoleOperator {
		return 0, apierr.Validationf("role must be read, app or admin")
	}
	return r, nil
}

func (h *Handler) listKeys(c *call) error {
	crs, err := h.o.Catalog.Credentials(c.ctx, c.s)
	if err != nil {
		return err
	}
	now := h.o.Now()
	out := make([]Key, 0, len(crs))
	for _, cr := range crs {
		if c.p.IsOperator() || cr.Env == c.p.Env {
			out = append(out, keyOut(cr, now))
		}
	}
	return WriteJSON(c.w, http.StatusOK, out)
}

// key loads the {key} of the path (a key id or an access key id) of the
// call's tenant, within the caller's environment for tenant admins.
func (h *Handler) key(c *call) (catalog.Credential, error) {
	ref := c.r.PathValue("key")
	id := ref
	if k, session, err := auth.ParseAccessKeyID(ref); err == nil && !session {
		if k.Tenant != c.s.Tenant() {
			return catalog.Credential{}, apierr.New(apierr.NotFound, "key not found")
		}
		id = k.ID
	}
	cr, err := h.o.Catalog.Credential(c.ctx, c.s.Tenant(), id)
	if errors.Is(err, catalog.ErrNotFound) {
		return cr, apierr.New(apierr.NotFound, "key not found")
	}
	if err != nil {
		return cr, err
	}
	if !c.p.IsOperator() && cr.Env != c.p.Env {
		return cr, h.deny(c, apierr.New(apierr.NotFound, "key not found"), "key of another environment")
	}
	return cr, nil
}

func (h *Handler) showKey(c *call) error {
	cr, err := h.key(c)
	if err != nil {
		return err
	}
	return WriteJSON(c.w, http.StatusOK, keyOut(cr, h.o.Now()))
}

func (h *Handler) revokeKey(c *call) error {
	cr, err := h.key(c)
	if err != nil {
		return err
	}
	cr, err = h.o.Catalog.RevokeCredential(c.ctx, c.s, cr.ID)
	if err != nil {
		return err
	}
	h.record(c, c.s, "key.revoke", cr.AccessKeyID)
	return WriteJSON(c.w, http.StatusOK, keyOut(cr, h.o.Now()))
}

func (h *Handler) rotateKey(c *call) error {
	if err := h.denySession(c); err != nil {
		return err
	}
	var req RotateKeyRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	if req.GraceSeconds < 0 || req.GraceSeconds > 30*24*3600 {
		return apierr.Validationf("grace_seconds must be between 0 and 2592000")
	}
	cr, err := h.key(c)
	if err != nil {
		return err
	}
	ik, err := h.o.Auth.RotateKey(c.ctx, c.s, cr.ID, time.Duration(req.GraceSeconds)*time.Second, c.p.KeyID)
	if err != nil {
		return err
	}
	h.record(c, c.s, "key.rotate", cr.AccessKeyID+" -> "+ik.Key.AccessKeyID())
	return WriteJSON(c.w, http.StatusCreated, issuedOut(ik, h.o.Now()))
}

func (h *Handler) createSession(c *call) error {
	var req SessionRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	role, err := parseRole(req.Role, tenancy.RoleApp)
	if err != nil {
		return err
	}
	env := req.Env
	if env == "" && !c.p.IsOperator() {
		env = c.p.Env
	}
	if req.DurationSeconds < 0 {
		return apierr.Validationf("duration_seconds must be positive")
	}
	sr := auth.SessionRequest{
		Tenant: c.s.Tenant(), Role: role, Env: env, Issuer: c.p,
		Duration: time.Duration(req.DurationSeconds) * time.Second,
	}
	if len(req.Tables) > 0 || len(req.Actions) > 0 {
		sr.Policy = &tenancy.Policy{Tables: req.Tables, Actions: req.Actions}
	}
	s, err := h.o.Auth.IssueSession(c.ctx, sr)
	if apierr.Is(err, apierr.AccessDenied) {
		return h.deny(c, err, "session: "+apierr.Message(err))
	}
	if err != nil {
		return err
	}
	h.record(c, c.s, "session.issue", s.AccessKeyID+" role="+s.Role.String()+" env="+s.Env+" until="+s.Expiration.Format(time.RFC3339))
	out := Session{
		Version: 1, AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey, SessionToken: s.SessionToken,
		Expiration: s.Expiration, TenantID: s.Tenant.String(), Role: s.Role.String(), Env: s.Env,
	}
	if s.Policy != nil {
		out.Tables, out.Actions = s.Policy.Tables, s.Policy.Actions
	}
	return WriteJSON(c.w, http.StatusCreated, out)
}
