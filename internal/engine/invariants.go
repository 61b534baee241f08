package engine

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// NB: the checks below run only in builds with the invariants tag. They
// panic: a violated invariant is a bug that must stop the test run, never
// a condition to handle.

// checkInNamespace asserts that every physical key a write stages lies in
// the writing scope's namespace: no tenant's write can land in another
// tenant's range.
func checkInNamespace(ns []byte, keys ...[]byte) {
	if !invariants {
		return
	}
	for _, k := range keys {
		if k != nil && !bytes.HasPrefix(k, ns) {
			panic(fmt.Sprintf("engine invariant: key %x outside namespace %x", k, ns))
		}
	}
}

// checkIndexEntries asserts, after a write was applied, that every index
// of the item's table holds exactly the entry the item implies (or none,
// for sparse indexes and deleted items).
func checkIndexEntries(w *itemWrite) {
	if !invariants || (!w.put && !w.del) {
		return
	}
	t, ns := w.h.Table, w.h.Namespace
	var nu attr.Item
	if w.put {
		nu = w.new
	}
	for _, ix := range t.Indexes {
		if ix.Backfilling {
			continue
		}
		if nu == nil {
			continue // the old entry's absence is checked by its key below
		}
		k := indexKey(t, ns, ix, nu)
		if k == nil {
			continue
		}
		v, err := w.h.db.Get(k)
		if errors.Is(err, storage.ErrNotFound) {
			panic(fmt.Sprintf("engine invariant: index %s lacks the entry of a written item", ix.Name))
		}
		if err != nil {
			return // I/O errors are reported elsewhere
		}
		got, err := w.h.vals.decode(k, v)
		if err != nil || !attr.EqualItems(got, indexEntry(t, ix, nu)) {
			panic(fmt.Sprintf("engine invariant: index %s entry differs from the base item", ix.Name))
		}
	}
	if w.old != nil {
		for _, ix := range t.Indexes {
			if ix.Backfilling {
				continue
			}
			ok := indexKey(t, ns, ix, w.old)
			if ok == nil || (nu != nil && bytes.Equal(ok, indexKey(t, ns, ix, nu))) {
				continue
			}
			if _, err := w.h.db.Get(ok); err == nil {
				panic(fmt.Sprintf("engine invariant: index %s keeps a stale entry", ix.Name))
			}
		}
	}
}
