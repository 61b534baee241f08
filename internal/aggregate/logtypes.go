package aggregate

// The change-log consumer types this package reads. They mirror
// changelog's consumer API (Cursor, Entry, FollowPage) until that lands;
// then this file becomes aliases of those types.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Cursor is a position in one table's log in one namespace: just after
// the record it names.
type Cursor struct {
	Stream uint64
	Shard  uint32
	Seq    uint64
}

// IsZero reports whether c is "before the oldest retained record".
func (c Cursor) IsZero() bool { return c == Cursor{} }

// String returns c as stable text.
func (c Cursor) String() string { return fmt.Sprintf("%d.%d.%d", c.Stream, c.Shard, c.Seq) }

// ParseCursor is String's inverse.
func ParseCursor(s string) (Cursor, error) {
	p := strings.Split(s, ".")
	if len(p) != 3 {
		return Cursor{}, fmt.Errorf("aggregate: bad cursor %q", s)
	}
	st, err1 := strconv.ParseUint(p[0], 10, 64)
	sh, err2 := strconv.ParseUint(p[1], 10, 32)
	sq, err3 := strconv.ParseUint(p[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Cursor{}, fmt.Errorf("aggregate: bad cursor %q", s)
	}
	return Cursor{Stream: st, Shard: uint32(sh), Seq: sq}, nil
}

// Event is what a change did to an item.
type Event uint8

// The events.
const (
	Insert Event = 1
	Modify Event = 2
	Remove Event = 3
)

// Record is one committed change.
type Record struct {
	Shard   uint32
	Seq     uint64
	Event   Event
	Time    time.Time
	Expired bool
	Keys    attr.Item
	Old     attr.Item
	New     attr.Item
}

// Entry is one committed change as a consumer sees it.
type Entry struct {
	Record
	Stream         uint64
	Next           Cursor
	EventID        string
	SequenceNumber string
}

// FollowPage is one page of a follow.
type FollowPage struct {
	Entries  []Entry
	Next     Cursor
	CaughtUp bool
}
