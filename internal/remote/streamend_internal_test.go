package remote

import (
	"testing"

	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestSeqCmp(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1", "1", 0}, {"9", "10", -1}, {"000000000100000000000000000042", "100000000000000000041", 1},
		{"0001", "1", 0}, {"111100000000000000000001", "111100000000000000000002", -1}, {"", "0", 0},
	} {
		if got := seqCmp(c.a, c.b); got != c.want {
			t.Errorf("seqCmp(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := seqCmp(c.b, c.a); got != -c.want {
			t.Errorf("seqCmp(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
}

func TestPastEnd(t *testing.T) {
	for _, c := range []struct {
		p    iterPos
		end  string
		want bool
	}{
		{iterPos{kind: posTrim}, "5", false},
		{iterPos{kind: posTrim}, "", true}, // the shard holds nothing of the stream
		{iterPos{kind: posAfter, arg: "4"}, "5", false},
		{iterPos{kind: posAfter, arg: "5"}, "5", true},
		{iterPos{kind: posAt, arg: "5"}, "5", false},
		{iterPos{kind: posAt, arg: "6"}, "5", true},
		{iterPos{kind: posEngine, arg: "x"}, "5", false}, // read to find out
	} {
		if got := pastEnd(c.p, c.end); got != c.want {
			t.Errorf("pastEnd(%+v, %q) = %v, want %v", c.p, c.end, got, c.want)
		}
	}
}

func TestEndAtDrain(t *testing.T) {
	for _, c := range []struct {
		p      iterPos
		last   string
		want   string
		wantOK bool
	}{
		{iterPos{kind: posAt, arg: "3"}, "7", "7", true},
		{iterPos{kind: posAfter, arg: "3"}, "", "3", true},
		{iterPos{kind: posTrim}, "", "", true},
		{iterPos{kind: posAt, arg: "3"}, "", "", false},
		{iterPos{kind: posEngine, arg: "x"}, "", "", false},
	} {
		if got, ok := endAtDrain(c.p, c.last); got != c.want || ok != c.wantOK {
			t.Errorf("endAtDrain(%+v, %q) = %q, %v; want %q, %v", c.p, c.last, got, ok, c.want, c.wantOK)
		}
	}
}

func TestPageShards(t *testing.T) {
	shards := []wire.Shard{{ShardId: "a"}, {ShardId: "b"}, {ShardId: "c"}}
	page, last, err := pageShards(shards, "", 2)
	if err != nil || len(page) != 2 || last != "b" {
		t.Errorf("first page: %v %q %v", page, last, err)
	}
	page, last, err = pageShards(shards, "b", 2)
	if err != nil || len(page) != 1 || page[0].ShardId != "c" || last != "" {
		t.Errorf("second page: %v %q %v", page, last, err)
	}
	if _, _, err := pageShards(shards, "z", 2); err == nil {
		t.Error("an unknown ExclusiveStartShardId was accepted")
	}
}

func TestGoneSK(t *testing.T) {
	sk := goneSK([]byte{0xab, 0x01}, "tbl", 7, 1_700_000_000_000)
	if got := string(sk[:len("ab01#tbl\x00")]); got != "ab01#tbl\x00" {
		t.Errorf("goneSK begins %q", got)
	}
	if table, id, ok := goneIDs(sk); !ok || table != 7 || id != 1_700_000_000_000 {
		t.Errorf("goneIDs = %d, %d, %v", table, id, ok)
	}
	if shared := goneSK(nil, "tbl", 7, 1); string(shared[:5]) != "#tbl\x00" {
		t.Errorf("a shared table's goneSK begins %q", shared[:5])
	}
}
