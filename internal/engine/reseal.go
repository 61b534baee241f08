package engine

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// ResealTenant re-encrypts, under the current version of the scope's
// tenant's data key, every item, index entry and change record of the
// tenant that is sealed under an older version (or, for a tenant from
// before encryption, not sealed at all): the data half of a tenant key
// rotation (tenantkey.Keyring.StartRotation makes the new version
// current first). It works table by table in the order of the registry,
// online: items are rewritten under their stripes, as any write, so a
// concurrent write is never lost. After each table it calls progress
// with the values re-encrypted so far and a cursor; given that cursor
// back as from, a later call (after a crash) skips the tables done.
// Values already current are skipped, so running it again is harmless.
//
// It stops early, returning ctx's error, when ctx ends or the engine
// closes.
func (e *Engine) ResealTenant(ctx context.Context, s tenancy.Scope, from string, progress func(done int64, cursor string) error) error {
	t := s.Tenant()
	if !s.Valid() || t.IsZero() {
		return apierr.New(apierr.Validation, "no tenant to re-encrypt")
	}
	// NB: a write that sealed under the old version before the rotation
	// began holds its stripes until it commits; after the barrier every
	// such write has committed, so what the passes below find is all
	// there is to re-encrypt (later writes seal under the new version).
	e.locks.barrier()
	cursor, err := hex.DecodeString(from)
	if err != nil {
		return apierr.New(apierr.Validation, "bad re-encryption cursor")
	}
	pairs, err := e.registryPairs()
	if err != nil {
		return err
	}
	prefix := keyspace.Tenant(t)
	var done int64
	stores := map[*storage.DB]map[string]bool{e.db: {}}
	for _, p := range pairs {
		if !bytes.HasPrefix(p.ns, prefix) {
			continue
		}
		if err := e.stopErr(ctx); err != nil {
			return err
		}
		tbl, err := e.res.TableByID(ctx, p.id, p.ns)
		if err != nil {
			return err
		}
		if tbl == nil {
			continue // dropped
		}
		db, rel, err := e.backgroundStore(t, tbl)
		if err != nil {
			return err
		}
		if db == nil {
			continue
		}
		if stores[db] == nil {
			// NB: one reference per store, held until the change records
			// below are re-encrypted too.
			defer rel()
			stores[db] = map[string]bool{}
		} else {
			rel()
		}
		stores[db][string(p.ns)] = true
		if cursor != nil && bytes.Compare(p.key, cursor) <= 0 {
			continue // re-encrypted before a restart
		}
		h := &handle{Target: resolve.Background(tbl, p.ns), db: db, vals: e.vals}
		n, err := e.resealItems(ctx, h)
		if err != nil {
			return err
		}
		done += n
		if err := progress(done, hex.EncodeToString(p.key)); err != nil {
			return err
		}
	}
	// Change records, of live and dropped tables alike, in every store.
	lo, hi := keyspace.TenantChangeLogEntries(t)
	it := e.db.NewIter(lo, hi)
	for ok := it.First(); ok; ok = it.Next() {
		if ns, _, _, ok := keyspace.ParseChangeLogEntry(it.Key()); ok {
			stores[e.db][string(ns)] = true
		}
	}
	if err := it.Close(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "listing change logs")
	}
	for db, nss := range stores {
		for ns := range nss {
			if err := e.stopErr(ctx); err != nil {
				return err
			}
			n, err := e.clog.Reseal(db, []byte(ns))
			if err != nil {
				return apierr.Wrap(apierr.Internal, err, "re-encrypting change records")
			}
			done += n
		}
	}
	return progress(done, hex.EncodeToString(cursor))
}

func (e *Engine) stopErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if e.stopping() {
		return errors.New("engine: closing")
	}
	return nil
}

// resealItems re-encrypts the items of h's table in h's namespace and
// their index entries, chunk by chunk under the items' stripes.
func (e *Engine) resealItems(ctx context.Context, h *handle) (int64, error) {
	var done int64
	p := keyspace.Items(h.Namespace, h.Table.ID)
	next, err := e.scanChunks(h.db, p, keyspace.PrefixEnd(p), func(keys, vals [][]byte) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		var ws []*itemWrite
		for i, v := range vals {
			item, err := e.vals.decode(keys[i], v)
			if err != nil {
				return false, err
			}
			ws = append(ws, newWrite(h, h.Table.KeyOf(item)))
		}
		err := e.locked(ws, nil, func() error {
			b := h.db.NewBatch()
			defer b.Close()
			for _, w := range ws {
				if w.old == nil {
					continue // deleted since the scan
				}
				n, err := e.resealItem(b, w)
				if err != nil {
					return err
				}
				done += n
			}
			if b.Len() == 0 {
				return nil
			}
			if err := h.db.Apply(b); err != nil {
				return apierr.Wrap(apierr.Internal, err, "re-encrypting items")
			}
			return nil
		})
		if apierr.Is(err, apierr.ResourceNotFound) {
			return false, nil // the table (or tenant) was dropped meanwhile
		}
		return err == nil, err
	})
	if err == nil && next != nil {
		err = e.stopErr(ctx) // stopped early
		if err == nil {
			err = errors.New("engine: re-encryption stopped early")
		}
	}
	return done, err
}

// resealItem adds to b the re-encryption of w's item (read under its
// stripe by locked) and of its index entries, where they are not sealed
// under the current key version. REQUIRES: w's stripe held.
func (e *Engine) resealItem(b *storage.Batch, w *itemWrite) (int64, error) {
	var n int64
	keys := [][]byte{w.pk}
	for _, ix := range w.h.Table.Indexes {
		if k := indexKey(w.h.Table, w.h.Namespace, ix, w.old); k != nil {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		v, err := w.h.db.Get(k)
		if errors.Is(err, storage.ErrNotFound) {
			continue // an entry a backfill has not written yet
		}
		if err != nil {
			return n, apierr.Wrap(apierr.Internal, err, "reading for re-encryption")
		}
		cur, err := e.vals.current(k, v)
		if err != nil {
			return n, err
		}
		if cur {
			continue
		}
		it, err := e.vals.decode(k, v)
		if err != nil {
			return n, err
		}
		sealed, err := e.vals.encode(k, it)
		if err != nil {
			return n, err
		}
		b.Set(k, sealed)
		n++
	}
	return n, nil
}
