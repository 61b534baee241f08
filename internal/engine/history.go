package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// The state of a table at a past time, from its change log: the one
// implementation behind RestoreTableToPointInTime (pitr.go), exports at a
// past time (Snapshot.ItemsAt, package transfer) and in-place tenant
// restores (rewind.go).
//
// NB: the state at T of an item key is the old image of its first change
// made after T (absence, for an INSERT), or, if it has none, its state in
// any snapshot taken after T. Reading the items and the records from the
// same storage snapshot makes this exact: every change the items show is
// in the records. "After T" is to the millisecond of the records' times
// (per namespace, never going backwards): the state at T includes every
// change made at T.

// ErrHistoryTrimmed says the change log no longer holds every change made
// after the time asked (retention trimmed some).
var ErrHistoryTrimmed = errors.New("engine: the change log no longer reaches back to that time")

// ErrHistoryIncomplete says a change after the time asked was recorded
// without its old image (no consumer or stream captured it then).
var ErrHistoryIncomplete = errors.New("engine: the change log lacks the old image of a change after that time")

// pastState is what items of a table in one namespace were at a past
// time, as far as they differ from the snapshot it was read from: for
// every physical item key changed since, the item then (nil: absent).
type pastState map[string]attr.Item

// stateAt reads, from snap, the changes of h's namespace in h's table
// made after at. pace, if not nil, is called every rewindReadStep
// records (a restore's pacing); its error ends the read and is returned.
// Errors: ErrHistoryTrimmed, ErrHistoryIncomplete, pace's, the log's.
func (e *Engine) stateAt(snap *storage.Snapshot, h *handle, at time.Time, pace func() error) (pastState, error) {
	t, ns := h.Table, h.Namespace
	past := pastState{}
	n := 0
	err := e.clog.ChangesAfter(snap, ns, t.ID, at, func(en changelog.Entry) error {
		if n++; pace != nil && n%rewindReadStep == 0 {
			if err := pace(); err != nil {
				return err
			}
		}
		k := string(itemKey(t, ns, en.Keys))
		if _, seen := past[k]; seen {
			return nil
		}
		if en.Event != changelog.Insert && en.Old == nil {
			return ErrHistoryIncomplete
		}
		past[k] = en.Old // nil: absent at `at`
		return nil
	})
	switch {
	case errors.Is(err, changelog.ErrTrimmed):
		return nil, ErrHistoryTrimmed
	case errors.Is(err, ErrHistoryIncomplete), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("engine: reading the change log: %w", err)
	}
	return past, nil
}

// itemsAt calls put with every item of h's namespace in h's table as it
// was when past was read: the items of snap, each changed key replaced by
// its past item (or left out), then the items deleted since. It consumes
// past.
func itemsAt(ctx context.Context, snap *storage.Snapshot, h *handle, past pastState, put func(attr.Item) error) error {
	p := keyspace.Items(h.Namespace, h.Table.ID)
	it := snap.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n++; n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		k := string(it.Key())
		if old, changed := past[k]; changed {
			delete(past, k)
			if old != nil {
				if err := put(old); err != nil {
					return err
				}
			}
			continue
		}
		item, err := h.vals.decode(it.Key(), it.Value())
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "decoding item")
		}
		if err := put(item); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading items")
	}
	for _, old := range past { // deleted since
		if old != nil {
			if err := put(old); err != nil {
				return err
			}
		}
	}
	return nil
}

// ItemsAt calls fn with every item of table i (of Tables) in the scope's
// namespace as it was at `at`: the snapshot with every change made since
// undone from the table's change log, read from the same snapshot.
// Errors: ErrHistoryTrimmed, ErrHistoryIncomplete (the caller checks the
// log's coverage first: LogCoverage), fn's.
func (sn *Snapshot) ItemsAt(ctx context.Context, i int, at time.Time, fn func(attr.Item) error) error {
	t := sn.tables[i]
	past, err := sn.e.stateAt(t.snap, t.h, at, nil)
	if err != nil {
		return err
	}
	return itemsAt(ctx, t.snap, t.h, past, fn)
}
