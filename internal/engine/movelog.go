package engine

import (
	"encoding/binary"
	"encoding/json"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The finished moves of a tenant (s mvh/), newest last, at most
// moveRecent of them: what Moves lists after the running ones, also
// after a restart. An entry is written in the batch that removes the
// move's record, so a move is either running (or to be resumed) or in
// its tenant's history, never neither. DropTenant deletes them with the
// tenant's placements.

// stageMoveLog adds st, tenant's finished move of table (0 for its
// tier), to b and deletes the oldest entries beyond moveRecent.
// REQUIRES: e.mover.logMu held until b is applied.
func (e *Engine) stageMoveLog(b *storage.Batch, tenant tenancy.TenantID, table uint64, st schema.MoveStatus) error {
	v, err := json.Marshal(st)
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "encoding a finished move")
	}
	lo, hi := keyspace.MoveLogRange(tenant)
	it := e.db.NewIter(lo, hi)
	var keys [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if err := it.Close(); err != nil {
		return apierr.Wrap(apierr.Internal, err, "reading a tenant's finished moves")
	}
	at := st.Finished.UnixNano()
	if n := len(keys); n > 0 {
		// NB: after the last one, whatever the clock says: newest last.
		last := keys[n-1][len(lo) : len(lo)+8]
		at = max(at, int64(binary.BigEndian.Uint64(last))+1)
	}
	for len(keys) >= moveRecent {
		b.Delete(keys[0])
		keys = keys[1:]
	}
	b.Set(keyspace.MoveLog(tenant, at, table), v)
	return nil
}

// moveLog returns tenant's finished moves, newest first.
func (e *Engine) moveLog(tenant tenancy.TenantID) ([]schema.MoveStatus, error) {
	lo, hi := keyspace.MoveLogRange(tenant)
	it := e.db.NewIter(lo, hi)
	var out []schema.MoveStatus
	for ok := it.Last(); ok; ok = it.Prev() {
		var st schema.MoveStatus
		if err := json.Unmarshal(it.Value(), &st); err != nil {
			it.Close()
			return nil, apierr.Wrap(apierr.Internal, err, "decoding a finished move")
		}
		out = append(out, st)
	}
	if err := it.Close(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "reading a tenant's finished moves")
	}
	return out, nil
}

// finishMove deletes the record at key and, unless the tenant is gone,
// records st in its history, in one synced batch.
func (e *Engine) finishMove(tenant tenancy.TenantID, table uint64, key []byte, st schema.MoveStatus) error {
	e.mover.logMu.Lock()
	defer e.mover.logMu.Unlock()
	b := e.db.NewBatch()
	defer b.Close()
	b.Delete(key)
	if !e.isDropped(tenant) {
		if err := e.stageMoveLog(b, tenant, table, st); err != nil {
			return err
		}
	}
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "ending a move")
	}
	return nil
}
