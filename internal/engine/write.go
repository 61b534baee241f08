package engine

import (
	"bytes"
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The write path. Every item write — PutItem, UpdateItem, DeleteItem, a
// BatchWriteItem, a TransactWriteItems, a TTL expiry — goes through
// e.locked and e.commit:
//
//  1. lock the stripes of every physical item key involved (in stripe
//     order, so writers of overlapping sets cannot deadlock);
//  2. re-read each table's current definition (a concurrent UpdateTable or
//     DeleteTable is thus either wholly before or wholly after the write);
//  3. read the current items;
//  4. let the operation decide (conditions, updates, validation);
//  5. build ONE storage batch per store with the items, the index entry
//     deletes and puts of every index whose entry changes, and the counter
//     deltas of the table and its indexes (and, in the main store's, the
//     request's usage: metered), and apply it (synced);
//  6. unlock.
//
// See DESIGN.md for why this is serializable.

// itemWrite is one item an operation reads under its lock and may change.
type itemWrite struct {
	h   *handle
	key attr.Item // the item's key attributes
	pk  []byte    // its physical key

	// The current item, read under the lock: whether it exists, its size,
	// and the item itself, which is nil if absent or not decoded (sizeOnly).
	found   bool
	oldSize int
	old     attr.Item
	// oldEnc is the current item's stored encoding, kept instead of
	// decoding it when only a stream's old image needs it (sizeOnly).
	oldEnc []byte
	// sizeOnly says that the operation needs only found and oldSize (no
	// condition, no ReturnValues): locked then decodes the current item
	// only if the table has indexes, whose old entries stage must find.
	sizeOnly bool

	// The decision: put new, delete, or (neither) leave the item alone.
	put bool
	del bool
	new attr.Item
	// newEnc is new's encoding once stage has made it (for the change
	// record, so that the item is encoded once).
	newEnc []byte
	// expired marks a deletion by TTL expiry (its change record names the
	// service as the user).
	expired bool
	// rewind marks a write of an in-place restore (rewind.go), the only
	// one allowed while its table is fenced for its namespace.
	rewind bool

	cost writeCost // filled by commit
}

// writeCost is the capacity a committed item write consumed.
type writeCost struct {
	table   float64
	indexes map[*schema.Index]float64
}

func (c writeCost) total() float64 {
	n := c.table
	for _, u := range c.indexes {
		n += u
	}
	return n
}

// newWrite prepares a write of the item with key attributes key (already
// validated) through handle h.
func newWrite(h *handle, key attr.Item) *itemWrite {
	return &itemWrite{h: h, key: key, pk: itemKey(h.Table, h.Namespace, key)}
}

// locked locks the items of ws (plus the extra lock keys), refreshes their
// tables' definitions, reads their current items and runs fn, which
// decides and usually calls e.commit. The locks are released when locked
// returns.
func (e *Engine) locked(ws []*itemWrite, extra [][]byte, fn func() error) error {
	keys := make([][]byte, 0, len(ws)+len(extra))
	for _, w := range ws {
		keys = append(keys, w.pk)
	}
	keys = append(keys, extra...)
	unlock := e.locks.lock(keys...)
	if then := e.moveCheck(ws); then != nil {
		// NB: a cutover holds this tenant's writers of a table, or the
		// table's data moved since the handle was opened: wait (or
		// re-point) without the stripes, then start again.
		unlock()
		if err := then(); err != nil {
			return err
		}
		return e.locked(ws, extra, fn)
	}
	defer unlock()
	for _, w := range ws {
		if e.isDropped(tenantOfNS(w.h.Namespace)) {
			// NB: checked with the stripes held; DropTenant passes the
			// barrier after marking the tenant, so it waits for writes that
			// got here first.
			return resolve.NotFound(w.h.Table.Name)
		}
		if !w.rewind {
			// NB: checked with the stripes held; BeginRewind passes the
			// barrier after fencing, so it waits for writes that got here
			// first, and later ones see the fence.
			if err := e.fenced(w.h.Namespace, w.h.Table); err != nil {
				return err
			}
		}
		t, err := e.res.Current(w.h.Table)
		if err != nil {
			return err
		}
		w.h.Table = t
		wantsOld, err := e.streamWantsOld(t)
		if err != nil {
			return err
		}
		if w.sizeOnly && len(t.Indexes) == 0 {
			// NB: a stream's old image is the stored item's (opened)
			// encoding itself; the record keeps it without a decode and
			// an encode.
			w.old, w.oldEnc = nil, nil
			if w.found, w.oldSize, w.oldEnc, err = readItemSize(w.h.vals, w.h.db, w.pk, wantsOld); err != nil {
				return err
			}
			continue
		}
		if w.old, err = readItem(w.h.vals, w.h.db, w.pk); err != nil {
			return err
		}
		w.found, w.oldSize = w.old != nil, 0
		if w.found {
			w.oldSize = attr.ItemSize(w.old)
		}
	}
	return fn()
}

// readItem reads and decodes the item at physical key pk (nil if absent).
func readItem(vals *values, db *storage.DB, pk []byte) (attr.Item, error) {
	var it attr.Item
	var derr error
	err := db.View(pk, func(v []byte) error {
		it, derr = vals.decode(pk, v) // NB: keeps nothing of v
		return derr
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case derr != nil:
		return nil, derr
	case err != nil:
		return nil, apierr.Wrap(apierr.Internal, err, "reading item")
	}
	return it, nil
}

// readItemSize reads whether the item at physical key pk exists and its
// size, without decoding it, and with keep a copy of its (opened)
// encoding.
func readItemSize(vals *values, db *storage.DB, pk []byte, keep bool) (found bool, size int, enc []byte, err error) {
	var derr error
	err = db.View(pk, func(v []byte) error {
		size, enc, derr = vals.size(pk, v, keep)
		return derr
	})
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return false, 0, nil, nil
	case derr != nil:
		return false, 0, nil, derr
	case err != nil:
		return false, 0, nil, apierr.Wrap(apierr.Internal, err, "reading item")
	}
	return true, size, enc, nil
}

// commit applies the decided writes of ws: one batch per store, the main
// store's first; extra, if not nil, adds more to the main store's batch
// once the writes are staged and their costs known (a transaction's
// idempotency record, the request's usage: metered). REQUIRES: the
// stripes of ws held (e.locked).
func (e *Engine) commit(ws []*itemWrite, extra func(b *storage.Batch) error) error {
	type pending struct {
		db   *storage.DB
		b    *storage.Batch
		regs []string
	}
	var batches []*pending
	get := func(db *storage.DB) *pending {
		for _, p := range batches {
			if p.db == db {
				return p
			}
		}
		p := &pending{db: db, b: db.NewBatch()}
		if db == e.db {
			batches = append([]*pending{p}, batches...)
		} else {
			batches = append(batches, p)
		}
		return p
	}
	defer func() {
		for _, p := range batches {
			p.b.Close()
		}
	}()
	// NB: the change records go into the items' batches; the appender is
	// done only after the batches are applied (or abandoned), so no reader
	// of the log passes a record still being committed.
	var app *changelog.Appender
	applied := false
	defer func() {
		if app != nil {
			app.Done(applied)
		}
	}()
	for _, w := range ws {
		if !w.put && !w.del {
			continue
		}
		p := get(w.h.db)
		if err := e.stage(p.b, w); err != nil {
			return err
		}
		if err := e.record(&app, p.b, w); err != nil {
			return err
		}
		if w.put || w.found {
			reg, err := e.noteNamespace(p.b, w.h.db, w.h.Table, w.h.Namespace)
			if err != nil {
				return err
			}
			if reg != "" {
				p.regs = append(p.regs, reg)
			}
		}
	}
	// NB: after staging, so that extra sees every write's cost (metered).
	if extra != nil {
		if err := extra(get(e.db).b); err != nil {
			return err
		}
	}
	// NB: an in-place restore's batches are not synced on their own: the
	// restore is redone from its durable record after a crash, and the
	// record that ends it is synced, after them (rewindpace.go).
	sync := len(ws) == 0 || !ws[0].rewind
	for _, p := range batches {
		if p.b.Len() == 0 {
			continue
		}
		apply := p.db.Apply
		if !sync {
			apply = p.db.ApplyNoSync
		}
		if err := apply(p.b); err != nil {
			return apierr.Wrap(apierr.Internal, err, "writing items")
		}
		for _, r := range p.regs {
			e.registered.Store(r, struct{}{})
		}
	}
	applied = true
	for _, w := range ws {
		checkIndexEntries(w)
	}
	return nil
}

// metered returns commit's extra for a write request of op made with s
// whose writes are ws, each charged factor times its cost (2 in
// transactions): it runs then (if not nil) and adds the request's usage to
// the main store's batch through the Meter, so that the usage commits with
// the items, and sets *staged. It stages nothing when there is no Meter
// or when one of ws writes to a silo store: that store's batch is applied
// separately, so the usage would not be exact anyway and is left to the
// metering layer (quota's unsynced charge). The caller marks the
// output's Usage Committed if *staged and commit succeeded.
func (e *Engine) metered(s tenancy.Scope, op string, ws []*itemWrite, factor float64, staged *bool, then func(*storage.Batch) error) func(*storage.Batch) error {
	if e.opts.Meter == nil {
		return then
	}
	return func(b *storage.Batch) error {
		if then != nil {
			if err := then(b); err != nil {
				return err
			}
		}
		for _, w := range ws {
			if (w.put || w.del) && w.h.db != e.db {
				return nil
			}
		}
		e.opts.Meter.StageUsage(b, s, op, writeUsage(ws, factor))
		*staged = true
		return nil
	}
}

// writeUsage returns the usage of the writes ws, each charged factor
// times its cost: what the operations' capTally reports, without its maps
// when ws are all of one table (every single-item write).
func writeUsage(ws []*itemWrite, factor float64) wire.Usage {
	if len(ws) == 0 {
		return wire.Usage{}
	}
	u := wire.Usage{Table: ws[0].h.Table.Name}
	for _, w := range ws {
		if w.h.Table.Name != u.Table {
			var tally capTally
			for _, w := range ws {
				tally.addWrite(w.h.Table.Name, w.cost, factor)
			}
			return tally.usage(true)
		}
		u.WriteUnits += w.cost.total() * factor
	}
	return u
}

// stage adds one decided write to b: the item, its index entries and the
// counters, and computes its capacity cost.
func (e *Engine) stage(b *storage.Batch, w *itemWrite) error {
	t, ns := w.h.Table, w.h.Namespace
	var nu attr.Item
	if w.put {
		nu = w.new
		// NB: re-validated against the current definition, which may have
		// gained an index since the operation validated the item.
		if err := t.ValidateItemKeys(nu); err != nil {
			return err
		}
	}
	old := w.old // NB: nil when not decoded (sizeOnly), only if t has no indexes
	oldSize, newSize := w.oldSize, 0
	// NB: the change record of a table with a stream keeps the new item's
	// encoding (newEnc) rather than encoding it again.
	_, keepEnc, err := e.streamOf(t)
	if err != nil {
		return err
	}
	if nu != nil {
		newSize = attr.ItemSize(nu)
	}
	w.cost = writeCost{table: writeUnits(max(oldSize, newSize))}
	if !w.found && nu == nil {
		return nil // deleting an absent item changes nothing but costs a unit
	}
	checkInNamespace(ns, w.pk)
	if nu != nil {
		sealed, plain, err := w.h.vals.encodeKeep(w.pk, nu, keepEnc)
		if err != nil {
			return err
		}
		w.newEnc = plain
		b.Set(w.pk, sealed)
	} else {
		b.Delete(w.pk)
	}
	addCounters(b, ns, t.ID, 0, presence(nu)-presenceFound(w.found), int64(newSize-oldSize))

	for _, ix := range t.Indexes {
		var ok, nk []byte
		if old != nil {
			ok = indexKey(t, ns, ix, old)
		}
		if nu != nil {
			nk = indexKey(t, ns, ix, nu)
		}
		if ok != nil && ix.Backfilling {
			// NB: while an index is backfilled, an old item may not have its
			// entry yet; only an entry that exists may be replaced or
			// counted as removed.
			if _, err := w.h.db.Get(ok); errors.Is(err, storage.ErrNotFound) {
				ok = nil
			} else if err != nil {
				return apierr.Wrap(apierr.Internal, err, "reading index entry")
			}
		}
		if ok == nil && nk == nil {
			continue
		}
		checkInNamespace(ns, ok, nk)
		var oe, ne attr.Item
		oes, nes := 0, 0
		if ok != nil {
			oe = indexEntry(t, ix, old)
			oes = attr.ItemSize(oe)
		}
		if nk != nil {
			ne = indexEntry(t, ix, nu)
			nes = attr.ItemSize(ne)
		}
		same := ok != nil && nk != nil && bytes.Equal(ok, nk)
		if same && attr.EqualItems(oe, ne) {
			continue
		}
		var units float64
		switch {
		case same:
			units = writeUnits(max(oes, nes))
		default:
			if ok != nil {
				b.Delete(ok)
				units += writeUnits(oes)
			}
			if nk != nil {
				units += writeUnits(nes)
			}
		}
		if nk != nil {
			sealed, err := w.h.vals.encode(nk, ne)
			if err != nil {
				return err
			}
			b.Set(nk, sealed)
		}
		addCounters(b, ns, t.ID, ix.No, presenceKey(nk)-presenceKey(ok), int64(nes-oes))
		if w.cost.indexes == nil {
			w.cost.indexes = map[*schema.Index]float64{}
		}
		w.cost.indexes[ix] = units
	}
	return nil
}

func presence(it attr.Item) int64 {
	if it == nil {
		return 0
	}
	return 1
}

func presenceFound(found bool) int64 {
	if found {
		return 1
	}
	return 0
}

func presenceKey(k []byte) int64 {
	if k == nil {
		return 0
	}
	return 1
}

// addCounters adds item count and size deltas to a table's (index 0) or an
// index's counters in namespace ns.
func addCounters(b *storage.Batch, ns []byte, table uint64, index uint16, items, size int64) {
	if items != 0 {
		b.AddCounter(keyspace.Counter(ns, table, index, counterItems), items)
	}
	if size != 0 {
		b.AddCounter(keyspace.Counter(ns, table, index, counterBytes), size)
	}
}
