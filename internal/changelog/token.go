package changelog

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"
)

// What clients see of the log: shard ids, sequence numbers, event ids and
// shard iterators. None of them carries anything of another tenant: shard
// ids depend only on the stream and the schedule, sequence numbers are the
// namespace's own, event ids and iterators are keyed by the namespace, and
// an iterator is sealed (encrypted and authenticated) so it can be neither
// read, forged, altered nor used by another namespace.

// ShardID returns the id of shard k of s: "shardId-" followed by the
// shard's opening time in ms (20 digits) and a tag of 8 hex digits, in
// the shape of DynamoDB's shard ids.
func (l *Log) ShardID(s Stream, k uint32) string {
	return fmt.Sprintf("shardId-%020d-%s", s.shardStart(k), l.shardTag(s, k))
}

func (l *Log) shardTag(s Stream, k uint32) string {
	m := hmac.New(sha256.New, l.idKey)
	var b [21]byte
	b[0] = 's'
	binary.BigEndian.PutUint64(b[1:], s.Table)
	binary.BigEndian.PutUint64(b[9:], s.ID)
	binary.BigEndian.PutUint32(b[17:], k)
	m.Write(b[:])
	return hex.EncodeToString(m.Sum(nil)[:4])
}

// ParseShardID returns the index of the shard of s that id names; ok is
// false if id is malformed or names no shard of s.
func (l *Log) ParseShardID(s Stream, id string) (k uint32, ok bool) {
	const n = len("shardId-") + 20 + 1 + 8
	if len(id) != n || id[:8] != "shardId-" || id[28] != '-' {
		return 0, false
	}
	start, err := strconv.ParseUint(id[8:28], 10, 63)
	r := uint64(s.Rollover.Milliseconds())
	if err != nil || r == 0 || start < s.ID || (start-s.ID)%r != 0 || (start-s.ID)/r > maxShard {
		return 0, false
	}
	k = uint32((start - s.ID) / r)
	if !hmac.Equal([]byte(id[29:]), []byte(l.shardTag(s, k))) {
		return 0, false
	}
	return k, true
}

// seqDigits is the length of a sequence number string: 10 digits of shard
// index and 20 of the namespace's sequence number (DynamoDB's are 21 to 40
// digits).
const seqDigits = 30

// FormatSequenceNumber returns the SequenceNumber of position p. Sequence
// numbers of one stream increase with the records' order in a namespace.
func FormatSequenceNumber(p Position) string {
	// NB: what fmt.Sprintf("%010d%020d", p.Shard, p.Seq) writes (every
	// record a consumer reads gets one; TestFormatSequenceNumber).
	var b [seqDigits]byte
	putDigits(b[:10], uint64(p.Shard))
	putDigits(b[10:], p.Seq)
	return string(b[:])
}

// putDigits writes v in decimal into all of b, zero-padded on the left;
// b is long enough for v (20 digits hold every uint64).
func putDigits(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// ParseSequenceNumber is the inverse of FormatSequenceNumber; ok is false
// for anything it did not produce.
func ParseSequenceNumber(s string) (p Position, ok bool) {
	if len(s) != seqDigits {
		return p, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return p, false
		}
	}
	k, err1 := strconv.ParseUint(s[:10], 10, 32)
	q, err2 := strconv.ParseUint(s[10:], 10, 64)
	if err1 != nil || err2 != nil || k > maxShard {
		return p, false
	}
	return Position{Shard: uint32(k), Seq: q}, true
}

// EventID returns the eventID of the record with sequence number seq of
// stream s in namespace ns: 32 hex digits, unique, and revealing nothing.
func (l *Log) EventID(ns []byte, s Stream, seq uint64) string {
	// NB: a keyed HMAC is reused (Reset restores the keyed state), not
	// made per record: hmac.New hashes the key's pads every time.
	m, _ := l.idMACs.Get().(*idMAC)
	if m == nil {
		m = &idMAC{h: hmac.New(sha256.New, l.idKey)}
	}
	m.h.Reset()
	b := m.in[:]
	b[0] = 'e'
	binary.BigEndian.PutUint64(b[1:], s.Table)
	binary.BigEndian.PutUint64(b[9:], s.ID)
	binary.BigEndian.PutUint64(b[17:], seq)
	m.h.Write(b)
	m.h.Write(ns)
	var out [32]byte
	hex.Encode(out[:], m.h.Sum(m.sum[:0])[:16])
	l.idMACs.Put(m)
	return string(out[:])
}

// idMAC is an HMAC keyed for event ids with its buffers, which would
// escape to the heap on every call if they were on the stack.
type idMAC struct {
	h   hash.Hash
	in  [25]byte
	sum [sha256.Size]byte
}

// Iterator is what a shard iterator stands for: a position in one shard
// of one stream, as one namespace sees it, issued at a time.
type Iterator struct {
	NS     []byte
	Name   string // the table's name when the iterator was issued
	Table  uint64
	Stream uint64
	Pos    Position
	Issued time.Time
}

// Iterator encoding, version 1, before sealing:
//
//	version:1 issued-ms:8 table:8 stream:8 shard:4 seq:8 ns-len:uvarint ns name
//
// sealed with AES-256-GCM under a key derived from Options.Secret, with a
// random nonce, and written as base64url(nonce || ciphertext). The
// namespace is inside the sealed payload (not only additional data) so
// that a genuine iterator presented by another namespace is recognised
// as such and can be audited as a cross-tenant attempt.
const (
	iterV1     = 1
	iterHeader = 1 + 8 + 8 + 8 + 4 + 8
	iterAD     = "tenantdb changelog iterator v1\x00"
	// maxIterator bounds the length of an iterator string accepted.
	maxIterator = 2048
)

// SealIterator returns the shard iterator string of it.
func (l *Log) SealIterator(it Iterator) string {
	p := make([]byte, 0, iterHeader+binary.MaxVarintLen64+len(it.NS)+len(it.Name))
	p = append(p, iterV1)
	p = binary.BigEndian.AppendUint64(p, uint64(it.Issued.UnixMilli()))
	p = binary.BigEndian.AppendUint64(p, it.Table)
	p = binary.BigEndian.AppendUint64(p, it.Stream)
	p = binary.BigEndian.AppendUint32(p, it.Pos.Shard)
	p = binary.BigEndian.AppendUint64(p, it.Pos.Seq)
	p = binary.AppendUvarint(p, uint64(len(it.NS)))
	p = append(p, it.NS...)
	p = append(p, it.Name...)
	nonce := make([]byte, l.iter.NonceSize(), l.iter.NonceSize()+len(p)+l.iter.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("changelog: no randomness: " + err.Error()) // crypto/rand never fails on supported systems
	}
	out := l.iter.Seal(nonce, nonce, p, []byte(iterAD))
	return iterPrefix + base64.RawURLEncoding.EncodeToString(out)
}

// iterPrefix starts every iterator so that none starts with "-" (a
// base64url digit): the AWS CLI reads such an argument as an option.
// OpenIterator also takes an iterator without it (issued before the
// prefix, valid for 15 minutes).
const iterPrefix = "tdb1."

// OpenIterator returns the iterator that tok stands for, if it was sealed
// by this server for namespace ns. It returns ErrBadIterator if tok is
// malformed or was altered, ErrForeignIterator if it is genuine but was
// issued to another namespace (another tenant, or another environment of
// the same tenant), and ErrExpiredIterator if it is genuine but older
// than IteratorTTL.
func (l *Log) OpenIterator(tok string, ns []byte) (Iterator, error) {
	var it Iterator
	if len(tok) == 0 || len(tok) > maxIterator {
		return it, ErrBadIterator
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimPrefix(tok, iterPrefix))
	ns0 := l.iter.NonceSize()
	if err != nil || len(raw) < ns0+l.iter.Overhead()+iterHeader {
		return it, ErrBadIterator
	}
	p, err := l.iter.Open(nil, raw[:ns0], raw[ns0:], []byte(iterAD))
	if err != nil || len(p) < iterHeader || p[0] != iterV1 {
		return it, ErrBadIterator
	}
	n, k := binary.Uvarint(p[iterHeader:])
	rest := p[iterHeader+max(k, 0):]
	if k <= 0 || n > uint64(len(rest)) {
		return it, ErrBadIterator
	}
	if !bytes.Equal(rest[:n], ns) {
		// NB: genuine (it authenticated) but issued to another namespace:
		// a cross-tenant attempt, which the caller audits.
		return Iterator{}, ErrForeignIterator
	}
	it.NS, it.Name = rest[:n], string(rest[n:])
	it.Issued = time.UnixMilli(int64(binary.BigEndian.Uint64(p[1:]))).UTC()
	it.Table = binary.BigEndian.Uint64(p[9:])
	it.Stream = binary.BigEndian.Uint64(p[17:])
	it.Pos.Shard = binary.BigEndian.Uint32(p[25:])
	it.Pos.Seq = binary.BigEndian.Uint64(p[29:])
	now := l.now()
	if age := now.Sub(it.Issued); age > IteratorTTL || age < -time.Minute {
		return it, ErrExpiredIterator
	}
	return it, nil
}
