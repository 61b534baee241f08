package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// JWKS keeps a JWTVerifier's public keys loaded from a JWKS file or URL
// and reloads them (at most once a minute) when a token names a key it
// does not know, which is how key rotation at the identity provider shows.
type JWKS struct {
	source string
	v      *auth.JWTVerifier
	client *http.Client
	log    *slog.Logger

	mu   sync.Mutex
	last time.Time
}

// LoadJWKS loads the key set at source (an http(s) URL or a file path)
// into v. It fails if the keys cannot be loaded now.
func LoadJWKS(ctx context.Context, source string, v *auth.JWTVerifier, log *slog.Logger) (*JWKS, error) {
	if log == nil {
		log = slog.Default()
	}
	j := &JWKS{source: source, v: v, client: &http.Client{Timeout: 10 * time.Second}, log: log}
	if err := j.load(ctx); err != nil {
		return nil, err
	}
	j.last = time.Now()
	return j, nil
}

func (j *JWKS) load(ctx context.Context) error {
	var data []byte
	if strings.HasPrefix(j.source, "https://") || strings.HasPrefix(j.source, "http://") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.source, nil)
		if err != nil {
			return fmt.Errorf("admin: JWKS: %w", err)
		}
		resp, err := j.client.Do(req)
		if err != nil {
			return fmt.Errorf("admin: JWKS: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("admin: JWKS: %s answered %s", j.source, resp.Status)
		}
		if data, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20)); err != nil {
			return fmt.Errorf("admin: JWKS: %w", err)
		}
	} else {
		var err error
		if data, err = os.ReadFile(j.source); err != nil {
			return fmt.Errorf("admin: JWKS: %w", err)
		}
	}
	keys, err := auth.ParseJWKS(data)
	if err != nil {
		return err
	}
	j.v.SetKeys(keys)
	return nil
}

// Refresh reloads the keys unless that was done less than a minute ago.
func (j *JWKS) Refresh(ctx context.Context) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if time.Since(j.last) < time.Minute {
		return
	}
	j.last = time.Now()
	if err := j.load(ctx); err != nil {
		j.log.Warn("admin: reloading JWKS failed", "source", j.source, "err", err)
	}
}

func (h *Handler) verifyJWT(ctx context.Context, tok string) (auth.Claims, error) {
	claims, err := h.o.JWT.Verify(tok)
	if errors.Is(err, auth.ErrUnknownKey) && h.o.JWKS != nil {
		h.o.JWKS.Refresh(ctx)
		claims, err = h.o.JWT.Verify(tok)
	}
	return claims, err
}

// platformTenants lists exactly the memberships of the token's sub.
func (h *Handler) platformTenants(c *call) error {
	ms, err := h.o.Catalog.Memberships(c.ctx, c.claims.Subject)
	if err != nil {
		return err
	}
	out := PlatformTenants{Sub: c.claims.Subject, Tenants: make([]Membership, 0, len(ms))}
	for _, m := range ms {
		t, err := h.o.Catalog.Tenant(c.ctx, m.Tenant)
		if errors.Is(err, catalog.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		out.Tenants = append(out.Tenants, membershipOut(m, t))
	}
	return WriteJSON(c.w, http.StatusOK, out)
}

func membershipOut(m catalog.Membership, t catalog.Tenant) Membership {
	return Membership{
		Sub: m.Sub, TenantID: m.Tenant.String(), Name: t.Name, Slug: t.Slug, Status: string(t.Status),
		Role: m.Role.String(), Via: m.Via, CreatedAt: m.Created,
	}
}

func (h *Handler) createInvite(c *call) error {
	var req InviteRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	role, err := parseRole(req.Role, tenancy.RoleRead)
	if err != nil {
		return err
	}
	ttl := 7 * 24 * time.Hour
	if req.TTLSeconds != 0 {
		if req.TTLSeconds < 60 || req.TTLSeconds > 30*24*3600 {
			return apierr.Validationf("ttl_seconds must be between 60 and 2592000")
		}
		ttl = time.Duration(req.TTLSeconds) * time.Second
	}
	exp := h.o.Now().Add(ttl).UTC()
	tok, err := h.o.Catalog.CreateInvite(c.ctx, c.s, catalog.Invite{Role: role, Email: req.Email, Expires: exp, CreatedBy: c.p.KeyID})
	if err != nil {
		return err
	}
	h.record(c, c.s, "invite.create", "role="+role.String()+" email="+req.Email)
	return WriteJSON(c.w, http.StatusCreated, Invite{Token: tok, TenantID: c.s.Tenant().String(), Role: role.String(), ExpiresAt: exp})
}

func (h *Handler) acceptInvite(c *call) error {
	var req AcceptInviteRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	m, err := h.o.Catalog.AcceptInvite(c.ctx, req.Token, c.claims.Subject)
	if err != nil {
		return err
	}
	t, err := h.o.Catalog.Tenant(c.ctx, m.Tenant)
	if err != nil {
		return err
	}
	s, err := h.o.Guard.AdmitMember(m.Sub, m.Tenant, m.Role, c.action)
	if err != nil {
		return err
	}
	h.record(c, s, "invite.accept", "sub:"+m.Sub)
	return WriteJSON(c.w, http.StatusCreated, membershipOut(m, t))
}

// addMember seeds a membership (operator only).
func (h *Handler) addMember(c *call) error {
	var req AddMemberRequest
	if err := decode(c.r, &req); err != nil {
		return err
	}
	role, err := parseRole(req.Role, tenancy.RoleAdmin)
	if err != nil {
		return err
	}
	m, err := h.o.Catalog.AddMembership(c.ctx, c.s, catalog.Membership{Sub: req.Sub, Role: role, Via: "seed"})
	if err != nil {
		return err
	}
	h.record(c, c.s, "member.add", "sub:"+m.Sub+" role="+role.String())
	return WriteJSON(c.w, http.StatusCreated, membershipOut(m, c.tenant))
}
