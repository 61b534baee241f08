package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Re-encrypting a tenant's log on a fleet of gateways (Options.Shared):
// other gateways append meanwhile, each sealing under the version of the
// tenant's key it read last (cached for up to the keyring's MaxStale).
// The caller (package rekey) waits that long after making the new
// version current, so that every append that starts afterwards seals
// under it; resealShared then
//
//  1. reads the head (seq n), and re-seals every record up to n not
//     sealed under the current version, each write conditioned on the
//     record being what it read (a record deleted with its tenant is not
//     written back; two gateways resealing at once do not undo each
//     other);
//  2. when a pass up to n finds nothing left, fences the chain: the head
//     is rewritten (its denial bucket's time moved by 1 ns) on condition
//     that it is still the head of n. An append prepared before — sealed
//     under a version that may be about to be destroyed — is conditioned
//     on an older head and fails; it reads the head again, and with it
//     the tenant's key, and seals under the current version. If the head
//     moved meanwhile, the pass runs again.
//
// So once resealShared returns, no record of the tenant is, or can still
// be written, under an older version than the current one.

// resealChunk is how many records one conditional write re-seals (the
// engine's transactions take 100 operations).
const resealChunk = 50

// resealShared is Reseal on a fleet. REQUIRES: c.mu held.
func (l *Log) resealShared(ctx context.Context, t tenancy.TenantID, c *chain) (int64, error) {
	var n int64
	for round := 0; ; round++ {
		if round > 1000 {
			return n, errors.New("audit: re-encrypting: the chain keeps moving")
		}
		head, err := l.db.Get(ctx, keyspace.AuditHead(t))
		if errors.Is(err, kv.ErrNotFound) {
			return n, nil // no record
		}
		if err != nil {
			return n, fmt.Errorf("audit: re-encrypting: %w", err)
		}
		if len(head) != headLen && len(head) != fleetHeadLen {
			return n, errors.New("audit: re-encrypting: corrupt chain head")
		}
		last := binary.BigEndian.Uint64(head)
		done, err := l.resealUpTo(ctx, t, last)
		n += done
		if err != nil {
			return n, err
		}
		if done > 0 {
			continue // read the head again: appends may have landed under an older version
		}
		var b kv.Batch
		b.SetIfEquals(keyspace.AuditHead(t), head, fenced(head, l.now()))
		err = l.db.Apply(ctx, &b)
		if errors.Is(err, kv.ErrConflict) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("audit: re-encrypting: fencing the chain: %w", err)
		}
		c.loaded = false
		return n, nil
	}
}

// fenced returns head with its denial bucket's time moved by 1 ns (a
// head without a bucket gets a full one): the same chain, another value.
func fenced(head []byte, now time.Time) []byte {
	out := bytes.Clone(head)
	if len(out) == headLen {
		out = binary.BigEndian.AppendUint64(out, math.Float64bits(deniedBurst))
		return binary.BigEndian.AppendUint64(out, uint64(now.UnixNano()))
	}
	binary.BigEndian.PutUint64(out[56:], binary.BigEndian.Uint64(out[56:])+1)
	return out
}

// resealUpTo re-seals tenant t's records 1..last that are not sealed under
// the current version of its key and returns how many it rewrote.
func (l *Log) resealUpTo(ctx context.Context, t tenancy.TenantID, last uint64) (int64, error) {
	lo, _ := keyspace.AuditRange(t)
	hi := keyspace.Audit(t, last+1)
	var n int64
	for from := lo; ; {
		k, err := l.keys.Key(t)
		if err != nil {
			return n, fmt.Errorf("audit: %w", err)
		}
		var b kv.Batch
		var next []byte
		count := 0
		var derr error
		err = l.db.Scan(ctx, from, hi, func(key, v []byte) bool {
			if count == resealChunk {
				next = bytes.Clone(key)
				return false
			}
			val, err := l.resealed(t, k, key, v)
			if err != nil {
				derr = err
				return false
			}
			if val != nil {
				// NB: on condition: another gateway may re-seal or delete it meanwhile.
				b.SetIfEquals(key, v, val)
				count++
			}
			return true
		})
		if err == nil {
			err = derr
		}
		if err != nil {
			return n, fmt.Errorf("audit: re-encrypting: %w", err)
		}
		if count > 0 {
			err := l.db.Apply(ctx, &b)
			if errors.Is(err, kv.ErrConflict) {
				continue // a record changed under us (resealed, or deleted with the tenant): read this chunk again
			}
			if err != nil {
				return n, fmt.Errorf("audit: re-encrypting: %w", err)
			}
			n += int64(count)
		}
		if next == nil {
			return n, nil
		}
		from = next
	}
}
