package transfer

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// history is what a table's items were at a past time, as far as they
// differ from a later snapshot: for every key changed since, its item
// then (nil: it did not exist).
//
// NB: the state at T of a key is the old image of its first change after
// T, or, if it has none, its state in any snapshot taken after T. The log
// is read to its end after the snapshot is taken, so every key the
// snapshot shows changed is in it; a key changed only after the snapshot
// has as old image exactly what the snapshot shows.
type history struct {
	keys    []string             // the table's key attributes
	then    map[string]attr.Item // key -> item at T; nil: absent at T
	emitted map[string]bool
}

// historyAt reads table t's change log of scope sc from at to its end.
// Errors: InvalidExportTime when the log does not hold every change since
// at with old images (no stream capturing them, created after at, or
// trimmed), those of the log.
func (s *Service) historyAt(ctx context.Context, sc tenancy.Scope, t *schema.Table, at time.Time) (*history, error) {
	e := s.o.Engine
	if err := s.checkHistory(ctx, sc, t.Name, at); err != nil {
		return nil, err
	}
	cur, err := e.LogCursorAt(ctx, sc, t.Name, at)
	if apierr.Is(err, apierr.TrimmedDataAccess) {
		return nil, apierr.New(apierr.InvalidExportTime, "table %s's change log no longer holds the changes since %s (retention trimmed them)", apierr.Clip(t.Name), at.UTC().Format(time.RFC3339Nano))
	}
	if err != nil {
		return nil, err
	}
	h := &history{keys: keyAttrs(t), then: map[string]attr.Item{}, emitted: map[string]bool{}}
	for {
		page, err := e.FollowLog(ctx, sc, t.Name, cur, 10_000)
		if apierr.Is(err, apierr.TrimmedDataAccess) {
			return nil, apierr.New(apierr.InvalidExportTime, "table %s's change log was trimmed while exporting %s", apierr.Clip(t.Name), at.UTC().Format(time.RFC3339Nano))
		}
		if err != nil {
			return nil, err
		}
		for _, en := range page.Entries {
			k := string(AppendItem(nil, en.Keys))
			if _, seen := h.then[k]; seen {
				continue
			}
			switch {
			case en.Event == changelog.Insert:
				h.then[k] = nil
			case en.Old == nil:
				return nil, apierr.New(apierr.InvalidExportTime, "table %s's change log lacks the old image of a change after %s", apierr.Clip(t.Name), at.UTC().Format(time.RFC3339Nano))
			default:
				h.then[k] = en.Old
			}
		}
		cur = page.Next
		if page.CaughtUp || len(page.Entries) == 0 {
			return h, nil
		}
	}
}

func keyAttrs(t *schema.Table) []string {
	if t.Range.Name == "" {
		return []string{t.Hash.Name}
	}
	return []string{t.Hash.Name, t.Range.Name}
}

// at returns what item of the snapshot was at T: itself, another
// version, or nil (it did not exist).
func (h *history) at(item attr.Item) attr.Item {
	key := attr.Item{}
	for _, n := range h.keys {
		key[n] = item[n]
	}
	k := string(AppendItem(nil, key))
	then, changed := h.then[k]
	if !changed {
		return item
	}
	h.emitted[k] = true
	return then
}

// rest calls fn with the items that existed at T and are not in the
// snapshot (deleted since).
func (h *history) rest(fn func(attr.Item) error) error {
	for k, it := range h.then {
		if it != nil && !h.emitted[k] {
			if err := fn(it); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkHistory refuses early an export of table at a time its change log
// does not cover (the export itself checks again).
func (s *Service) checkHistory(ctx context.Context, sc tenancy.Scope, table string, at time.Time) error {
	since, ok, err := s.o.Engine.LogCoverage(ctx, sc, table)
	switch {
	case err != nil:
		return err
	case !ok:
		return apierr.New(apierr.InvalidExportTime, "table %s keeps no change-log history with old images to export a past time from: enable its stream with NEW_AND_OLD_IMAGES (or OLD_IMAGE), or have point-in-time recovery hold its log", apierr.Clip(table))
	case at.Before(since):
		return apierr.New(apierr.InvalidExportTime, "table %s's change-log history starts at %s; %s is before it", apierr.Clip(table), since.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))
	}
	return nil
}
