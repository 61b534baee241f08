package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Status is a tenant's lifecycle state.
type Status string

// The statuses.
const (
	Active    Status = "active"
	Suspended Status = "suspended" // every request of the tenant is refused
	Deleting  Status = "deleting"  // being removed; refused like Suspended
)

// Tier is where a tenant's data lives by default.
type Tier string

// The tiers.
const (
	Pool Tier = "pool"
	Silo Tier = "silo"
)

// Tenant is a tenant's record.
type Tenant struct {
	ID      tenancy.TenantID
	Name    string
	Slug    string
	Status  Status
	Tier    Tier
	Created time.Time
}

// NewTenant describes a tenant to create.
type NewTenant struct {
	Name string
	// Slug is the unique short name; derived from Name when empty.
	Slug string
	// Tier is Pool when empty.
	Tier Tier
	// OwnerSub, if set, is a platform user who becomes the tenant's first
	// member (role admin).
	OwnerSub string
	// ID, if not zero, is used instead of a random id (seeding, tests).
	ID tenancy.TenantID
}

type tenantRecord struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Slug    string    `json:"slug"`
	Status  Status    `json:"status"`
	Tier    Tier      `json:"tier"`
	Created time.Time `json:"created"`
}

func encodeTenant(t *Tenant) []byte {
	b, _ := json.Marshal(tenantRecord{ID: t.ID.String(), Name: t.Name, Slug: t.Slug, Status: t.Status, Tier: t.Tier, Created: t.Created})
	return b
}

func decodeTenant(v []byte) (*Tenant, error) {
	var r tenantRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return nil, fmt.Errorf("catalog: corrupt tenant record: %w", err)
	}
	id, err := tenancy.ParseTenantID(r.ID)
	if err != nil {
		return nil, fmt.Errorf("catalog: corrupt tenant record: %w", err)
	}
	return &Tenant{ID: id, Name: r.Name, Slug: r.Slug, Status: r.Status, Tier: r.Tier, Created: r.Created}, nil
}

// MaxNameLen bounds a tenant's display name.
const MaxNameLen = 128

// MaxSlugLen bounds a tenant's slug.
const MaxSlugLen = 63

// Slugify derives a slug from a name: lower-case letters and digits, runs
// of anything else replaced by one '-', trimmed, at most MaxSlugLen bytes.
func Slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= MaxSlugLen {
				break
			}
			continue
		}
		dash = true
	}
	return strings.TrimRight(b.String(), "-")
}

// ValidSlug reports whether s is a valid slug.
func ValidSlug(s string) bool {
	if s == "" || len(s) > MaxSlugLen || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func validName(s string) error {
	if strings.TrimSpace(s) == "" {
		return apierr.Validationf("name must not be empty")
	}
	if len(s) > MaxNameLen || !utf8.ValidString(s) {
		return apierr.Validationf("name must be valid UTF-8 of at most %d bytes", MaxNameLen)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return apierr.Validationf("name must not contain control characters")
		}
	}
	return nil
}

// CreateTenant creates an active tenant and, if nt.OwnerSub is set, its
// owner's membership, atomically. Errors: Validation for a bad name, slug
// or tier; Conflict if the slug (or given id) is taken.
func (c *Catalog) CreateTenant(ctx context.Context, nt NewTenant) (Tenant, error) {
	if err := validName(nt.Name); err != nil {
		return Tenant{}, err
	}
	slug := nt.Slug
	if slug == "" {
		slug = Slugify(nt.Name)
		if slug == "" {
			return Tenant{}, apierr.Validationf("name must contain a letter or digit (or give a slug)")
		}
	}
	if !ValidSlug(slug) {
		return Tenant{}, apierr.Validationf("slug must be 1 to %d lower-case letters, digits and inner dashes", MaxSlugLen)
	}
	tier := nt.Tier
	if tier == "" {
		tier = Pool
	}
	if tier != Pool && tier != Silo {
		return Tenant{}, apierr.Validationf("tier must be %q or %q", Pool, Silo)
	}
	if nt.OwnerSub != "" {
		if err := validSub(nt.OwnerSub); err != nil {
			return Tenant{}, err
		}
	}
	id := nt.ID
	if id.IsZero() {
		id = tenancy.NewTenantID()
	}
	t := &Tenant{ID: id, Name: nt.Name, Slug: slug, Status: Active, Tier: tier, Created: c.now().UTC()}

	start := time.Now()
	enc := encodeTenant(t)
	err := c.apply(ctx, func(b *kv.Batch) {
		b.SetIfAbsent(keyspace.TenantRecord(id), enc)
		b.SetIfAbsent(keyspace.TenantSlug(slug), id[:])
		if nt.OwnerSub != "" {
			m := Membership{Sub: nt.OwnerSub, Tenant: id, Role: tenancy.RoleAdmin, Via: "tenant-create", Created: t.Created}
			putMembership(b, m)
		}
	})
	if errors.Is(err, kv.ErrConflict) {
		// NB: the engine (or the local store's lock) ordered this write
		// after another that took the slug or the id: one of them wins.
		if _, err := c.get(ctx, keyspace.TenantSlug(slug)); err == nil {
			return Tenant{}, apierr.New(apierr.Conflict, "a tenant with slug %q already exists", slug)
		}
		return Tenant{}, apierr.New(apierr.Conflict, "a tenant with id %s already exists", id)
	}
	if err != nil {
		return Tenant{}, err
	}
	c.cache(t, start)
	return *t, nil
}

// cache keeps t, read or written by an operation that started at at
// (NB: its age counts from then: a change committed after that may be
// missing from it; Options.Settle relies on it).
func (c *Catalog) cache(t *Tenant, at time.Time) {
	c.mu.Lock()
	c.tenants[t.ID] = cachedTenant{t: t, at: at}
	c.mu.Unlock()
}

// Tenant returns tenant id's record, from memory after the first read
// (read again once older than Options.MaxStale, if set; with MaxStale a
// tenant that is not active is read again every time, so that a resume
// through another gateway is seen at once). Errors: NotFound (wrapping
// ErrNotFound) if there is no such tenant.
func (c *Catalog) Tenant(ctx context.Context, id tenancy.TenantID) (Tenant, error) {
	c.mu.RLock()
	ct, ok := c.tenants[id]
	c.mu.RUnlock()
	if ok && (c.maxStale <= 0 || (time.Since(ct.at) < c.maxStale && ct.t.Status == Active)) {
		return *ct.t, nil
	}
	if id.IsZero() {
		return Tenant{}, notFound("tenant")
	}
	start := time.Now()
	t, _, err := c.readTenant(ctx, id)
	if errors.Is(err, ErrNotFound) {
		if ok {
			c.mu.Lock()
			delete(c.tenants, id) // deleted by another gateway
			c.mu.Unlock()
		}
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, err
	}
	c.cache(t, start)
	return *t, nil
}

// readTenant reads tenant id's stored record (not the cache) and returns
// it with its stored bytes, for a write conditioned on them. Errors:
// ErrNotFound.
func (c *Catalog) readTenant(ctx context.Context, id tenancy.TenantID) (*Tenant, []byte, error) {
	v, err := c.get(ctx, keyspace.TenantRecord(id))
	if err != nil {
		return nil, nil, err
	}
	t, err := decodeTenant(v)
	return t, v, err
}

// TenantBySlug returns the tenant with the given slug.
func (c *Catalog) TenantBySlug(ctx context.Context, slug string) (Tenant, error) {
	v, err := c.get(ctx, keyspace.TenantSlug(slug))
	if errors.Is(err, ErrNotFound) {
		return Tenant{}, notFound("tenant")
	}
	if err != nil {
		return Tenant{}, err
	}
	var id tenancy.TenantID
	if len(v) != len(id) {
		return Tenant{}, fmt.Errorf("catalog: corrupt slug entry for %q", slug)
	}
	copy(id[:], v)
	return c.Tenant(ctx, id)
}

// Tenants returns all tenants, ordered by slug.
func (c *Catalog) Tenants(ctx context.Context) ([]Tenant, error) {
	var ids []tenancy.TenantID
	lo, hi := keyspace.TenantSlugs()
	err := c.scan(ctx, lo, hi, func(_, v []byte) bool {
		var id tenancy.TenantID
		if len(v) == len(id) {
			copy(id[:], v)
			ids = append(ids, id)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out := make([]Tenant, 0, len(ids))
	for _, id := range ids {
		t, err := c.Tenant(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue // a deletion in progress
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// SetStatus changes the scope's tenant's status and returns the new
// record. A deleting tenant cannot be suspended or resumed. Errors:
// NotFound, Validation.
func (c *Catalog) SetStatus(ctx context.Context, sc tenancy.Scope, s Status) (Tenant, error) {
	id, err := scoped(sc)
	if err != nil {
		return Tenant{}, err
	}
	return c.setStatus(ctx, id, s)
}

func (c *Catalog) setStatus(ctx context.Context, id tenancy.TenantID, s Status) (Tenant, error) {
	if s != Active && s != Suspended && s != Deleting {
		return Tenant{}, apierr.Validationf("unknown status %q", s)
	}
	for range maxRetries {
		start := time.Now()
		t, old, err := c.readTenant(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return Tenant{}, notFound("tenant")
		}
		if err != nil {
			return Tenant{}, err
		}
		if t.Status == Deleting && s != Deleting {
			return Tenant{}, apierr.Validationf("tenant is being deleted")
		}
		changed := t.Status != s
		if changed {
			t.Status = s
			err := c.apply(ctx, func(b *kv.Batch) { b.SetIfEquals(keyspace.TenantRecord(id), old, encodeTenant(t)) })
			if errors.Is(err, kv.ErrConflict) {
				continue
			}
			if err != nil {
				return Tenant{}, err
			}
		}
		committed := time.Now()
		c.cache(t, start)
		c.notify(Change{Tenant: id})
		if s != Active {
			// NB: narrowing: returns once no gateway can hold the tenant
			// as it was (Options.Settle); also when it already was so,
			// since the write that made it so may be that recent.
			if err := c.settleNarrowed(ctx, committed); err != nil {
				return Tenant{}, err
			}
		}
		return *t, nil
	}
	return Tenant{}, contended()
}

// SetTier changes the scope's tenant's tier and returns the new record.
// It says only where tables that have no placement of the tenant's data
// yet put it: the engine changes it once it has moved the tenant's data
// and fixed where every existing table's data stays (engine.Tiers). A
// deleting tenant's tier does not change. Errors: NotFound, Validation.
func (c *Catalog) SetTier(ctx context.Context, sc tenancy.Scope, tier Tier) (Tenant, error) {
	id, err := scoped(sc)
	if err != nil {
		return Tenant{}, err
	}
	if tier != Pool && tier != Silo {
		return Tenant{}, apierr.Validationf("tier must be %q or %q", Pool, Silo)
	}
	for range maxRetries {
		start := time.Now()
		t, old, err := c.readTenant(ctx, id)
		if errors.Is(err, ErrNotFound) {
			return Tenant{}, notFound("tenant")
		}
		if err != nil {
			return Tenant{}, err
		}
		if t.Status == Deleting {
			return Tenant{}, apierr.Validationf("tenant is being deleted")
		}
		if t.Tier != tier {
			t.Tier = tier
			err := c.apply(ctx, func(b *kv.Batch) { b.SetIfEquals(keyspace.TenantRecord(id), old, encodeTenant(t)) })
			if errors.Is(err, kv.ErrConflict) {
				continue
			}
			if err != nil {
				return Tenant{}, err
			}
		}
		c.cache(t, start)
		c.notify(Change{Tenant: id})
		return *t, nil
	}
	return Tenant{}, contended()
}

// DeleteTenant removes tenant id and everything it owns: it marks the
// tenant Deleting (so auth refuses its credentials from the next request),
// calls drop (if not nil) for stores outside the main key space such as
// silo tables, then in one atomic batch deletes the tenant's whole key
// range, its slug and its members' membership entries. Other tenants'
// keys are not touched. If drop fails the tenant stays Deleting and
// DeleteTenant may be called again.
func (c *Catalog) DeleteTenant(ctx context.Context, s tenancy.Scope, drop func(context.Context, tenancy.Scope) error) error {
	id, err := scoped(s)
	if err != nil {
		return err
	}
	t, err := c.setStatus(ctx, id, Deleting)
	if err != nil {
		return err
	}
	if drop != nil {
		if err := drop(ctx, s); err != nil {
			return apierr.Wrap(apierr.Internal, err, "deleting the tenant's stores failed; the tenant stays in status deleting and the deletion can be retried")
		}
	}
	defer c.notify(Change{Tenant: id})
	var subs []string
	mlo, mhi := keyspace.TenantMembers(id)
	prefix := len(mlo)
	if err := c.scan(ctx, mlo, mhi, func(k, _ []byte) bool {
		subs = append(subs, string(k[prefix:]))
		return true
	}); err != nil {
		return err
	}
	lo, hi := keyspace.TenantRange(id)
	rec := keyspace.TenantRecord(id)
	if c.settleD > 0 {
		// NB: gateways may hold what they read of the tenant (its data
		// key, its namespaces' registry entries and incarnation) for
		// their MaxStale: its record (deleting) and slug stay until that
		// has passed since everything else was deleted, so that a tenant
		// created again with its id or slug finds nothing of it cached.
		err = c.apply(ctx, func(b *kv.Batch) {
			b.DeleteRange(lo, rec)
			b.DeleteRange(append(rec[:len(rec):len(rec)], 0), hi)
			for _, s := range subs {
				b.Delete(keyspace.Membership(s, id))
			}
		})
		if err != nil {
			return err
		}
		if err := c.settle(ctx, time.Now()); err != nil {
			return err
		}
		subs = nil
	}
	err = c.apply(ctx, func(b *kv.Batch) {
		// NB: the tenant's record last. On an engine this batch is not
		// one transaction (enginekv deletes ranges first, in pages), and a
		// deletion cut off midway must leave the tenant Deleting, so that
		// retrying it finds the tenant and finishes. After a settle the
		// ranges are deleted again: a gateway that had not yet seen the
		// deletion may have flushed usage counters into them meanwhile
		// (its flush is conditioned on the record, which is still there).
		b.DeleteRange(lo, rec)
		b.DeleteRange(append(rec[:len(rec):len(rec)], 0), hi)
		b.Delete(keyspace.TenantSlug(t.Slug))
		for _, s := range subs {
			b.Delete(keyspace.Membership(s, id))
		}
		b.Delete(rec)
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.tenants, id)
	c.mu.Unlock()
	return nil
}
