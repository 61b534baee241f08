package fleetkey

// The driving gateway's side of a rotation: Rotate, the claim, and the
// work of each phase (DESIGN.md, "Protocol").

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// ErrFromEnv is Rotate's error on a gateway whose key is given by
// TENANTDB_SERVER_KEY.
var ErrFromEnv = apierr.Validationf("this gateway's server key comes from %s, which tenantdb cannot change: give every gateway the key in <data-dir>/%s instead (the same key; unset the variable and restart them one by one), then rotate again; or rotate it yourself by stopping every gateway and starting them all with a new key — which only works on an engine whose credentials and tenant keys are re-sealed, so it is not an option for a running fleet", auth.ServerKeyEnv, auth.ServerKeyFile)

// Rotate rotates the fleet's server key to a new random one (or joins
// the rotation in progress) and returns when every live gateway uses it
// and the old key opens nothing of it any more. actor names who asked.
// Errors: Validation when a gateway cannot follow (its key comes from
// the environment) or not every live gateway accepted the new key in
// time (the rotation is then abandoned; nothing changed).
func (r *Rotator) Rotate(ctx context.Context, actor string) error {
	if r.o.FromEnv {
		return ErrFromEnv
	}
	if err := r.follow(ctx); err != nil { // a rotation that just ended, here too
		return apierr.Wrap(apierr.Internal, err, "following the server key rotation")
	}
	rec, _, err := r.read(ctx)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading the rotation record")
	}
	if rec == nil {
		if rec, err = r.begin(ctx, actor); err != nil {
			return err
		}
	}
	done := r.driveAsync(rec.ID)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-done:
	}
	r.mu.Lock()
	msg := r.lastError[rec.ID]
	r.mu.Unlock()
	switch {
	case msg == errTaken.Error():
		if err := r.waitGone(ctx, rec.ID); err != nil { // another gateway drives it
			return err
		}
	case strings.HasPrefix(msg, abandonedMsg):
		return apierr.Validationf("%s", msg)
	case msg != "":
		return apierr.New(apierr.Internal, "the server key rotation stopped (%s); another gateway, or this one, resumes it within seconds", msg)
	}
	return r.outcome(ctx, rec)
}

// outcome tells, once rotation rec's record is gone, whether it rotated
// the key or was abandoned (by whichever gateway drove it): the old key
// is marked retired when the re-sealing starts, and a rotation is
// abandoned only before that.
func (r *Rotator) outcome(ctx context.Context, rec *rotation) error {
	from, err := hex.DecodeString(rec.From)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading the rotation record")
	}
	_, err = r.o.Store.Get(ctx, retiredKey(from))
	switch {
	case errors.Is(err, kv.ErrNotFound):
		return apierr.Validationf("%s by the gateway driving it, nothing changed (the audit log's server-key.rotate.abandoned says why)", abandonedMsg)
	case err != nil:
		return apierr.Wrap(apierr.Internal, err, "reading the outcome of the server key rotation")
	}
	return nil
}

// Status describes the rotation in progress ("" if none): its phase and
// the gateway driving it.
func (r *Rotator) Status(ctx context.Context) (string, error) {
	rec, _, err := r.read(ctx)
	if err != nil || rec == nil {
		return "", err
	}
	return fmt.Sprintf("phase %s of rotation %s (server key %.16s -> %.16s), driven by gateway %s", phaseNames[rec.Phase], rec.ID, rec.From, rec.To, rec.Owner), nil
}

// waitGone waits until rotation id's record is gone.
func (r *Rotator) waitGone(ctx context.Context, id string) error {
	for {
		rec, _, err := r.read(ctx)
		if err != nil {
			return apierr.Wrap(apierr.Internal, err, "reading the rotation record")
		}
		if rec == nil || rec.ID != id {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.o.Poll / 4):
		}
	}
}

const abandonedMsg = "the server key rotation was abandoned"

// begin writes a new rotation's record.
func (r *Rotator) begin(ctx context.Context, actor string) (*rotation, error) {
	r.mu.Lock()
	cur := r.key
	busy := r.state != 0
	r.mu.Unlock()
	if busy {
		return nil, apierr.Validationf("a server key rotation is still ending on this gateway; try again in a few seconds")
	}
	master := make([]byte, 32)
	rand.Read(master)
	next, err := auth.NewServerKey(master)
	if err != nil {
		return nil, err
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	now := time.Now().UnixMilli()
	rec := &rotation{ID: hex.EncodeToString(idb), Phase: phaseAccept, From: checkHex(cur), To: checkHex(next),
		Owner: r.o.Self, Beat: now, Started: now, Actor: actor}
	if rec.Next, err = sealNext(cur, rec.ID, rec.To, master); err != nil {
		return nil, err
	}
	clear(master)
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var b kv.Batch
	b.SetIfAbsent(recKey(), data)
	if err := r.o.Store.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
		rec, _, err = r.read(ctx) // another gateway began one at the same time: follow that one
		if err == nil && rec == nil {
			err = errors.New("fleetkey: a rotation began and ended meanwhile")
		}
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "reading the rotation record")
		}
		return rec, nil
	} else if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "writing the rotation record")
	}
	r.o.Audit(ctx, "server-key.rotate.start", fmt.Sprintf("rotation %s: server key %.16s -> %.16s", rec.ID, rec.From, rec.To))
	return rec, nil
}

// driveAsync drives rotation id in the background unless this process
// does already, and returns a channel closed when it stops.
func (r *Rotator) driveAsync(id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ch, ok := r.doneCh[id]; ok {
		return ch
	}
	ch := make(chan struct{})
	r.doneCh[id] = ch
	delete(r.lastError, id)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := r.drive(r.ctx, id)
		r.mu.Lock()
		if err != nil {
			r.lastError[id] = err.Error()
		}
		delete(r.doneCh, id)
		if r.driving == id {
			r.driving = ""
		}
		r.mu.Unlock()
		close(ch)
		switch {
		case err == nil, errors.Is(err, context.Canceled), errors.Is(err, errTaken):
		case strings.HasPrefix(err.Error(), abandonedMsg):
			r.o.Logger.Warn("fleetkey: server key rotation abandoned", "rotation", id, "err", err)
		default:
			r.o.Logger.Error("fleetkey: server key rotation stopped; it is resumed within seconds", "rotation", id, "err", err)
		}
	}()
	return ch
}

var errTaken = errors.New("fleetkey: another gateway drives the rotation")

// drive takes rotation id through its phases, renewing the claim, until
// its record is gone.
func (r *Rotator) drive(ctx context.Context, id string) error {
	resumed := false
	for {
		rec, raw, err := r.read(ctx)
		if err != nil {
			return err
		}
		if rec == nil || rec.ID != id {
			return nil // finished or abandoned
		}
		if rec.Owner != r.o.Self {
			if time.Since(time.UnixMilli(rec.Beat)) < r.o.Lease {
				return errTaken
			}
			resumed = true
		}
		// Claim (or renew the claim), on condition of the record read.
		if rec.Owner != r.o.Self || time.Since(time.UnixMilli(rec.Beat)) >= r.o.Lease/4 {
			claimed := *rec
			claimed.Owner, claimed.Beat = r.o.Self, time.Now().UnixMilli()
			if raw, err = r.replace(ctx, raw, &claimed); errors.Is(err, kv.ErrConflict) {
				continue
			} else if err != nil {
				return err
			}
			rec = &claimed
		}
		if resumed {
			resumed = false
			r.o.Audit(ctx, "server-key.rotate.resumed", fmt.Sprintf("rotation %s taken over in phase %s by gateway %s", rec.ID, phaseNames[rec.Phase], r.o.Self))
		}
		r.mu.Lock()
		r.driving = id
		if r.rid == id && r.state == phaseDone && r.old != nil {
			// NB: a driver taking over in phase 4 opens stragglers under
			// the old key again, for the last pass.
			if err := r.use(r.next, r.old); err != nil {
				r.mu.Unlock()
				return err
			}
		}
		r.mu.Unlock()
		if err := r.follow(ctx); err != nil {
			return err
		}
		next, err := r.step(ctx, rec, raw)
		if err != nil || next {
			if err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.o.Poll / 4):
		}
	}
}

// replace writes rec in place of the stored bytes old and returns the
// new bytes. Errors: kv.ErrConflict if it changed.
func (r *Rotator) replace(ctx context.Context, old []byte, rec *rotation) ([]byte, error) {
	data, err := json.Marshal(rec)
	if err != nil {
		return nil, err
	}
	var b kv.Batch
	b.SetIfEquals(recKey(), old, data)
	return data, r.o.Store.Apply(ctx, &b)
}

// step does what phase rec.Phase waits for; it reports whether it moved
// the rotation on (the caller then reads it again at once).
func (r *Rotator) step(ctx context.Context, rec *rotation, raw []byte) (bool, error) {
	switch rec.Phase {
	case phaseAccept:
		waiting, refused, err := r.pending(ctx, rec.ID, phaseAccept)
		if err != nil {
			return false, err
		}
		switch {
		case refused != "":
			return false, r.abandon(ctx, rec, raw, "a gateway cannot take part: "+refused)
		case len(waiting) > 0 && time.Since(time.UnixMilli(rec.Started)) > r.o.AcceptTimeout:
			return false, r.abandon(ctx, rec, raw, fmt.Sprintf("gateways %s did not accept the new key within %v (a gateway of an older version, or stalled)", strings.Join(waiting, ", "), r.o.AcceptTimeout))
		case len(waiting) > 0:
			return false, nil
		}
		return r.moveTo(ctx, rec, raw, phaseSwitch)
	case phaseSwitch:
		waiting, _, err := r.pending(ctx, rec.ID, phaseSwitch)
		if err != nil || len(waiting) > 0 {
			return false, err
		}
		return r.moveTo(ctx, rec, raw, phaseReseal)
	case phaseReseal:
		sealed, wrapped, raw, err := r.resealClaimed(ctx, rec, raw)
		if errors.Is(err, errTaken) {
			return true, nil // the loop reads the record again, and stops
		}
		if err != nil {
			return false, err
		}
		done := *rec
		done.Phase, done.Sealed, done.Wrapped = phaseDone, rec.Sealed+sealed, rec.Wrapped+wrapped
		data, err := json.Marshal(&done)
		if err != nil {
			return false, err
		}
		r.mu.Lock()
		next, old := r.next, r.old
		r.mu.Unlock()
		if next == nil || checkHex(next) != rec.To {
			return false, errors.New("fleetkey: this gateway does not hold the new key")
		}
		// NB: one transaction: the records are under the new key, and
		// the check record says so, and the old key is marked retired.
		var b kv.Batch
		b.SetIfEquals(recKey(), raw, data)
		b.Set(keyspace.System(keyspace.SysServerKeyCheck), next.Check())
		b.Set(retiredKey(old.Check()), []byte(time.Now().UTC().Format(time.RFC3339)))
		if err := r.o.Store.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
			return true, nil
		} else if err != nil {
			return false, err
		}
		return true, nil
	case phaseDone:
		waiting, _, err := r.pending(ctx, rec.ID, phaseDone)
		if err != nil || len(waiting) > 0 {
			return false, err
		}
		// A last pass for writes sealed under the old key that landed
		// after the re-sealing (this gateway still opens them). NB: best
		// effort: a driver that took over with only the new key cannot
		// open a straggler, which is lost with the old key either way.
		sealed, wrapped, raw, err := r.resealClaimed(ctx, rec, raw)
		if errors.Is(err, errTaken) {
			return true, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			r.o.Logger.Error("fleetkey: the last re-sealing pass failed; records still under the old key will not open", "rotation", rec.ID, "err", err)
		}
		// NB: the end is audited before the record goes: a driver killed
		// in between leaves the record, and the one that resumes audits
		// it again (a second entry) — rather than no entry at all, as
		// when killed after the deletion.
		r.o.Audit(ctx, "server-key.rotate.done", fmt.Sprintf("rotation %s: server key %.16s; %d credentials re-sealed, %d tenants' data keys re-wrapped; the old key opens nothing any more",
			rec.ID, rec.To, rec.Sealed+sealed, rec.Wrapped+wrapped))
		var b kv.Batch
		b.DeleteIfEquals(recKey(), raw)
		if err := r.o.Store.Apply(ctx, &b); errors.Is(err, kv.ErrConflict) {
			return true, nil
		} else if err != nil {
			return false, err
		}
		r.finish(ctx, rec.ID)
		return true, nil
	}
	return false, fmt.Errorf("fleetkey: unknown rotation phase %d", rec.Phase)
}

// moveTo writes rec in phase p.
func (r *Rotator) moveTo(ctx context.Context, rec *rotation, raw []byte, p int) (bool, error) {
	n := *rec
	n.Phase, n.Beat = p, time.Now().UnixMilli()
	data, err := json.Marshal(&n)
	if err != nil {
		return false, err
	}
	var b kv.Batch
	b.SetIfEquals(recKey(), raw, data)
	if p == phaseReseal {
		// NB: with the re-sealing's start, the old key (and the tenant
		// keys' key-encryption key derived from it) seals nothing any
		// more: every write of a secret or a data key is conditioned on
		// these marks' absence (keyspace.RetiredServerKey, RetiredKEK).
		// A write sealed under the old key that was on its way (a
		// gateway switched meanwhile; or one stalled past its lease and
		// not waited for) is refused, and sealed again under the new key
		// by a gateway that switched; what landed before is in the
		// engine for the re-sealing to find.
		r.mu.Lock()
		old := r.old
		r.mu.Unlock()
		if old == nil || checkHex(old) != rec.From {
			return false, errors.New("fleetkey: this gateway does not hold the old key")
		}
		now := []byte(time.Now().UTC().Format(time.RFC3339))
		b.Set(retiredKey(old.Check()), now)
		b.Set(keyspace.RetiredKEK(tenantkey.KEKID(old.Derive(r.o.KEKInfo))), now)
	}
	if err := r.o.Store.Apply(ctx, &b); err != nil && !errors.Is(err, kv.ErrConflict) {
		return false, err
	}
	r.o.Logger.Info("fleetkey: server key rotation", "rotation", rec.ID, "phase", phaseNames[p])
	return true, nil
}

// resealClaimed is resealAll while renewing the driver's claim on rec
// (stored as raw) every Lease/4, and returns the record's bytes as last
// renewed. NB: a re-sealing pass over many credentials and tenants takes
// longer than the lease; without renewal another gateway would take the
// rotation over meanwhile, and then this one again, each pass's end
// failing on the other's claim. Errors: errTaken if the claim was lost.
func (r *Rotator) resealClaimed(ctx context.Context, rec *rotation, raw []byte) (sealed, wrapped int, last []byte, err error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	last = raw
	lost := false
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(r.o.Lease / 4)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			c := *rec
			c.Owner, c.Beat = r.o.Self, time.Now().UnixMilli()
			data, err := r.replace(wctx, last, &c)
			switch {
			case err == nil:
				last = data
			case errors.Is(err, kv.ErrConflict):
				lost = true
				cancel()
				return
			}
		}
	}()
	sealed, wrapped, err = r.resealAll(wctx)
	cancel()
	<-renewed
	if lost {
		return sealed, wrapped, nil, errTaken
	}
	return sealed, wrapped, last, err
}

// resealAll re-seals the credentials and re-wraps the tenant keys under
// the new key until a pass finds nothing to do, and returns the counts.
func (r *Rotator) resealAll(ctx context.Context) (sealed, wrapped int, err error) {
	for range 10 {
		s, err := r.o.Auth.Reseal(ctx)
		if err != nil {
			return sealed, wrapped, err
		}
		w, err := r.o.Keys.RewrapAll()
		if err != nil {
			return sealed, wrapped, err
		}
		cur, also := r.o.Auth.Keys()
		moved, err := ResealSecrets(ctx, r.o.Store, cur, also)
		if err != nil {
			return sealed, wrapped, err
		}
		sealed, wrapped = sealed+s, wrapped+w
		if s == 0 && w == 0 && !moved {
			return sealed, wrapped, nil
		}
	}
	return sealed, wrapped, errors.New("fleetkey: records under the old key keep appearing")
}

// finish ends the driver's part once the record is deleted: the old key
// is forgotten here too, and the gateways' adoption records removed.
func (r *Rotator) finish(ctx context.Context, id string) {
	r.mu.Lock()
	if r.rid == id && r.next != nil {
		r.key = r.next
		if err := r.use(r.key, nil); err != nil {
			r.o.Logger.Error("fleetkey: dropping the old key", "err", err)
		}
		r.old, r.next, r.state, r.rid = nil, nil, 0, ""
	}
	r.mu.Unlock()
	r.deleteAdoptions(ctx, id)
}

func (r *Rotator) deleteAdoptions(ctx context.Context, id string) {
	lo := keyspace.System(keyspace.SysServerKeyAdopted)
	var b kv.Batch
	_ = r.o.Store.Scan(ctx, lo, keyspace.PrefixEnd(lo), func(k, v []byte) bool {
		var a adoption
		if json.Unmarshal(v, &a) == nil && a.ID == id {
			b.DeleteIfEquals(bytes.Clone(k), bytes.Clone(v))
		}
		return true
	})
	for _, op := range b.Ops { // NB: one by one: a gateway may rewrite its own meanwhile
		var one kv.Batch
		one.Ops = append(one.Ops, op)
		_ = r.o.Store.Apply(ctx, &one)
	}
}

// abandon deletes the record of a rotation still in its accept phase
// (nothing is sealed under the new key yet): every gateway goes back to
// the old key alone.
func (r *Rotator) abandon(ctx context.Context, rec *rotation, raw []byte, why string) error {
	var b kv.Batch
	b.DeleteIfEquals(recKey(), raw)
	if err := r.o.Store.Apply(ctx, &b); err != nil {
		return err
	}
	r.o.Audit(ctx, "server-key.rotate.abandoned", fmt.Sprintf("rotation %s: %s", rec.ID, why))
	r.mu.Lock()
	err := r.noRotation(ctx)
	r.mu.Unlock()
	if err != nil {
		r.o.Logger.Error("fleetkey: going back to the old key", "err", err)
	}
	r.deleteAdoptions(ctx, rec.ID)
	return fmt.Errorf("%s, nothing changed: %s", abandonedMsg, why)
}
