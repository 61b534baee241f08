package fleetkey

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
)

// Secrets kept sealed under the server key (sealedSecret): the fleet's
// stream secret seals the shard iterators the gateways hand tenants, the
// webhook secret seals the subscriptions' signing secrets at rest.
// Derived from each gateway's server key, either would differ between a
// gateway that started before a rotation and one started after (and,
// embedded, between before and after the restart that follows one); so
// each is kept in the control store, sealed under the server key and
// re-sealed by a rotation like a credential, and every gateway uses it.
// NB: a rotation keeps their values: what they sealed (iterators,
// signing secrets) stays valid.

// sealedSecret is one such secret: its record and how it is sealed.
type sealedSecret struct {
	name string // keyspace.System name of its record
	info string // derives its sealing key from the server key
	aad  []byte
}

var (
	streamSecret  = sealedSecret{keyspace.SysStreamSecret, "tenantdb fleet stream secret seal v1", []byte("tenantdb fleet stream secret v1")}
	webhookSecret = sealedSecret{keyspace.SysWebhookSecret, "tenantdb webhook secret seal v1", []byte("tenantdb webhook secret v1")}
	// sealedSecrets are those a rotation re-seals.
	sealedSecrets = []sealedSecret{streamSecret, webhookSecret}
)

func (sec sealedSecret) aead(k *auth.ServerKey) (cipher.AEAD, error) {
	block, err := aes.NewCipher(k.Derive(sec.info))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func (sec sealedSecret) seal(k *auth.ServerKey, secret []byte) ([]byte, error) {
	a, err := sec.aead(k)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize())
	rand.Read(nonce)
	return a.Seal(nonce, nonce, secret, sec.aad), nil
}

func (sec sealedSecret) open(k *auth.ServerKey, sealed []byte) ([]byte, error) {
	a, err := sec.aead(k)
	if err != nil {
		return nil, err
	}
	if len(sealed) < a.NonceSize() {
		return nil, fmt.Errorf("fleetkey: the %s record is corrupt", sec.name)
	}
	return a.Open(nil, sealed[:a.NonceSize()], sealed[a.NonceSize():], sec.aad)
}

// StreamSecret returns the fleet's stream secret, opened under the
// authenticator's keys (either, during a rotation); the first gateway to
// ask stores derived, the secret gateways derived from the server key
// before the record existed, so that iterators handed out then still
// open.
func StreamSecret(ctx context.Context, st Store, a *auth.Authenticator, derived []byte) ([]byte, error) {
	return streamSecret.get(ctx, st, a, derived)
}

// WebhookSecret returns the key that seals webhook subscriptions'
// signing secrets at rest, as StreamSecret (derived: the key derived from
// the server key before the record existed, which sealed the secrets
// stored then). Embedded too: a server key rotation re-seals it
// (ResealSecrets).
func WebhookSecret(ctx context.Context, st Store, a *auth.Authenticator, derived []byte) ([]byte, error) {
	return webhookSecret.get(ctx, st, a, derived)
}

func (sec sealedSecret) get(ctx context.Context, st Store, a *auth.Authenticator, derived []byte) ([]byte, error) {
	k := keyspace.System(sec.name)
	cur, also := a.Keys()
	sealed, err := sec.seal(cur, derived)
	if err != nil {
		return nil, err
	}
	var b kv.Batch
	b.SetIfAbsent(k, sealed)
	b.Expect(retiredKey(cur.Check()), nil) // NB: as every sealed write (DESIGN.md)
	if err := st.Apply(ctx, &b); err == nil {
		return derived, nil
	} else if !errors.Is(err, kv.ErrConflict) {
		return nil, err
	}
	v, err := st.Get(ctx, k)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, errors.New("fleetkey: this gateway's server key was retired by a rotation of the fleet")
	}
	if err != nil {
		return nil, err
	}
	for _, key := range []*auth.ServerKey{cur, also} {
		if key == nil {
			continue
		}
		if s, err := sec.open(key, v); err == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("fleetkey: the %s record does not open under this server key", sec.name)
}

// ResealSecrets re-seals under cur every secret of sealedSecrets stored
// under also instead, each on condition that it is what was read; it
// reports whether it re-sealed any. Idempotent.
func ResealSecrets(ctx context.Context, st Store, cur, also *auth.ServerKey) (bool, error) {
	moved := false
	for _, sec := range sealedSecrets {
		m, err := sec.reseal(ctx, st, cur, also)
		if err != nil {
			return moved, err
		}
		moved = moved || m
	}
	return moved, nil
}

func (sec sealedSecret) reseal(ctx context.Context, st Store, cur, also *auth.ServerKey) (bool, error) {
	k := keyspace.System(sec.name)
	v, err := st.Get(ctx, k)
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := sec.open(cur, v); err == nil {
		return false, nil
	}
	if also == nil {
		return false, fmt.Errorf("fleetkey: the %s record is sealed under another key than this server's", sec.name)
	}
	secret, err := sec.open(also, v)
	if err != nil {
		return false, fmt.Errorf("fleetkey: the %s record opens under neither key of the rotation", sec.name)
	}
	sealed, err := sec.seal(cur, secret)
	if err != nil {
		return false, err
	}
	var b kv.Batch
	b.SetIfEquals(k, bytes.Clone(v), sealed)
	if err := st.Apply(ctx, &b); err != nil && !errors.Is(err, kv.ErrConflict) {
		return false, err
	}
	return true, nil
}
