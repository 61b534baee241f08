package engine

import (
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// repairStreams ends, when the engine opens, what a crash left between a
// stream descriptor and the table definition that should name it. The
// descriptor is written before the definition naming it is saved, and
// disabled after the definition without it is published (so no append is
// in flight), so a crash in between leaves an enabled descriptor that no
// definition names as its enabled stream:
//
//   - no definition of that table, and no drop of it pending: the
//     definition was never saved (CreateTable), the stream never took a
//     record: its descriptor is deleted;
//   - no definition, a drop pending (DeleteTable): disabled now, so that
//     it stays readable until retention and then goes;
//   - the definition names it but with the stream disabled, or names a
//     later stream (UpdateTable disabling): disabled now;
//   - the definition names an earlier stream (UpdateTable enabling, the
//     definition never saved): never took a record: deleted;
//   - a hidden stream (the log consumers') the definition does not name
//     is disabled, never deleted.
//
// It reads every descriptor once, and one definition per enabled one.
func (e *Engine) repairStreams() error {
	streams, err := e.clog.EnabledStreams()
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading streams")
	}
	for _, st := range streams {
		t, err := e.definitionOf(st)
		if err != nil {
			return err
		}
		var unused bool
		switch {
		case t == nil:
			_, err := e.db.Get(dropKey(st.Table, 0))
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return apierr.Wrap(apierr.Internal, err, "reading drop record")
			}
			unused = err != nil
		case definesStream(t, st.ID):
			continue
		default:
			// NB: a definition names its latest stream; one created after
			// it was never named, so never appended to. A hidden stream
			// (the log consumers') is only ever disabled: the definition
			// may have dropped it since it took records.
			unused = !st.Hidden && st.ID > t.LatestStream
		}
		if unused {
			e.log.Warn("engine: deleting a stream no saved definition names", "table", st.TableName, "stream", st.ID)
			if err := e.clog.DeleteUnused(st); err != nil {
				return apierr.Wrap(apierr.Internal, err, "deleting stream")
			}
			continue
		}
		e.log.Warn("engine: disabling a stream its table no longer has", "table", st.TableName, "stream", st.ID)
		if _, err := e.clog.DisableStream(st.Table, st.ID); err != nil {
			return apierr.Wrap(apierr.Internal, err, "disabling stream")
		}
	}
	return nil
}

// definesStream reports whether definition t names stream id as one that
// receives its changes: its enabled DynamoDB stream or its hidden one.
// NB: every stream a definition can name must be here, or repairStreams
// ends it when the engine opens.
func definesStream(t *schema.Table, id uint64) bool {
	return id == t.LatestStream && streamEnabled(t) || id == t.HiddenStream
}

// definitionOf reads the saved definition of stream st's table (by its
// owner and name, as the descriptor keeps them), nil if there is none of
// that table (none of that name, or one of another table since).
func (e *Engine) definitionOf(st changelog.Stream) (*schema.Table, error) {
	t, err := defStore{e.db}.saved(st.Owner, st.TableName)
	if err != nil || t == nil || t.ID != st.Table {
		return nil, err
	}
	return t, nil
}
