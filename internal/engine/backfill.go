package engine

import (
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// errIndexGone stops a backfill whose index or table was dropped.
var errIndexGone = errors.New("engine: index gone")

// resumeBackfills starts the backfill of every index of t still CREATING
// (after a restart, or when a tenant's tables are first loaded).
func (e *Engine) resumeBackfills(t *schema.Table) {
	for _, ix := range t.Indexes {
		if ix.Status == "CREATING" {
			e.startBackfill(t.ID, ix.No)
		}
	}
}

// startBackfill backfills index no of table id in the background, unless
// that is already under way.
func (e *Engine) startBackfill(id uint64, no uint16) {
	key := id<<16 | uint64(no)
	if e.stopping() {
		return
	}
	if _, running := e.backfills.LoadOrStore(key, true); running {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		defer e.backfills.Delete(key)
		if err := e.backfill(id, no); err != nil && !errors.Is(err, errIndexGone) {
			e.log.Error("engine: index backfill", "table", id, "index", no, "err", err)
		}
	}()
}

// indexOf returns the current definitions of table id and its index no,
// or errIndexGone.
func (e *Engine) indexOf(id uint64, no uint16) (*schema.Table, *schema.Index, error) {
	t := e.res.ByID(id)
	if t == nil {
		return nil, nil, errIndexGone
	}
	for _, ix := range t.Indexes {
		if ix.No == no {
			return t, ix, nil
		}
	}
	return nil, nil, errIndexGone
}

// backfillIn writes the entries of index no of table t in namespace ns.
func (e *Engine) backfillIn(t *schema.Table, ns []byte, no uint16) error {
	db, release, err := e.backgroundStore(tenantOfNS(ns), t)
	if err != nil {
		return err
	}
	defer release()
	if db == nil {
		return errIndexGone // the table was dropped meanwhile
	}
	p := keyspace.Items(ns, t.ID)
	_, err = e.scanChunks(db, p, keyspace.PrefixEnd(p), func(keys, _ [][]byte) (bool, error) {
		return true, e.backfillChunk(db, ns, t.ID, no, keys)
	})
	return err
}

// backfill writes the entries of index no for every item of table id in
// every namespace, then marks the index ACTIVE.
//
// NB: the index was published (CREATING, Backfilling) and a lock barrier
// passed before this runs, so every write committed since maintains the
// index itself. The backfill handles the items written before: under
// each item's lock it re-reads the item and writes the entry only if it
// is missing, so it is idempotent (a restart resumes from the start
// without double-counting) and never races a writer.
func (e *Engine) backfill(id uint64, no uint16) error {
	t, _, err := e.indexOf(id, no)
	if err != nil {
		return err
	}
	nss, err := e.namespacesOf(id)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		if err := e.backfillIn(t, ns, no); err != nil {
			return err
		}
	}
	if e.stopping() {
		return nil // resumed on the next start
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	t, ix, err := e.indexOf(id, no)
	if err != nil {
		return err
	}
	if ix.Status != "CREATING" {
		return nil
	}
	c := t.Clone()
	for _, x := range c.Indexes {
		if x.No == no {
			x.Status, x.Backfilling = "ACTIVE", false
		}
	}
	return e.persist(c)
}

func (e *Engine) backfillChunk(db *storage.DB, ns []byte, id uint64, no uint16, keys [][]byte) error {
	unlock := e.locks.lock(keys...)
	defer unlock()
	t, ix, err := e.indexOf(id, no)
	if err != nil {
		return err
	}
	b := db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		item, err := readItem(e.vals, db, k)
		if err != nil {
			return err
		}
		if item == nil {
			continue
		}
		ik := indexKey(t, ns, ix, item)
		if ik == nil {
			continue // sparse, or an index key of the wrong type
		}
		if _, err := db.Get(ik); err == nil {
			continue // written by a writer since the index was created
		} else if !errors.Is(err, storage.ErrNotFound) {
			return apierr.Wrap(apierr.Internal, err, "reading index entry")
		}
		entry := indexEntry(t, ix, item)
		sealed, err := e.vals.encode(ik, entry)
		if err != nil {
			return err
		}
		b.Set(ik, sealed)
		addCounters(b, ns, id, no, 1, int64(attr.ItemSize(entry)))
	}
	if b.Len() == 0 {
		return nil
	}
	if err := db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "backfilling index")
	}
	return nil
}
