package changelog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Event is what a change did to an item.
type Event uint8

// The events of DynamoDB Streams.
const (
	Insert Event = 1 // a new item was put
	Modify Event = 2 // an existing item was replaced or updated (even to an equal item)
	Remove Event = 3 // an existing item was deleted
)

// String returns the event's DynamoDB name.
func (e Event) String() string {
	switch e {
	case Insert:
		return "INSERT"
	case Modify:
		return "MODIFY"
	case Remove:
		return "REMOVE"
	}
	return fmt.Sprintf("Event(%d)", uint8(e))
}

// ViewType is a stream's StreamViewType: which images its records show.
type ViewType uint8

// The stream view types of DynamoDB.
const (
	KeysOnly       ViewType = 1
	NewImage       ViewType = 2
	OldImage       ViewType = 3
	NewAndOldImage ViewType = 4
)

var viewNames = map[ViewType]string{
	KeysOnly:       "KEYS_ONLY",
	NewImage:       "NEW_IMAGE",
	OldImage:       "OLD_IMAGE",
	NewAndOldImage: "NEW_AND_OLD_IMAGES",
}

// String returns the view type's DynamoDB name.
func (v ViewType) String() string {
	if n, ok := viewNames[v]; ok {
		return n
	}
	return fmt.Sprintf("ViewType(%d)", uint8(v))
}

// ParseViewType returns the view type named s (a DynamoDB
// StreamViewType); ok is false for any other string.
func ParseViewType(s string) (v ViewType, ok bool) {
	for v, n := range viewNames {
		if n == s {
			return v, true
		}
	}
	return 0, false
}

// WantsOld and WantsNew report whether records of view type v show the
// old and the new image.
func (v ViewType) WantsOld() bool { return v == OldImage || v == NewAndOldImage }
func (v ViewType) WantsNew() bool { return v == NewImage || v == NewAndOldImage }

// Change is one committed item change, as the engine appends it: the
// event is INSERT if the item did not exist, REMOVE if New is nil, else
// MODIFY. The log stores the images only as far as the stream's Capture
// needs (Stream.Capture), so Old may be left nil when Capture does not
// want it.
type Change struct {
	Keys attr.Item // the item's key attributes
	// Existed says the item existed before the change (implied by Old).
	Existed bool
	Old     attr.Item // the item before the change, if it existed
	New     attr.Item // the item after the change; nil for a REMOVE
	// Expired marks a deletion by TTL expiry: its record carries the
	// service's userIdentity.
	Expired bool
	// OldEnc and NewEnc, if not nil, are the attr.EncodeItem encodings of
	// the old and new item; the log then stores them as they are rather
	// than encoding Old and New again, and the item need not be given
	// decoded. The engine passes the bytes it read or writes.
	OldEnc, NewEnc []byte
}

func (c Change) hasOld() bool { return c.Old != nil || c.OldEnc != nil }
func (c Change) hasNew() bool { return c.New != nil || c.NewEnc != nil }

// Record is a change as read back from the log.
type Record struct {
	Shard uint32    // index of the shard holding it
	Seq   uint64    // the namespace's sequence number (increasing)
	Event Event     // INSERT, MODIFY or REMOVE
	Time  time.Time // approximate creation time (millisecond precision)
	// Expired marks a TTL deletion (userIdentity Service
	// dynamodb.amazonaws.com).
	Expired bool
	Keys    attr.Item
	Old     attr.Item // nil unless captured and the event has an old image
	New     attr.Item // nil unless captured and the event has a new image
}

// Project returns r as a stream of view type v shows it: KEYS_ONLY drops
// both images, NEW_IMAGE the old one, OLD_IMAGE the new one.
func (r Record) Project(v ViewType) Record {
	if !v.WantsOld() {
		r.Old = nil
	}
	if !v.WantsNew() {
		r.New = nil
	}
	return r
}

// SizeBytes returns the size of the record as DynamoDB reports it: its
// keys and the images it carries.
func (r Record) SizeBytes() int {
	return attr.ItemSize(r.Keys) + attr.ItemSize(r.Old) + attr.ItemSize(r.New)
}

// Record value encoding, version 1:
//
//	version:1 event:1 flags:1 time-ms:8 keys-len:uvarint keys [old-len:uvarint old] [new-len:uvarint new]
//
// keys, old and new are attr.EncodeItem encodings; flags say which images
// are present and whether the change was a TTL expiry.
const (
	recordV1 = 1

	flagExpired = 1 << 0
	flagOld     = 1 << 1
	flagNew     = 1 << 2

	recordHeader = 3 + 8
)

var errBadRecord = errors.New("changelog: malformed record")

// encodeRecord encodes a change captured with view capture at time ms,
// in one allocation, using the change's encoded images where it has them.
func encodeRecord(c Change, capture ViewType, ms int64) ([]byte, Event) {
	ev := eventOf(c)
	var flags byte
	if c.Expired {
		flags |= flagExpired
	}
	var kb [128]byte
	keys := attr.AppendItem(kb[:0], c.Keys)
	old, oldOK := image(c.Old, c.OldEnc, capture.WantsOld())
	nu, newOK := image(c.New, c.NewEnc, capture.WantsNew())
	n := recordHeader + 3*binary.MaxVarintLen32 + len(keys)
	if oldOK {
		flags |= flagOld
		n += imageSize(c.Old, old)
	}
	if newOK {
		flags |= flagNew
		n += imageSize(c.New, nu)
	}
	b := make([]byte, 0, n)
	b = append(b, recordV1, byte(ev), flags)
	b = binary.BigEndian.AppendUint64(b, uint64(ms))
	b = appendBytes(b, keys)
	if oldOK {
		b = appendImage(b, c.Old, old)
	}
	if newOK {
		b = appendImage(b, c.New, nu)
	}
	return b, ev
}

// image returns the encoding of an image the record stores (enc if the
// caller encoded it, else nil, to be encoded from it) and whether the
// record stores it at all: wanted by the capture and present.
func image(it attr.Item, enc []byte, want bool) ([]byte, bool) {
	return enc, want && (it != nil || enc != nil)
}

// imageSize bounds the encoded size of an image: enc's length, or the
// item's size plus its encoding's overhead.
func imageSize(it attr.Item, enc []byte) int {
	if enc != nil {
		return binary.MaxVarintLen32 + len(enc)
	}
	return 2*binary.MaxVarintLen32 + 64 + attr.ItemSize(it) + 8*len(it)
}

// appendImage appends an image with its length: enc as it is, or the
// encoding of it, written in place and its length prefix fitted after.
func appendImage(b []byte, it attr.Item, enc []byte) []byte {
	if enc != nil {
		return appendBytes(b, enc)
	}
	// NB: reserve the longest length prefix, encode, then move the
	// encoding left if its prefix is shorter.
	at := len(b)
	b = append(b, make([]byte, binary.MaxVarintLen32)...)
	b = attr.AppendItem(b, it)
	n := len(b) - at - binary.MaxVarintLen32
	var pre [binary.MaxVarintLen32]byte
	k := binary.PutUvarint(pre[:], uint64(n))
	copy(b[at:], pre[:k])
	copy(b[at+k:], b[at+binary.MaxVarintLen32:])
	return b[:at+k+n]
}

func eventOf(c Change) Event {
	switch {
	case !c.Existed && !c.hasOld():
		return Insert
	case !c.hasNew():
		return Remove
	}
	return Modify
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// recordTime returns the creation time (ms) of an encoded record without
// decoding the rest.
func recordTime(v []byte) (int64, error) {
	if len(v) < recordHeader || (v[0] != recordV1 && v[0] != recordSealed) {
		return 0, errBadRecord
	}
	return int64(binary.BigEndian.Uint64(v[3:11])), nil
}

// decodeRecord decodes an encoded record. NB: it copies what it keeps of v.
func decodeRecord(v []byte) (Record, error) {
	var r Record
	ms, err := recordTime(v)
	if err != nil {
		return r, err
	}
	if v[0] != recordV1 {
		return r, errBadRecord // sealed: open it first (seal.go)
	}
	r.Event, r.Time = Event(v[1]), time.UnixMilli(ms).UTC()
	if r.Event < Insert || r.Event > Remove {
		return r, errBadRecord
	}
	flags := v[2]
	r.Expired = flags&flagExpired != 0
	rest := v[recordHeader:]
	// NB: one copy of the images for all three items' strings (the items
	// never refer to v).
	srest := string(rest)
	next := func() (attr.Item, error) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, errBadRecord
		}
		it, err := attr.DecodeItemIn(rest[k:k+int(n)], srest[k:k+int(n)])
		rest, srest = rest[k+int(n):], srest[k+int(n):]
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errBadRecord, err)
		}
		return it, nil
	}
	if r.Keys, err = next(); err != nil {
		return r, err
	}
	if flags&flagOld != 0 {
		if r.Old, err = next(); err != nil {
			return r, err
		}
	}
	if flags&flagNew != 0 {
		if r.New, err = next(); err != nil {
			return r, err
		}
	}
	if len(rest) != 0 {
		return r, errBadRecord
	}
	return r, nil
}
