package changelog

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
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
func (l *Log) open(k, v []byte) ([]byte, error) {
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
	out := make([]byte, recordHeader, len(v))
	copy(out, v[:recordHeader])
	out[0] = recordV1
	out, err = key.Open(out, v[recordHeader:], recordAAD(k, v[:recordHeader]))
	if err != nil {
		return nil, fmt.Errorf("changelog: record: %w", err)
	}
	return out, nil
}
