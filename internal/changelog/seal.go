package changelog

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// A stored record is sealed under its tenant's data key: the header
// (version, event, flags, time) stays plaintext, since trimming reads the
// time of records it does not decode; the rest — the item's keys and
// images — is sealed with the record's storage key and the header as
// associated data, so a record opens only at the key it was appended at.
//
//	recordSealed event:1 flags:1 time-ms:8 sealed(keys [old] [new])
const recordSealed = 2

// keyring returns opts.Keys, or an in-memory keyring under a random key
// when none was given (tests; the engine always passes its own).
func keyring(opts Options) (*tenantkey.Keyring, error) {
	if opts.Keys != nil {
		return opts.Keys, nil
	}
	kek := make([]byte, 32)
	_, _ = rand.Read(kek)
	return tenantkey.Open(tenantkey.Options{KEK: kek})
}

func (l *Log) recordKey(k []byte) (*tenantkey.Key, error) {
	t, ok := keyspace.TenantOf(k)
	if !ok {
		return nil, errors.New("changelog: a record outside every tenant's range")
	}
	return l.keys.Key(t)
}

func recordAAD(k, header []byte) []byte {
	return append(append(make([]byte, 0, len(k)+len(header)), k...), header...)
}

// seal returns the stored form of v (an encodeRecord encoding) at key k.
func (l *Log) seal(k, v []byte) ([]byte, error) {
	key, err := l.recordKey(k)
	if err != nil {
		return nil, err
	}
	out := make([]byte, recordHeader, len(v)+tenantkey.Overhead)
	copy(out, v[:recordHeader])
	out[0] = recordSealed
	return key.Seal(out, v[recordHeader:], recordAAD(k, out))
}

// open returns the encodeRecord encoding of the record stored as v at k.
func (l *Log) open(k, v []byte) ([]byte, error) { return l.openTo(nil, k, v) }

// openTo is open appending the encoding to dst (empty, its capacity
// reused). NB: a record appended before encryption is returned as v
// itself, not in dst.
func (l *Log) openTo(dst, k, v []byte) ([]byte, error) {
	if len(v) < recordHeader {
		return nil, errBadRecord
	}
	key, err := l.recordKey(k)
	if err != nil {
		return nil, err
	}
	if v[0] == recordV1 && key.Status().Legacy {
		return v, nil // appended before encryption, not yet re-encrypted
	}
	if v[0] != recordSealed {
		return nil, errBadRecord
	}
	out := append(dst[:0], v[:recordHeader]...)
	if cap(out) < len(v) {
		out = append(make([]byte, 0, len(v)), out...)
	}
	out[0] = recordV1
	out, err = key.Open(out, v[recordHeader:], recordAAD(k, v[:recordHeader]))
	if err != nil {
		return nil, fmt.Errorf("changelog: record: %w", err)
	}
	return out, nil
}

// Reseal re-encrypts the records of namespace ns in db that are not
// sealed under the current version of their tenant's key (a tenant key
// rotation), and returns how many it rewrote. Records never change once
// appended, so no lock is needed; one that trimming deletes meanwhile and
// Reseal rewrites lies below the horizon, where no reader looks and the
// next trim deletes it again.
func (l *Log) Reseal(db *storage.DB, ns []byte) (int64, error) {
	lo, hi := keyspace.ChangeLogRange(ns)
	var n int64
	for {
		b := db.NewBatch()
		it := db.NewIter(lo, hi)
		var last []byte
		count := 0
		for ok := it.First(); ok && count < 256; ok = it.Next() {
			k, v := it.Key(), it.Value()
			last = append(last[:0], k...)
			count++
			key, err := l.recordKey(k)
			if err != nil {
				it.Close()
				b.Close()
				return n, err
			}
			if len(v) >= recordHeader && v[0] == recordSealed && key.Current(v[recordHeader:]) {
				continue
			}
			plain, err := l.open(k, v)
			if err != nil {
				it.Close()
				b.Close()
				return n, err
			}
			sealed, err := l.seal(k, plain)
			if err != nil {
				it.Close()
				b.Close()
				return n, err
			}
			b.Set(k, sealed)
			n++
		}
		err := it.Close()
		if err == nil && b.Len() > 0 {
			err = db.Apply(b)
		}
		b.Close()
		if err != nil {
			return n, fmt.Errorf("changelog: re-encrypting: %w", err)
		}
		if count < 256 {
			return n, nil
		}
		lo = append(last, 0)
	}
}
