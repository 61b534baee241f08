package changelog

import (
	"testing"
	"time"
)

// The parsers of what clients send back: stream ARNs, shard ids, sequence
// numbers and shard iterators. None may panic, and whatever they accept
// must be what the server would have produced.

func FuzzParseStreamARN(f *testing.F) {
	f.Add("arn:aws:dynamodb:us-east-1:000000000000:table/Orders/stream/2026-11-25T06:45:21.123")
	f.Add("arn:aws:dynamodb:::table//stream/")
	f.Fuzz(func(t *testing.T, s string) {
		a, ok := ParseStreamARN(s)
		if ok && a.String() != s {
			t.Errorf("ParseStreamARN(%q) accepted it as %q", s, a.String())
		}
	})
}

func FuzzParseSequenceNumber(f *testing.F) {
	f.Add("000000000100000000000000000042")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := ParseSequenceNumber(s)
		if ok && FormatSequenceNumber(p) != s {
			t.Errorf("ParseSequenceNumber(%q) accepted it as %v", s, p)
		}
	})
}

func FuzzOpenIterator(f *testing.F) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l, err := New(nil, Options{Secret: secret, Now: c.now})
	if err != nil {
		f.Fatal(err)
	}
	ns := tenantNS(1, "live")
	s := Stream{Table: 1, ID: 1_799_000_000_000, Rollover: time.Hour}
	f.Add(l.SealIterator(Iterator{NS: ns, Table: 1, Stream: 2, Pos: Position{Shard: 3, Seq: 4}, Issued: c.now()}), "")
	f.Add("AAAA", "shardId-00000001799000000000-00000000")
	f.Fuzz(func(t *testing.T, tok, shard string) {
		if it, err := l.OpenIterator(tok, ns); err == nil && string(it.NS) != string(ns) {
			t.Errorf("OpenIterator accepted an iterator of namespace %x", it.NS)
		}
		if k, ok := l.ParseShardID(s, shard); ok && l.ShardID(s, k) != shard {
			t.Errorf("ParseShardID(%q) accepted it as shard %d", shard, k)
		}
	})
}

func FuzzParseCursor(f *testing.F) {
	f.Add(Cursor{Stream: 1_799_000_000_000, Shard: 3, Seq: 42}.String())
	f.Add("0000000000000000-00000000-0000000000000000")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err == nil && c.String() != s {
			t.Errorf("ParseCursor(%q) accepted it as %q", s, c.String())
		}
	})
}
