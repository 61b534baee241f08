package engine

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// The engine's side of the change log (package changelog): every
// committed change of a table whose stream is enabled appends its record
// in the same batch as the item (commit), TTL deletions marked as the
// service's; DDL creates and disables the streams; the background loop
// trims records past retention. Index backfills do not go through commit
// and so write no records, as in DynamoDB.

// openChangeLog creates the engine's change log over its main store.
func openChangeLog(db *storage.DB, opts Options) (*changelog.Log, error) {
	secret := opts.StreamSecret
	if len(secret) == 0 {
		// NB: iterators then do not survive a restart; the server passes a
		// key derived from the server key.
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	l, err := changelog.New(db, changelog.Options{
		Secret:    secret,
		Retention: opts.StreamRetention,
		Rollover:  opts.StreamRollover,
		Now:       opts.Now,
		Logger:    opts.Logger,
		Keys:      opts.Keys,
	})
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "opening the change log")
	}
	return l, nil
}

// checkStreamSpec validates a StreamSpecification as DynamoDB does; an
// enabled stream is refused unless Options.Streams. NB: e may be nil
// (BuildTable, for other backends): then an enabled stream is refused.
func (e *Engine) checkStreamSpec(spec *wire.StreamSpecification) error {
	streams := e != nil && e.opts.Streams
	if err := checkStream(spec); err != nil && !(err == errNoStreams && streams) {
		return err
	}
	return nil
}

// specEnabled reports whether spec enables a stream.
func specEnabled(spec *wire.StreamSpecification) bool {
	return spec != nil && spec.StreamEnabled != nil && *spec.StreamEnabled
}

// streamEnabled reports whether t's stream receives its changes.
func streamEnabled(t *schema.Table) bool { return t.LatestStream != 0 && specEnabled(t.Stream) }

// logStream returns the id of the change log stream receiving t's
// changes: its DynamoDB stream while enabled, else its hidden stream
// while it has log consumers; 0 if none.
func logStream(t *schema.Table) uint64 {
	if streamEnabled(t) {
		return t.LatestStream
	}
	return t.HiddenStream
}

// streamOf returns the change log stream receiving t's changes, its
// capture widened to both images while t has log consumers; ok is false
// if t has none. Descriptors are cached: a stream's settings that
// writers use never change while it receives changes.
//
// NB: the widening follows the definition, which writers read with
// their stripes held, so every change committed after RetainLog's
// barrier keeps both images.
func (e *Engine) streamOf(t *schema.Table) (s changelog.Stream, ok bool, err error) {
	id := logStream(t)
	if id == 0 {
		return s, false, nil
	}
	k := [2]uint64{t.ID, id}
	if v, hit := e.streams.Load(k); hit {
		s = v.(changelog.Stream)
	} else {
		if s, err = e.clog.Stream(t.ID, id); err != nil {
			return s, false, apierr.Wrap(apierr.Internal, err, "reading stream")
		}
		e.streams.Store(k, s)
	}
	if len(t.LogConsumers) > 0 {
		s.Capture = changelog.Widen(s.Capture, changelog.NewAndOldImage)
	}
	return s, true, nil
}

// streamWantsOld reports whether t's stream stores old images, so that a
// write must decode the current item even when it needs only its size.
func (e *Engine) streamWantsOld(t *schema.Table) (bool, error) {
	s, ok, err := e.streamOf(t)
	return ok && s.Capture.WantsOld(), err
}

// record appends the change record of the decided write w to b (a batch
// of w's store), creating *app on first use. REQUIRES: w staged, its
// stripe held.
func (e *Engine) record(app **changelog.Appender, b *storage.Batch, w *itemWrite) error {
	if !w.found && !w.put {
		return nil // deleting an absent item changes nothing: no record
	}
	s, ok, err := e.streamOf(w.h.Table)
	if err != nil || !ok {
		return err
	}
	if same, err := unchanged(w); err != nil || same {
		return err
	}
	if *app == nil {
		*app = e.clog.NewAppender()
	}
	c := changelog.Change{Keys: w.key, Existed: w.found, Old: w.old, OldEnc: w.oldEnc, Expired: w.expired}
	if w.put {
		c.New, c.NewEnc = w.new, w.newEnc
	}
	if err := (*app).Append(w.h.db, b, w.h.Namespace, s, c); err != nil {
		return apierr.Wrap(apierr.Internal, err, "appending to the change log")
	}
	return nil
}

// unchanged reports whether w puts back the very item it found. As
// DynamoDB Streams, the log has no record of a PutItem or UpdateItem that
// changes no data (so a client's retry of a put the server applied, or a
// SET of the current value, is no event for a stream, webhook or
// aggregate; point-in-time history loses nothing: the item is the same).
// The old item is decoded only when both have the same size.
// REQUIRES: w staged, its stripe held (the stored item is w's old one).
func unchanged(w *itemWrite) (bool, error) {
	if !w.found || !w.put || w.oldSize != attr.ItemSize(w.new) {
		return false, nil
	}
	old, err := w.old, error(nil)
	switch {
	case old != nil:
	case w.oldEnc != nil:
		old, err = decodeKept(w.oldEnc)
	default:
		old, err = readItem(w.h.vals, w.h.db, w.pk)
	}
	if err != nil || old == nil {
		return false, err
	}
	return attr.EqualItems(old, w.new), nil
}

// newStream creates a change log stream for table t (whose ID is set) as
// spec asks, and records it in t. Only with Options.Streams.
func (e *Engine) newStream(t *schema.Table, spec *wire.StreamSpecification) error {
	view, ok := changelog.ParseViewType(spec.StreamViewType)
	if !ok {
		return apierr.Validationf("One or more parameter values were invalid: invalid StreamViewType %s", apierr.Clip(spec.StreamViewType))
	}
	s, err := e.createStream(t, view, false)
	if err != nil {
		return err
	}
	t.LatestStream = s.ID
	return nil
}

// newHiddenStream creates the hidden stream of table t, which has log
// consumers and no enabled DynamoDB stream, and records it in t.
func (e *Engine) newHiddenStream(t *schema.Table) error {
	s, err := e.createStream(t, changelog.NewAndOldImage, true)
	if err != nil {
		return err
	}
	t.HiddenStream = s.ID
	return nil
}

func (e *Engine) createStream(t *schema.Table, view changelog.ViewType, hidden bool) (changelog.Stream, error) {
	var owner []byte
	if !t.Shared() {
		owner = keyspace.Namespace(t.Owner, t.OwnerEnv)
	}
	meta, err := json.Marshal(keySchema(t.Hash, t.Range))
	if err != nil {
		return changelog.Stream{}, apierr.Wrap(apierr.Internal, err, "encoding key schema")
	}
	cfg := changelog.StreamConfig{Table: t.ID, View: view, Name: t.Name, Owner: owner, Meta: meta,
		Hidden: hidden, Retention: t.LogRetention()}
	if len(t.LogConsumers) > 0 {
		cfg.Capture = changelog.NewAndOldImage
	}
	s, err := e.clog.Create(cfg)
	if err != nil {
		return changelog.Stream{}, apierr.Wrap(apierr.Internal, err, "creating stream")
	}
	return s, nil
}

// endStream disables stream id of table, whose definition without the
// stream is published and whose writers have passed the lock barrier.
func (e *Engine) endStream(table, id uint64) {
	if _, err := e.clog.DisableStream(table, id); err != nil && !errors.Is(err, changelog.ErrStreamNotFound) {
		// The stream stays enabled in its descriptor: it lists shards up to
		// now and is never trimmed whole; a later DisableStream fixes it.
		e.log.Error("engine: disabling stream", "table", table, "stream", id, "err", err)
	}
	e.streams.Delete([2]uint64{table, id})
}

// streamShown reports whether the Streams API shows stream st: not a
// hidden one, nor one disabled longer ago than the Streams retention (a
// log consumer may keep its records longer).
func (e *Engine) streamShown(st changelog.Stream) bool {
	return !st.Hidden && (st.Enabled() || st.Disabled.After(e.opts.Now().Add(-e.clog.Retention())))
}

// trimInterval is how often the change log is trimmed.
const trimInterval = time.Minute

// trimChangeLog trims the change log of the main store and of every open
// silo store (a closed one is trimmed when next open at a trim).
func (e *Engine) trimChangeLog() {
	if _, err := e.clog.Trim(e.db); err != nil && !errors.Is(err, storage.ErrClosed) {
		e.log.Error("engine: trimming the change log", "err", err)
	}
	for _, s := range e.holdOpenSilos() {
		if _, err := e.clog.Trim(s.db); err != nil && !errors.Is(err, storage.ErrClosed) {
			e.log.Error("engine: trimming the change log", "err", err)
		}
		e.releaseSilo(s, false)
	}
}

// describeStream sets d's stream fields from t's change log streams: the
// latest stream's ARN and label (kept after the stream is disabled, as
// DynamoDB does) and the specification while it is enabled.
func (e *Engine) describeStream(t *schema.Table, d *wire.TableDescription) {
	d.StreamSpecification, d.LatestStreamArn, d.LatestStreamLabel = nil, "", ""
	if streamEnabled(t) {
		spec := *t.Stream
		d.StreamSpecification = &spec
	}
	if t.LatestStream != 0 {
		s := changelog.Stream{Table: t.ID, ID: t.LatestStream}
		d.LatestStreamLabel = s.Label()
		d.LatestStreamArn = changelog.FormatStreamARN(e.opts.Region, e.opts.Account, t.Name, s)
	}
}
