package changelog

import (
	"fmt"

	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/storage"
)

// Appender adds the records of one commit to that commit's storage
// batches. It is not safe for concurrent use; every Appender must end with
// Done.
//
// Use, with the items' locks held:
//
//	a := log.NewAppender()
//	defer a.Done(applied)        // applied: whether db.Apply(b) succeeded
//	a.Append(db, b, ns, stream, change)   // for each changed item
//	db.Apply(b)
type Appender struct {
	l      *Log
	allocs []*alloc
	regs   []pendingReg
	done   bool
	// last is the (store, namespace, stream) of the previous Append, whose
	// entry is then known to be registered or pending: a commit's records
	// are mostly of one stream and namespace.
	last struct {
		st *store
		ns []byte
		s  streamKey
	}
}

type pendingReg struct {
	st  *store
	key string
}

// NewAppender returns an Appender for one commit.
func (l *Log) NewAppender() *Appender { return &Appender{l: l} }

// Append adds the record of change c of an item in namespace ns to b, a
// batch of db (the store holding the item), as a record of stream s. It
// allocates the record's sequence number now: call it with the item's
// lock held, so that the changes of one item are numbered in the order
// they commit. It returns ErrStreamDisabled if s is disabled, or an error
// reading or leasing the namespace's sequence numbers.
//
// NB: the record is part of b: it is durable exactly when the item change
// is, and absent exactly when the change is.
func (a *Appender) Append(db *storage.DB, b *storage.Batch, ns []byte, s Stream, c Change) error {
	if a.done {
		return fmt.Errorf("changelog: Append after Done")
	}
	if !s.Enabled() {
		return ErrStreamDisabled
	}
	if !c.Existed && !c.hasOld() && !c.hasNew() {
		return fmt.Errorf("changelog: a change of an absent item to nothing is no change")
	}
	st := a.l.store(db)
	al, ms, err := st.ns(ns).allocate(s, a.l.now().UnixMilli())
	if err != nil {
		return err
	}
	a.allocs = append(a.allocs, al)
	a.l.noteShard(s, al.shard)
	plain, _ := encodeRecord(c, s.Capture, ms)
	k := keyspace.ChangeRecord(ns, s.Table, s.ID, al.shard, al.seq)
	v, err := a.l.seal(k, plain)
	if err != nil {
		return err
	}
	b.Set(k, v)
	if a.last.st == st && a.last.s == (streamKey{s.Table, s.ID}) && string(a.last.ns) == string(ns) {
		return nil
	}
	reg := keyspace.ChangeLogEntry(ns, s.Table, s.ID)
	if _, ok := st.registered.Load(string(reg)); !ok {
		b.Set(reg, nil)
		a.regs = append(a.regs, pendingReg{st, string(reg)})
	}
	a.last.st, a.last.ns, a.last.s = st, ns, streamKey{s.Table, s.ID}
	return nil
}

// Done ends the commit: applied says whether the batches the records were
// added to were applied. Readers do not read past a sequence number whose
// Appender is not done, so Done must follow Apply. It is safe to call
// more than once.
func (a *Appender) Done(applied bool) {
	if a.done {
		return
	}
	a.done = true
	if applied {
		for _, r := range a.regs {
			r.st.registered.Store(r.key, struct{}{})
		}
	}
	for _, al := range a.allocs {
		al.release()
	}
}
