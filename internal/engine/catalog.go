package engine

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// The catalog's physical side: the table id sequence, the registry of
// namespaces that hold a table's data, and pending drops. (Definitions are
// persisted in defstore.go and resolved by package resolve.)
//
// System keys used here (all under keyspace.System):
//
//	seq/table                          next table id (8 bytes, big endian)
//	tns/<table:8><namespace>           namespace holds data of table (empty value)
//	drop/<table:8><index:2>            pending removal of a table's (index 0) or an index's data
var (
	seqTableKey = keyspace.System(keyspace.SysTableSeq)
	regRoot     = keyspace.SysTableRegistry
	dropRoot    = keyspace.SysPendingDrops
)

// Counter names under keyspace.Counter.
const (
	counterItems = "n" // items (or index entries)
	counterBytes = "b" // their total size as DynamoDB counts it
)

// nextTableID allocates a table id. Ids are never reused, so data left
// behind by a dropped table can never show through a new table of the
// same name. REQUIRES: e.ddl held.
func (e *Engine) nextTableID() (uint64, error) {
	var next uint64 = 1
	v, err := e.db.Get(seqTableKey)
	switch {
	case err == nil && len(v) == 8:
		next = binary.BigEndian.Uint64(v)
	case err == nil:
		return 0, apierr.New(apierr.Internal, "corrupt table id sequence")
	case !errors.Is(err, storage.ErrNotFound):
		return 0, apierr.Wrap(apierr.Internal, err, "reading table id sequence")
	}
	b := e.db.NewBatch()
	defer b.Close()
	b.Set(seqTableKey, binary.BigEndian.AppendUint64(nil, next+1))
	if err := e.db.Apply(b); err != nil {
		return 0, apierr.Wrap(apierr.Internal, err, "persisting table id sequence")
	}
	return next, nil
}

// regPrefix returns the registry prefix of a table's namespaces.
func regPrefix(id uint64) []byte {
	return binary.BigEndian.AppendUint64(keyspace.System(regRoot), id)
}

// regKey returns the registry key recording that ns holds data of table id.
func regKey(id uint64, ns []byte) []byte { return appendRegKey(nil, id, ns) }

// regRootKey is keyspace.System(regRoot).
var regRootKey = keyspace.System(regRoot)

// appendRegKey appends regKey(id, ns) to dst.
func appendRegKey(dst []byte, id uint64, ns []byte) []byte {
	dst = binary.BigEndian.AppendUint64(append(dst, regRootKey...), id)
	return append(dst, ns...)
}

// namespacesOf returns every namespace that has held data of table id.
func (e *Engine) namespacesOf(id uint64) ([][]byte, error) {
	p := regPrefix(id)
	it := e.db.NewIter(p, keyspace.PrefixEnd(p))
	defer it.Close()
	var out [][]byte
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, bytes.Clone(it.Key()[len(p):]))
	}
	if err := it.Error(); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "listing table namespaces")
	}
	return out, nil
}

// tenantOfNS returns the tenant of a namespace prefix (see
// keyspace.Namespace: 't' <tenant:16> 'n' <env> 0x00).
func tenantOfNS(ns []byte) tenancy.TenantID {
	var t tenancy.TenantID
	if len(ns) >= 17 {
		copy(t[:], ns[1:17])
	}
	return t
}

// dropKey returns the key of a pending drop of table id's data (index 0)
// or of one index's entries.
func dropKey(id uint64, ix uint16) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint64(keyspace.System(dropRoot), id), ix)
}

// dropRecord is a pending removal of data. It is written in the same batch
// that removes the definition, so a crash cannot forget it.
type dropRecord struct {
	Table   uint64                `json:"table"`
	Index   uint16                `json:"index"`
	Isolate tenancy.IsolationMode `json:"isolation"`
}

// runDrops removes the data of every pending drop. Dropped ids are never
// reused and no longer published, so this may run at any time after the
// barrier that follows the drop's publication.
func (e *Engine) runDrops() error {
	p := keyspace.System(dropRoot)
	it := e.db.NewIter(p, keyspace.PrefixEnd(p))
	var recs []dropRecord
	for ok := it.First(); ok; ok = it.Next() {
		var r dropRecord
		if err := json.Unmarshal(it.Value(), &r); err != nil {
			it.Close()
			return apierr.Wrap(apierr.Internal, err, "corrupt drop record")
		}
		recs = append(recs, r)
	}
	err := it.Close()
	if err != nil {
		return apierr.Wrap(apierr.Internal, err, "listing pending drops")
	}
	for _, r := range recs {
		if err := e.drop(r); err != nil {
			return err
		}
	}
	return nil
}

// drop removes the data named by r in every namespace that holds it, then
// the record itself.
func (e *Engine) drop(r dropRecord) error {
	nss, err := e.namespacesOf(r.Table)
	if err != nil {
		return err
	}
	stub := &schema.Table{ID: r.Table, Isolation: r.Isolate}
	for _, ns := range nss {
		if err := e.dropIn(r, stub, ns); err != nil {
			return err
		}
	}
	b := e.db.NewBatch()
	defer b.Close()
	if r.Index == 0 {
		p := regPrefix(r.Table)
		b.DeleteRange(p, keyspace.PrefixEnd(p))
		e.registered.Range(func(k, _ any) bool {
			if strings.HasPrefix(k.(string), string(p)) {
				e.registered.Delete(k)
			}
			return true
		})
	}
	b.Delete(dropKey(r.Table, r.Index))
	if err := e.db.Apply(b); err != nil {
		return apierr.Wrap(apierr.Internal, err, "finishing drop")
	}
	return nil
}

// dropIn removes the data r names in namespace ns: its ranges in the
// store holding ns's items of the table. A dropped table's change records
// stay readable until retention trims them, as DynamoDB's, from the main
// store (streamresolve.go): in a silo store they are first copied there
// (a dropped tenant's go with it), then deleted from the silo store,
// which the tenant's other tables keep using.
func (e *Engine) dropIn(r dropRecord, stub *schema.Table, ns []byte) error {
	tenant := tenantOfNS(ns)
	db, release, err := e.storeForTenant(tenant, stub)
	if err != nil {
		return err
	}
	defer release()
	var ranges [][2][]byte
	if r.Index == 0 {
		ranges = keyspace.TableRanges(ns, r.Table)
		if db != e.db {
			if !e.isDropped(tenant) {
				if err := e.clog.MoveToMain(db, ns, r.Table); err != nil {
					return apierr.Wrap(apierr.Internal, err, "keeping the stream records of a dropped silo table")
				}
			}
			lo, hi := keyspace.ChangeTableRange(ns, r.Table)
			ranges = append(ranges, [2][]byte{lo, hi})
		}
	} else {
		ip := keyspace.Index(ns, r.Table, r.Index)
		cp := keyspace.Counter(ns, r.Table, r.Index, "")
		ranges = [][2][]byte{{ip, keyspace.PrefixEnd(ip)}, {cp, keyspace.PrefixEnd(cp)}}
	}
	for _, rg := range ranges {
		if err := db.DeleteRange(rg[0], rg[1]); err != nil {
			return apierr.Wrap(apierr.Internal, err, "dropping table data")
		}
	}
	return nil
}

// noteNamespace records, before or with the first write of table t in
// namespace ns, that ns holds t's data (DeleteTable, TTL and index
// backfill find a shared table's tenants this way). If db is the main
// store the record joins b; otherwise it is written to the main store
// first. It returns the cache key to mark once the write is applied, or "".
func (e *Engine) noteNamespace(b *storage.Batch, db *storage.DB, t *schema.Table, ns []byte) (string, error) {
	var buf [96]byte // NB: a write's key is built here and copied only on a miss
	k := appendRegKey(buf[:0], t.ID, ns)
	if _, ok := e.registered.Load(string(k)); ok {
		return "", nil
	}
	if db == e.db {
		b.Set(k, nil)
		return string(k), nil
	}
	rb := e.db.NewBatch()
	defer rb.Close()
	rb.Set(k, nil)
	if err := e.db.Apply(rb); err != nil {
		return "", apierr.Wrap(apierr.Internal, err, "registering namespace")
	}
	e.registered.Store(string(k), struct{}{})
	return "", nil
}
