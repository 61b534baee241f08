package changelog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The descriptors' index by owner and table name (keyspace.StreamName):
// written with the descriptor, deleted with it. A namespace reaches the
// streams of its deleted tables, and of deleted shared tables, by reading
// its own owner's part and the shared part of the index, never every
// tenant's descriptors.

// findStreams returns the streams with id of tables named name that are
// shared or owned by ns.
func (l *Log) findStreams(name string, id uint64, ns []byte) ([]Stream, error) {
	var out []Stream
	for _, owner := range [][]byte{nil, ns} {
		lo, hi := keyspace.StreamNames(owner, name)
		found, err := l.indexed(lo, hi, func(_, sid uint64) bool { return sid == id })
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		if ns == nil {
			break
		}
	}
	return out, nil
}

// VisibleStreams returns every stream (enabled or not, of live tables or
// deleted ones) of the shared tables and of the tables namespace ns owns,
// as the index holds them: by owner, then table name, table and age.
func (l *Log) VisibleStreams(ns []byte) ([]Stream, error) {
	var out []Stream
	for _, owner := range [][]byte{nil, ns} {
		lo, hi := keyspace.OwnerStreamNames(owner)
		found, err := l.indexed(lo, hi, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
		if ns == nil {
			break
		}
	}
	return out, nil
}

// indexed returns the streams whose StreamName keys in [lo, hi) keep
// accepts (nil: all). An index key whose descriptor is gone is skipped.
func (l *Log) indexed(lo, hi []byte, keep func(table, stream uint64) bool) ([]Stream, error) {
	it := l.main.NewIter(lo, hi)
	defer it.Close()
	var out []Stream
	for ok := it.First(); ok; ok = it.Next() {
		table, id, ok := keyspace.ParseStreamName(it.Key())
		if !ok || keep != nil && !keep(table, id) {
			continue
		}
		s, err := l.Stream(table, id)
		if errors.Is(err, ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("changelog: reading the stream index: %w", err)
	}
	return out, nil
}

// deleteStream adds the deletion of s's descriptor and index key to b.
func deleteStream(b *storage.Batch, s Stream) {
	b.Delete(keyspace.StreamDescriptor(s.Table, s.ID))
	b.Delete(keyspace.StreamName(s.Owner, s.TableName, s.Table, s.ID))
}

// indexNames writes the index key of every descriptor that lacks one
// (descriptors written before the index existed). It reads every
// descriptor once, when the log opens.
func (l *Log) indexNames() error {
	lo, hi := keyspace.AllStreamDescriptors()
	it := l.main.NewIter(lo, hi)
	defer it.Close()
	b := l.main.NewBatch()
	defer b.Close()
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		s, err := decodeStream(beUint64(k[len(k)-16:]), beUint64(k[len(k)-8:]), it.Value())
		if err != nil {
			return err
		}
		nk := keyspace.StreamName(s.Owner, s.TableName, s.Table, s.ID)
		if _, err := l.main.Get(nk); errors.Is(err, storage.ErrNotFound) {
			b.Set(nk, nil)
		} else if err != nil {
			return fmt.Errorf("changelog: reading the stream index: %w", err)
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("changelog: listing streams: %w", err)
	}
	if b.Len() == 0 {
		return nil
	}
	if err := l.main.Apply(b); err != nil {
		return fmt.Errorf("changelog: indexing streams: %w", err)
	}
	return nil
}

// ownedStreams returns the streams of the tables tenant t's namespaces
// own.
func (l *Log) ownedStreams(t tenancy.TenantID) ([]Stream, error) {
	lo, hi := keyspace.TenantStreamNames(t)
	found, err := l.indexed(lo, hi, nil)
	if err != nil {
		return nil, err
	}
	prefix := keyspace.Tenant(t)
	out := found[:0]
	for _, s := range found {
		if bytes.HasPrefix(s.Owner, prefix) {
			out = append(out, s)
		}
	}
	return out, nil
}

// EnabledStreams returns every enabled stream, reading every descriptor:
// for the engine's check, when it opens, that each is named by a
// definition (see the engine's repairStreams).
func (l *Log) EnabledStreams() ([]Stream, error) {
	lo, hi := keyspace.AllStreamDescriptors()
	it := l.main.NewIter(lo, hi)
	defer it.Close()
	var out []Stream
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		s, err := decodeStream(beUint64(k[len(k)-16:]), beUint64(k[len(k)-8:]), it.Value())
		if err != nil {
			return nil, err
		}
		if s.Enabled() {
			out = append(out, s)
		}
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("changelog: listing streams: %w", err)
	}
	return out, nil
}

// DeleteUnused deletes the descriptor of a stream that never took a
// record: one created for a table definition that was never saved (a
// crash in between). REQUIRES: no Append of s ever happened.
func (l *Log) DeleteUnused(s Stream) error {
	l.ddl.Lock()
	defer l.ddl.Unlock()
	b := l.main.NewBatch()
	defer b.Close()
	deleteStream(b, s)
	if err := l.main.Apply(b); err != nil {
		return fmt.Errorf("changelog: deleting an unused stream: %w", err)
	}
	return nil
}
