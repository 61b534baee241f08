package engine

import (
	"bytes"
	"errors"
	"sync"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenantkey"
)

// values is the one place where the engine turns an item (a table item or
// an index entry) into the bytes it stores and back: the attr encoding,
// sealed (AES-256-GCM) under the data key of the tenant whose namespace
// the physical key lies in, with the physical key as associated data. So
// a stored value opens only at the key it was written at — not under
// another item, table, index or tenant — and only while the tenant's key
// exists. The physical keys themselves (namespace, table, partition and
// sort key, index keys) stay plaintext: they must keep their order.
// internal/lint's TestStoredValuesOneSeam keeps every other file of the
// engine off attr.EncodeItem and attr.DecodeItem.
type values struct {
	keys *tenantkey.Keyring
}

// bufs recycles plaintext buffers: DecodeItem copies what it keeps, so the
// opened plaintext can be reused, and an encoding is sealed into a new
// slice.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// key returns the data key of the tenant owning physical key pk.
func (v *values) key(pk []byte) (*tenantkey.Key, error) {
	t, ok := keyspace.TenantOf(pk)
	if !ok {
		return nil, apierr.New(apierr.Internal, "engine: a value outside every tenant's range")
	}
	k, err := v.keys.Key(t)
	if errors.Is(err, tenantkey.ErrDestroyed) {
		// NB: what a deleted tenant's credential gets; reached with a
		// live credential only on a server restored from a backup taken
		// before the tenant's deletion (tenantkey.ShreddedSuffix).
		return nil, apierr.New(apierr.UnrecognizedClient, "tenant %s was deleted: its data key was destroyed, so its data can no longer be read or written by anyone", t)
	}
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "loading the tenant's data key")
	}
	return k, nil
}

// encode returns the stored value of item it at physical key pk.
func (v *values) encode(pk []byte, it attr.Item) ([]byte, error) {
	k, err := v.key(pk)
	if err != nil {
		return nil, err
	}
	bp := bufs.Get().(*[]byte)
	plain := attr.AppendItem((*bp)[:0], it)
	out, err := k.Seal(make([]byte, 0, len(plain)+tenantkey.Overhead), plain, pk)
	*bp = plain
	bufs.Put(bp)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "sealing item")
	}
	return out, nil
}

// encodeKeep is encode that, with keep, also returns the attr encoding
// it sealed (for a change record, which stores it again under its own
// key).
func (v *values) encodeKeep(pk []byte, it attr.Item, keep bool) (sealed, plain []byte, err error) {
	if !keep {
		sealed, err = v.encode(pk, it)
		return sealed, nil, err
	}
	k, err := v.key(pk)
	if err != nil {
		return nil, nil, err
	}
	plain = attr.EncodeItem(it)
	if sealed, err = k.Seal(make([]byte, 0, len(plain)+tenantkey.Overhead), plain, pk); err != nil {
		return nil, nil, apierr.Wrap(apierr.Internal, err, "sealing item")
	}
	return sealed, plain, nil
}

// open returns the attr encoding stored as sealed at pk, in the pooled
// buffer *bp, which the caller returns with release.
func (v *values) open(pk, sealed []byte) (plain []byte, bp *[]byte, err error) {
	k, err := v.key(pk)
	if err != nil {
		return nil, nil, err
	}
	bp = bufs.Get().(*[]byte)
	plain, err = k.Open((*bp)[:0], sealed, pk)
	if err != nil {
		bufs.Put(bp)
		if errors.Is(err, tenantkey.ErrUnreadable) {
			return nil, nil, apierr.Wrap(apierr.Internal, err, "stored item does not open under the tenant's key")
		}
		return nil, nil, apierr.Wrap(apierr.Internal, err, "opening item")
	}
	return plain, bp, nil
}

func release(bp *[]byte, plain []byte) {
	*bp = plain[:0]
	bufs.Put(bp)
}

// decode returns the item stored as sealed at physical key pk. NB: it
// keeps nothing of sealed.
func (v *values) decode(pk, sealed []byte) (attr.Item, error) {
	plain, bp, err := v.open(pk, sealed)
	if err != nil {
		return nil, err
	}
	it, err := attr.DecodeItem(plain)
	release(bp, plain)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding item")
	}
	return it, nil
}

// decodeKept decodes an item's attr encoding kept by size or encodeKeep
// (already opened).
func decodeKept(plain []byte) (attr.Item, error) {
	it, err := attr.DecodeItem(plain)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "decoding item")
	}
	return it, nil
}

// size returns attr.ItemSize of the item stored as sealed at pk, without
// decoding it, and with keep a copy of its attr encoding.
func (v *values) size(pk, sealed []byte, keep bool) (int, []byte, error) {
	plain, bp, err := v.open(pk, sealed)
	if err != nil {
		return 0, nil, err
	}
	n, err := attr.EncodedItemSize(plain)
	var enc []byte
	if err == nil && keep {
		enc = bytes.Clone(plain)
	}
	release(bp, plain)
	if err != nil {
		return 0, nil, apierr.Wrap(apierr.Internal, err, "decoding item")
	}
	return n, enc, nil
}

// current reports whether the value stored as sealed at pk is sealed
// under its tenant's current key version (a rotation's test).
func (v *values) current(pk, sealed []byte) (bool, error) {
	k, err := v.key(pk)
	if err != nil {
		return false, err
	}
	return k.Current(sealed), nil
}
