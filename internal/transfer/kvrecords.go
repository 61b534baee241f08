package transfer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Control is the control plane's key-value store, as this package uses
// it (kv.Local or, on a gateway fleet, enginekv.Store).
type Control interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, lo, hi []byte, f func(k, v []byte) bool) error
	Apply(ctx context.Context, b *kv.Batch) error
}

// kvRecords keeps the job records of a gateway fleet in the control
// plane's store (see DESIGN.md, "On a gateway fleet"):
//
//	t<tenant> j <env> 0x00 <kind> <id>        kvRecord (JSON)
//	s xfr/ <tenant> <env> 0x00 <kind> <id>    present while in progress
//
// A job's runner holds a lease in its record: a random token (owner) and
// the time of its last write (beat), renewed every lease/3. Every write
// of the runner is conditioned on the bytes it last wrote, so once
// another gateway has claimed the record (or the tenant's deletion
// removed it) the runner's next write fails and it stops. A gateway's
// sweep reads the registry and claims, with a conditional write, every
// job whose beat is older than the lease (its gateway died, or stopped
// and released it), then resumes it (resume.go).
type kvRecords struct {
	st    Control
	owner string // this gateway's id, logged in the tokens
	lease time.Duration
	now   func() time.Time
	log   *slog.Logger

	mu      sync.Mutex
	running map[string]bool // registry keys of the jobs this gateway holds
}

// kvRecord is a job's record in the store.
type kvRecord struct {
	Rec   json.RawMessage `json:"rec"`
	Scope *jobScope       `json:"scope,omitempty"`
	Owner string          `json:"owner,omitempty"`
	Beat  int64           `json:"beat,omitempty"` // unix ms; 0: released
}

var kindByte = map[string]byte{exportsDir: 'e', importsDir: 'i'}
var kindName = map[byte]string{'e': exportsDir, 'i': importsDir}

func (k *kvRecords) key(ref jobRef) []byte {
	return keyspace.TransferJob(ref.t, ref.env, kindByte[ref.kind], ref.id)
}

func (k *kvRecords) regKey(ref jobRef) []byte {
	return keyspace.TransferRunning(ref.t, ref.env, kindByte[ref.kind], ref.id)
}

func (k *kvRecords) token() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return k.owner + "/" + hex.EncodeToString(b)
}

func (k *kvRecords) create(ctx context.Context, ref jobRef, js jobScope, v any) (jobHold, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	rec := kvRecord{Rec: raw, Scope: &js, Owner: k.token(), Beat: k.now().UnixMilli()}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("transfer: %w", err)
	}
	// NB: the registry entry first, each write alone (no engine
	// transaction: dynalite has none): a crash between leaves an entry
	// without a record, which the sweep drops.
	var reg kv.Batch
	reg.Set(k.regKey(ref), []byte(strconv.FormatInt(k.now().UnixMilli(), 10)))
	if err := k.st.Apply(ctx, &reg); err != nil {
		return nil, fmt.Errorf("transfer: writing a job record: %w", err)
	}
	var batch kv.Batch
	batch.SetIfAbsent(k.key(ref), b)
	if err := k.st.Apply(ctx, &batch); err != nil {
		return nil, fmt.Errorf("transfer: writing a job record: %w", err)
	}
	return k.hold(ref, rec, b), nil
}

func (k *kvRecords) load(ctx context.Context, ref jobRef, v any) (bool, error) {
	b, err := k.st.Get(ctx, k.key(ref))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("transfer: reading a job record: %w", err)
	}
	var rec kvRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return false, fmt.Errorf("transfer: corrupt job record: %w", err)
	}
	return true, json.Unmarshal(rec.Rec, v)
}

func (k *kvRecords) ids(ctx context.Context, t tenancy.TenantID, env, kind string) ([]string, error) {
	lo, hi := keyspace.TransferJobs(t, env, kindByte[kind])
	var ids []string
	err := k.st.Scan(ctx, lo, hi, func(key, _ []byte) bool {
		ids = append(ids, string(key[len(lo):]))
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("transfer: listing job records: %w", err)
	}
	return ids, nil // NB: in key order, which is id order
}

// interrupted claims the jobs in progress whose lease lapsed.
func (k *kvRecords) interrupted(ctx context.Context) ([]interruptedJob, error) {
	lo, hi := keyspace.TransfersRunning()
	var regs [][]byte
	since := map[string]int64{}
	if err := k.st.Scan(ctx, lo, hi, func(key, v []byte) bool {
		regs = append(regs, append([]byte(nil), key...))
		since[string(key)], _ = strconv.ParseInt(string(v), 10, 64)
		return true
	}); err != nil {
		return nil, fmt.Errorf("transfer: reading the running jobs: %w", err)
	}
	var out []interruptedJob
	for _, rk := range regs {
		t, env, kb, id, ok := keyspace.TransferRunningEntry(rk)
		if !ok || kindName[kb] == "" {
			continue
		}
		ref := jobRef{t: t, env: env, kind: kindName[kb], id: id}
		k.mu.Lock()
		mine := k.running[string(rk)]
		k.mu.Unlock()
		if mine {
			continue
		}
		old, err := k.st.Get(ctx, k.key(ref))
		if errors.Is(err, kv.ErrNotFound) {
			// NB: the tenant was deleted (its records with it), or the
			// job's start wrote its entry and stopped before its record:
			// the entry is all that is left. Not while the start may
			// still be writing the record.
			if k.now().Sub(time.UnixMilli(since[string(rk)])) > k.lease {
				k.dropReg(ctx, rk)
			}
			continue
		}
		if err != nil {
			return out, fmt.Errorf("transfer: reading a job record: %w", err)
		}
		var rec kvRecord
		if json.Unmarshal(old, &rec) != nil || !inProgress(ref.kind, rec.Rec) {
			k.dropReg(ctx, rk)
			continue
		}
		if rec.Beat != 0 && k.now().Sub(time.UnixMilli(rec.Beat)) < k.lease {
			continue // its runner is alive
		}
		prev := rec.Owner
		rec.Owner, rec.Beat = k.token(), k.now().UnixMilli()
		b, err := json.Marshal(rec)
		if err != nil {
			return out, err
		}
		var batch kv.Batch
		batch.SetIfEquals(k.key(ref), old, b)
		if err := k.st.Apply(ctx, &batch); errors.Is(err, kv.ErrConflict) {
			continue // another gateway claimed it first
		} else if err != nil {
			return out, fmt.Errorf("transfer: claiming a job: %w", err)
		}
		k.log.Info("transfer: claimed an interrupted job", "kind", ref.kind, "id", id, "previous", prev)
		ij := interruptedJob{ref: ref, raw: rec.Rec, hold: k.hold(ref, rec, b)}
		if rec.Scope != nil {
			ij.js, ij.ok = *rec.Scope, true
		}
		out = append(out, ij)
	}
	return out, nil
}

func (k *kvRecords) dropReg(ctx context.Context, rk []byte) {
	var b kv.Batch
	b.Delete(rk)
	if err := k.st.Apply(ctx, &b); err != nil {
		k.log.Warn("transfer: removing a job's registry entry", "err", err)
	}
}

// removeTenant deletes tenant t's records and registry entries (the
// tenant's deletion also deletes its range; this makes the removal the
// service's own, and clears the registry).
func (k *kvRecords) removeTenant(ctx context.Context, t tenancy.TenantID) error {
	for _, r := range [][2][]byte{pair(keyspace.TenantTransferJobs(t)), pair(keyspace.TenantTransfersRunning(t))} {
		for {
			var keys [][]byte
			if err := k.st.Scan(ctx, r[0], r[1], func(key, _ []byte) bool {
				keys = append(keys, append([]byte(nil), key...))
				return len(keys) < 25
			}); err != nil {
				return fmt.Errorf("transfer: removing the tenant's job records: %w", err)
			}
			if len(keys) == 0 {
				break
			}
			for _, key := range keys {
				var b kv.Batch
				b.Delete(key)
				if err := k.st.Apply(ctx, &b); err != nil {
					return fmt.Errorf("transfer: removing the tenant's job records: %w", err)
				}
			}
		}
	}
	return nil
}

func pair(lo, hi []byte) [2][]byte { return [2][]byte{lo, hi} }

// kvHold is a runner's lease on its record.
type kvHold struct {
	k   *kvRecords
	ref jobRef
	reg string

	mu     sync.Mutex
	rec    kvRecord
	old    []byte // the bytes last written
	lastOK time.Time
	gone   bool
	lostCh chan struct{}
	done   chan struct{}
	once   sync.Once
}

// errLost: another gateway claimed the job, or its record is gone.
var errLost = errors.New("transfer: the job's record was taken over or removed")

func (k *kvRecords) hold(ref jobRef, rec kvRecord, b []byte) *kvHold {
	h := &kvHold{k: k, ref: ref, reg: string(k.regKey(ref)), rec: rec, old: b, lastOK: k.now(),
		lostCh: make(chan struct{}), done: make(chan struct{})}
	k.mu.Lock()
	k.running[h.reg] = true
	k.mu.Unlock()
	go h.beat()
	return h
}

// beat renews the lease every lease/3 until the hold ends. A runner
// that cannot renew it within half the lease gives the job up before
// another gateway may claim it.
func (h *kvHold) beat() {
	tick := time.NewTicker(h.k.lease / 3)
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		err := h.write(nil, false)
		if err != nil && !errors.Is(err, errLost) && h.k.now().Sub(h.lastOK) > h.k.lease/2 {
			h.loseLocked()
		}
		h.mu.Unlock()
	}
}

// write writes the record with v (nil: as it is) and a new beat;
// release ends the lease (and, with v, the job). mu is held.
func (h *kvHold) write(v any, end bool) error {
	if h.gone {
		return errLost
	}
	rec := h.rec
	if v != nil {
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		rec.Rec = raw
	}
	rec.Beat = h.k.now().UnixMilli()
	if end {
		rec.Owner, rec.Beat = "", 0
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.k.lease)
	defer cancel()
	var batch kv.Batch
	batch.SetIfEquals(h.k.key(h.ref), h.old, b)
	err = h.k.st.Apply(ctx, &batch)
	if errors.Is(err, kv.ErrConflict) {
		h.loseLocked()
		return errLost
	}
	if err != nil {
		return fmt.Errorf("transfer: saving a job record: %w", err)
	}
	h.rec, h.old, h.lastOK = rec, b, h.k.now()
	if end && v != nil {
		// NB: after the record: a crash between leaves an entry whose
		// record is no longer in progress, which the sweep drops.
		h.k.dropReg(ctx, []byte(h.reg))
	}
	return nil
}

func (h *kvHold) loseLocked() {
	if !h.gone {
		h.gone = true
		close(h.lostCh)
		h.finish()
	}
}

func (h *kvHold) finish() {
	h.once.Do(func() {
		close(h.done)
		h.k.mu.Lock()
		delete(h.k.running, h.reg)
		h.k.mu.Unlock()
	})
}

func (h *kvHold) save(v any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.write(v, false)
}

func (h *kvHold) end(v any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.write(v, true)
	h.finish()
	return err
}

// stop releases the lease at once (beat 0), so that another gateway
// resumes the job without waiting for it to lapse.
func (h *kvHold) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.write(nil, true); err != nil && !errors.Is(err, errLost) {
		h.k.log.Warn("transfer: releasing a job's lease", "id", h.ref.id, "err", err)
	}
	h.finish()
}

func (h *kvHold) lost() <-chan struct{} { return h.lostCh }
