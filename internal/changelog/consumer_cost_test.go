package changelog

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"
)

// TestFormatSequenceNumber: the sequence number written without fmt is
// what fmt.Sprintf("%010d%020d") writes, at the edges and at random.
func TestFormatSequenceNumber(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 22))
	ps := []Position{{}, {Shard: 1, Seq: 1}, {Shard: maxShard, Seq: math.MaxUint64}, {Shard: math.MaxUint32, Seq: 1e19}}
	for i := 0; i < 10000; i++ {
		ps = append(ps, Position{Shard: r.Uint32() >> r.IntN(32), Seq: r.Uint64() >> r.IntN(64)})
	}
	for _, p := range ps {
		want := fmt.Sprintf("%010d%020d", p.Shard, p.Seq)
		if got := FormatSequenceNumber(p); got != want {
			t.Fatalf("FormatSequenceNumber(%+v) = %q, want %q", p, got, want)
		}
		if q, ok := ParseSequenceNumber(want); p.Shard <= maxShard && (!ok || q != p) {
			t.Fatalf("ParseSequenceNumber(%q) = %+v, %v", want, q, ok)
		}
	}
}

// TestEventIDReusesItsMAC: event ids made with the reused HMAC, also from
// many goroutines at once, are those a fresh HMAC makes.
func TestEventIDReusesItsMAC(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := newLog(t, openDB(t, ""), c, nil)
	fresh := func(ns []byte, s Stream, seq uint64) string {
		m := hmac.New(sha256.New, l.idKey)
		var b [25]byte
		b[0] = 'e'
		binary.BigEndian.PutUint64(b[1:], s.Table)
		binary.BigEndian.PutUint64(b[9:], s.ID)
		binary.BigEndian.PutUint64(b[17:], seq)
		m.Write(b[:])
		m.Write(ns)
		return hex.EncodeToString(m.Sum(nil)[:16])
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				ns, s, seq := tenantNS(byte(g), "live"), Stream{Table: uint64(i % 3), ID: uint64(g)}, uint64(i)
				if got, want := l.EventID(ns, s, seq), fresh(ns, s, seq); got != want {
					errs <- fmt.Sprintf("EventID = %s, want %s", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestStreamsSeesEveryChange: Streams, whose decoding is cached by the
// stored descriptors, shows a created stream, a disabled one and a
// retention set at once, and hands out a slice its caller may change.
func TestStreamsSeesEveryChange(t *testing.T) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	l := newLog(t, openDB(t, ""), c, nil)
	s1, err := l.CreateStream(5, NewAndOldImage, "tbl", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(want ...Stream) {
		t.Helper()
		for range 2 { // decoded, then cached
			got, err := l.Streams(5)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("Streams = %+v, %v; want %+v", got, err, want)
			}
			if len(got) > 0 {
				got[0].TableName = "changed by the caller"
			}
		}
	}
	check(s1)
	c.t = c.t.Add(time.Second)
	d1, err := l.DisableStream(5, s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	check(d1)
	c.t = c.t.Add(time.Second)
	s2, err := l.CreateStream(5, KeysOnly, "tbl", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(d1, s2)
	if err := l.SetRetention(5, 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	d1.Retention, s2.Retention = 48*time.Hour, 48*time.Hour
	check(d1, s2)
	if got, err := l.Streams(6); err != nil || len(got) != 0 {
		t.Fatalf("Streams of another table = %+v, %v", got, err)
	}
}
