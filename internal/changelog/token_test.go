package changelog

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestIterators(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := newLog(t, openDB(t, ""), c, nil)
	a, b := tenantNS(1, "live"), tenantNS(2, "live")
	it := Iterator{NS: a, Name: "Orders", Table: 3, Stream: 4, Pos: Position{Shard: 5, Seq: 6}, Issued: c.now()}
	tok := l.SealIterator(it)
	got, err := l.OpenIterator(tok, a)
	if err != nil {
		t.Fatal(err)
	}
	if got.Table != 3 || got.Stream != 4 || got.Pos != it.Pos || !got.Issued.Equal(it.Issued) || string(got.NS) != string(a) || got.Name != "Orders" {
		t.Errorf("round trip: got %+v, want %+v", got, it)
	}
	if l.SealIterator(it) == tok {
		t.Error("two sealings of one iterator are equal: the nonce is not random")
	}
	// Another namespace (tenant, or environment of the same tenant).
	for _, ns := range [][]byte{b, tenantNS(1, "test"), nil} {
		if got, err := l.OpenIterator(tok, ns); !errors.Is(err, ErrForeignIterator) || got.NS != nil {
			t.Errorf("iterator of %x opened for %x: %+v %v", a, ns, got, err)
		}
	}
	// Any altered character.
	for i := range tok {
		alt := []byte(tok)
		alt[i] ^= 1
		if _, err := l.OpenIterator(string(alt), a); !errors.Is(err, ErrBadIterator) {
			t.Errorf("iterator altered at %d opened: %v", i, err)
		}
	}
	for _, bad := range []string{"", tok[:len(tok)-1], tok + "A", strings.Repeat("A", 3000), "!!!!"} {
		if _, err := l.OpenIterator(bad, a); !errors.Is(err, ErrBadIterator) {
			t.Errorf("OpenIterator(%.20q): %v", bad, err)
		}
	}
	// Another server's key.
	other := newLog(t, openDB(t, ""), c, func(o *Options) { o.Secret = []byte(strings.Repeat("x", 32)) })
	if _, err := other.OpenIterator(tok, a); !errors.Is(err, ErrBadIterator) {
		t.Errorf("iterator opened under another secret: %v", err)
	}
	c.add(IteratorTTL + time.Second)
	if _, err := l.OpenIterator(tok, a); !errors.Is(err, ErrExpiredIterator) {
		t.Errorf("expired iterator: %v", err)
	}
}

func TestShardIDs(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := newLog(t, openDB(t, ""), c, nil)
	s, _ := l.CreateStream(1, KeysOnly, "tbl", nil, nil)
	s2, _ := l.CreateStream(2, KeysOnly, "tbl", nil, nil)
	for _, k := range []uint32{0, 1, 77} {
		id := l.ShardID(s, k)
		if len(id) < 28 || len(id) > 65 || !strings.HasPrefix(id, "shardId-") {
			t.Errorf("shard id %q has not DynamoDB's shape", id)
		}
		if got, ok := l.ParseShardID(s, id); !ok || got != k {
			t.Errorf("ParseShardID(%q) = %d %v, want %d", id, got, ok, k)
		}
		if _, ok := l.ParseShardID(s2, id); ok {
			t.Errorf("shard id %q of one stream parsed for another", id)
		}
		alt := []byte(id)
		alt[len(alt)-1] ^= 1
		if _, ok := l.ParseShardID(s, string(alt)); ok {
			t.Errorf("altered shard id %q parsed", alt)
		}
	}
}

func TestSequenceNumbers(t *testing.T) {
	for _, p := range []Position{{}, {Shard: 1, Seq: 2}, {Shard: maxShard, Seq: 1<<64 - 1}} {
		s := FormatSequenceNumber(p)
		if len(s) < 21 || len(s) > 40 {
			t.Errorf("%q: DynamoDB's sequence numbers have 21 to 40 digits", s)
		}
		if got, ok := ParseSequenceNumber(s); !ok || got != p {
			t.Errorf("ParseSequenceNumber(%q) = %v %v, want %v", s, got, ok, p)
		}
	}
	if FormatSequenceNumber(Position{Shard: 1}) <= FormatSequenceNumber(Position{Shard: 0, Seq: 99}) {
		t.Error("sequence numbers do not increase across shards")
	}
	for _, bad := range []string{"", "12", "00000000010000000000000000000x", "+0000000001000000000000000000", "999999999900000000000000000000"} {
		if _, ok := ParseSequenceNumber(bad); ok {
			t.Errorf("ParseSequenceNumber(%q) accepted", bad)
		}
	}
}

func TestStreamARN(t *testing.T) {
	s := Stream{ID: uint64(time.Date(2026, 11, 25, 6, 45, 21, 123e6, time.UTC).UnixMilli())}
	arn := FormatStreamARN("us-east-1", "000000000000", "Orders.v2", s)
	if want := "arn:aws:dynamodb:us-east-1:000000000000:table/Orders.v2/stream/2026-11-25T06:45:21.123"; arn != want {
		t.Fatalf("ARN %q, want %q", arn, want)
	}
	a, ok := ParseStreamARN(arn)
	if !ok || a.Table != "Orders.v2" || a.Stream != s.ID || a.Region != "us-east-1" || a.String() != arn {
		t.Errorf("ParseStreamARN = %+v %v", a, ok)
	}
	for _, bad := range []string{
		"",
		"arn:aws:dynamodb:us-east-1:000000000000:table/Orders",
		"arn:aws:dynamodb:us-east-1:000000000000:table/Orders/stream/",
		"arn:aws:dynamodb:us-east-1:000000000000:table/Or/stream/2026-11-25T06:45:21.123",
		"arn:aws:dynamodb:us-east-1:000000000000:table/Orders/stream/2026-11-25T06:45:21",
		"arn:aws:dynamodb:us-east-1:000000000000:table/Orders/stream/2026-13-25T06:45:21.123",
		"arn:aws:dynamodb:us-east-1:000000000000:table/Ord ers/stream/2026-11-25T06:45:21.123",
		"arn:aws:dynamodb:us:east:000000000000:table/Orders/stream/2026-11-25T06:45:21.123",
		"arn:aws:s3:us-east-1:000000000000:table/Orders/stream/2026-11-25T06:45:21.123",
	} {
		if _, ok := ParseStreamARN(bad); ok {
			t.Errorf("ParseStreamARN(%q) accepted", bad)
		}
	}
}

// TestIteratorsAreCLIArguments: no iterator starts with "-", which the AWS
// CLI would read as an option (base64url has "-" among its digits).
func TestIteratorsAreCLIArguments(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := newLog(t, openDB(t, ""), c, nil)
	it := Iterator{NS: tenantNS(1, "live"), Name: "Orders", Table: 3, Stream: 4, Issued: c.now()}
	for range 500 {
		if tok := l.SealIterator(it); strings.HasPrefix(tok, "-") {
			t.Fatalf("iterator %q starts with -", tok)
		}
	}
}
