package engine

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// ttlHorizon: as in DynamoDB, TTL values more than five years in the past
// are not treated as expiry times.
const ttlHorizon = 5 * 365 * 24 * time.Hour

// UpdateTimeToLive enables or disables TTL on a table. Only the table's
// owner may change it. Errors: ValidationException (already
// enabled/disabled, bad attribute name), ResourceNotFoundException,
// AccessDeniedException.
func (e *Engine) UpdateTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.UpdateTimeToLiveInput) (*wire.UpdateTimeToLiveOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	spec := in.TimeToLiveSpecification
	if n := len(spec.AttributeName); n < 1 || n > 255 {
		return nil, apierr.Validationf("1 validation error detected: Value '%s' at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must have length between 1 and 255", spec.AttributeName)
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	tg, err := e.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	t := tg.Table
	if err := e.res.CheckManage(s, t); err != nil {
		return nil, err
	}
	switch {
	case spec.Enabled && t.TTLEnabled:
		return nil, apierr.Validationf("TimeToLive is already enabled")
	case !spec.Enabled && !t.TTLEnabled:
		return nil, apierr.Validationf("TimeToLive is already disabled")
	case !spec.Enabled && t.TTLAttribute != spec.AttributeName:
		return nil, apierr.Validationf("TimeToLive is active on a different AttributeName: current AttributeName is %s", t.TTLAttribute)
	}
	c := t.Clone()
	c.TTLEnabled = spec.Enabled
	c.TTLAttribute = spec.AttributeName
	if err := e.persist(c); err != nil {
		return nil, err
	}
	return &wire.UpdateTimeToLiveOutput{TimeToLiveSpecification: spec}, nil
}

// DescribeTimeToLive reports a table's TTL setting. Errors:
// ResourceNotFoundException.
func (e *Engine) DescribeTimeToLive(ctx context.Context, s tenancy.Scope, in *wire.DescribeTimeToLiveInput) (*wire.DescribeTimeToLiveOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	tg, err := e.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	t := tg.Table
	d := wire.TimeToLiveDescription{TimeToLiveStatus: "DISABLED"}
	if t.TTLEnabled {
		d = wire.TimeToLiveDescription{TimeToLiveStatus: "ENABLED", AttributeName: t.TTLAttribute}
	}
	return &wire.DescribeTimeToLiveOutput{TimeToLiveDescription: d}, nil
}

// ttlScanBudget bounds how many items one sweep pass reads, so expiry is
// a steady background trickle rather than a full scan of every table each
// interval; a pass resumes where the previous one stopped. (DynamoDB, too,
// deletes expired items "within a few days", not at once.)
const ttlScanBudget = 50_000

// ttlCursor is where the next sweep pass resumes: a registry entry
// (table, namespace) and an item key within it.
type ttlCursor struct {
	mu     sync.Mutex // one pass at a time
	pair   []byte
	item   []byte
	budget int // items per pass; 0 means ttlScanBudget (tests lower it)
}

// sweep runs one pass of background maintenance: it deletes expired items
// of TTL-enabled tables, namespace by namespace, reading at most
// ttlScanBudget items, and forgets expired transaction tokens.
func (e *Engine) sweep() error {
	e.ttl.mu.Lock()
	defer e.ttl.mu.Unlock()
	pairs, err := e.registryPairs()
	if err != nil {
		return err
	}
	if len(pairs) == 0 {
		return nil
	}
	now := e.opts.Now()
	first := sort.Search(len(pairs), func(i int) bool { return bytes.Compare(pairs[i].key, e.ttl.pair) >= 0 })
	budget := ttlScanBudget
	if e.ttl.budget > 0 {
		budget = e.ttl.budget
	}
	nss := map[string]bool{}
	for n := 0; n < len(pairs); n++ {
		p := pairs[(first+n)%len(pairs)]
		if e.stopping() {
			return nil
		}
		nss[string(p.ns)] = true
		from := []byte(nil)
		if bytes.Equal(p.key, e.ttl.pair) {
			from = e.ttl.item
		}
		t, err := e.res.TableByID(context.Background(), p.id, p.ns)
		if err != nil {
			return err
		}
		if t == nil || !t.TTLEnabled {
			continue
		}
		resume, err := e.expire(t, p.ns, now, from, &budget)
		if err != nil {
			return err
		}
		if resume != nil {
			e.ttl.pair, e.ttl.item = p.key, resume
			break
		}
		e.ttl.pair, e.ttl.item = nil, nil
	}
	for ns := range nss {
		if err := e.sweepTokens([]byte(ns)); err != nil {
			return apierr.Wrap(apierr.Internal, err, "sweeping transaction tokens")
		}
	}
	return nil
}

// expired reports whether item's TTL attribute is a Number of epoch
// seconds in [now-5y, now].
func expired(item attr.Item, name string, now, horizon attr.Number) bool {
	v, ok := item[name]
	if !ok || v.Type != attr.N {
		return false
	}
	return v.N.Cmp(now) <= 0 && v.N.Cmp(horizon) >= 0
}

// expire deletes the items of table t in namespace ns that are expired at
// now, with their index entries and counters, reading only ns's range,
// from item key from (nil: the start) while *budget lasts. It returns the
// key to resume from, or nil when it reached the end of the range.
func (e *Engine) expire(t *schema.Table, ns []byte, now time.Time, from []byte, budget *int) ([]byte, error) {
	nowN, err := attr.ParseNumber(strconv.FormatInt(now.Unix(), 10))
	if err != nil {
		return nil, err
	}
	horizonN, err := attr.ParseNumber(strconv.FormatInt(now.Add(-ttlHorizon).Unix(), 10))
	if err != nil {
		return nil, err
	}
	if e.fenced(ns, t) != nil {
		// NB: being restored in place (rewind.go): expiry waits for the
		// restore, and the sweep goes on with the other namespaces.
		return nil, nil
	}
	db, release, err := e.backgroundStore(tenantOfNS(ns), t)
	if err != nil || db == nil {
		return nil, err // nil: t was dropped meanwhile
	}
	defer release()
	h := &handle{Target: resolve.Background(t, ns), db: db, vals: e.vals}
	p := keyspace.Items(ns, t.ID)
	lo, hi := p, keyspace.PrefixEnd(p)
	if from != nil && bytes.Compare(from, lo) > 0 {
		lo = from
	}
	return e.scanChunks(db, lo, hi, func(keys, vals [][]byte) (bool, error) {
		*budget -= len(keys)
		var ws []*itemWrite
		for i, v := range vals {
			item, err := e.vals.decode(keys[i], v)
			if err != nil {
				return false, err
			}
			if expired(item, t.TTLAttribute, nowN, horizonN) {
				ws = append(ws, newWrite(h, t.KeyOf(item)))
			}
		}
		if len(ws) > 0 {
			err := e.locked(ws, nil, func() error {
				for _, w := range ws {
					// NB: re-checked under the lock: the item may have been
					// rewritten since it was scanned.
					w.del = w.old != nil && w.h.Table.TTLEnabled && expired(w.old, w.h.Table.TTLAttribute, nowN, horizonN)
					w.expired = w.del
				}
				return e.commit(ws, nil)
			})
			if apierr.Is(err, apierr.ResourceNotFound) || apierr.Is(err, apierr.ResourceInUse) {
				return false, nil // the table was dropped, or its restore began, meanwhile
			}
			if err != nil {
				return false, err
			}
			if e.opts.Expired != nil && slices.ContainsFunc(ws, func(w *itemWrite) bool { return w.del }) {
				e.opts.Expired(tenantOfNS(ns))
			}
		}
		return *budget > 0, nil
	})
}
