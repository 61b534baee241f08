package changelog

import (
	"encoding/json"
	"fmt"
	"time"
)

// Stream describes one stream of a table: from enabling to disabling.
// Re-enabling a table's stream makes a new Stream with a new ID (and so a
// new ARN); the old one stays readable until its records expire.
//
// A stream is split in time into shards of Rollover each: shard k holds
// the changes of [Created + k*Rollover, Created + (k+1)*Rollover), and the
// shard open when the stream is disabled is its last. Every namespace
// sees the same shard ids but only its own records in them.
type Stream struct {
	Table    uint64        // the table's id (never reused)
	ID       uint64        // the stream's creation time in Unix ms, unique per table
	View     ViewType      // the StreamViewType
	Capture  ViewType      // the images the log stores: View or wider (see DESIGN.md)
	Rollover time.Duration // the time each shard is open
	// Disabled is when the stream was disabled (zero while enabled). After
	// it, the stream takes no more records.
	Disabled time.Time

	// TableName, Owner and Meta outlive the table, so that the stream of a
	// deleted table stays readable until retention removes it: the
	// table's name, the namespace of the tenant environment owning it (nil
	// for a shared table) and whatever else the caller needs (opaque).
	TableName string
	Owner     []byte
	Meta      []byte

	// Hidden marks a stream that exists only for the log's own consumers
	// (Log.Follow): the table has consumers but no DynamoDB stream. The
	// Streams API never shows or reads it.
	Hidden bool
	// Retention is how long this stream's records are kept when longer
	// than the log's (a consumer such as point-in-time restore asks for
	// days); 0 means the log's.
	Retention time.Duration
}

// Created returns the stream's creation time.
func (s Stream) Created() time.Time { return time.UnixMilli(int64(s.ID)).UTC() }

// Enabled reports whether s takes records.
func (s Stream) Enabled() bool { return s.Disabled.IsZero() }

// Label returns the stream's label (StreamLabel, the last part of its
// ARN): its creation time in ISO 8601 with milliseconds, as DynamoDB's.
func (s Stream) Label() string { return s.Created().Format(labelLayout) }

const labelLayout = "2006-01-02T15:04:05.000"

// ParseLabel returns the stream id a Label names; ok is false if s is not
// a well-formed label.
func ParseLabel(s string) (id uint64, ok bool) {
	if len(s) != len(labelLayout) {
		return 0, false
	}
	t, err := time.Parse(labelLayout, s)
	if err != nil || t.UnixMilli() <= 0 || t.Format(labelLayout) != s {
		return 0, false
	}
	return uint64(t.UnixMilli()), true
}

// shardAt returns the index of the shard whose window holds time ms
// (0 before the stream began).
func (s Stream) shardAt(ms int64) uint32 {
	d := ms - int64(s.ID)
	r := s.Rollover.Milliseconds()
	if d <= 0 || r <= 0 {
		return 0
	}
	k := d / r
	if k > maxShard {
		k = maxShard
	}
	return uint32(k)
}

// shardStart returns the time (ms) shard k opens.
func (s Stream) shardStart(k uint32) int64 {
	return int64(s.ID) + int64(k)*s.Rollover.Milliseconds()
}

// maxShard bounds shard indexes (with a 1 s rollover, 136 years).
const maxShard = 1<<32 - 2

// lastShard returns the index of the last shard of a disabled stream.
func (s Stream) lastShard() uint32 { return s.shardAt(s.Disabled.UnixMilli()) }

// descriptor is a Stream's persisted form.
type descriptor struct {
	View     string `json:"view"`
	Capture  string `json:"capture"`
	Rollover int64  `json:"rolloverMs"`
	Disabled int64  `json:"disabledMs,omitempty"`
	Name     string `json:"name,omitempty"`
	Owner    []byte `json:"owner,omitempty"`
	Meta     []byte `json:"meta,omitempty"`
	Hidden   bool   `json:"hidden,omitempty"`
	Keep     int64  `json:"retentionMs,omitempty"`
}

func (s Stream) encode() []byte {
	d := descriptor{View: s.View.String(), Capture: s.Capture.String(), Rollover: s.Rollover.Milliseconds(),
		Name: s.TableName, Owner: s.Owner, Meta: s.Meta, Hidden: s.Hidden, Keep: s.Retention.Milliseconds()}
	if !s.Disabled.IsZero() {
		d.Disabled = s.Disabled.UnixMilli()
	}
	b, _ := json.Marshal(d)
	return b
}

func decodeStream(table, id uint64, v []byte) (Stream, error) {
	var d descriptor
	if err := json.Unmarshal(v, &d); err != nil {
		return Stream{}, fmt.Errorf("changelog: stream descriptor: %w", err)
	}
	s := Stream{Table: table, ID: id, Rollover: time.Duration(d.Rollover) * time.Millisecond,
		TableName: d.Name, Owner: d.Owner, Meta: d.Meta, Hidden: d.Hidden, Retention: time.Duration(d.Keep) * time.Millisecond}
	var ok1, ok2 bool
	s.View, ok1 = ParseViewType(d.View)
	s.Capture, ok2 = ParseViewType(d.Capture)
	if !ok1 || !ok2 || s.Rollover <= 0 {
		return Stream{}, fmt.Errorf("changelog: stream descriptor %d/%d is malformed", table, id)
	}
	if d.Disabled != 0 {
		s.Disabled = time.UnixMilli(d.Disabled).UTC()
	}
	return s, nil
}
