package changelog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// BenchmarkFollowTwoReaders measures what a table's two consumers (a
// webhook subscription and an aggregate, BenchmarkEventsWrites) pay to
// read the log: each op is one page of 50 records of 1 KB items
// (NEW_AND_OLD, as consumers capture) read by a first reader, which
// opens and decodes them, then by a second, which finds them decoded.
// ns/record is per record of the page, both readers together.
//
//	go test ./internal/changelog -run '^$' -bench FollowTwoReaders -benchtime 2000x
func BenchmarkFollowTwoReaders(b *testing.B) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(b, "")
	l, err := New(db, Options{Secret: secret, Now: c.now, Keys: testKeys})
	if err != nil {
		b.Fatal(err)
	}
	s, _ := l.CreateStream(1, NewAndOldImage, "tbl", nil, nil)
	ns := tenantNS(1, "live")
	payload := strings.Repeat("x", 1000)
	img := func(j int, v string) attr.Item {
		return attr.Item{"pk": attr.Str(fmt.Sprintf("p%08d", j/20)), "sk": attr.Str(fmt.Sprintf("s%02d", j%20)),
			"v": attr.Str(v + payload)}
	}
	// NB: more records than the decoded cache holds, so that the first
	// reader of a page decodes it.
	const n, page = 20_000, 50
	for i := 0; i < n; i += 100 {
		a := l.NewAppender()
		bt := db.NewBatch()
		for j := i; j < i+100; j++ {
			if err := a.Append(db, bt, ns, s, Change{Keys: key(fmt.Sprint(j)), Existed: true, Old: img(j, "o"), New: img(j, "n")}); err != nil {
				b.Fatal(err)
			}
		}
		err := db.Apply(bt)
		a.Done(err == nil)
		bt.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var from Cursor
	for i := 0; i < b.N; i++ {
		first, err := l.Follow(db, ns, 1, from, page)
		if err != nil {
			b.Fatal(err)
		}
		second, err := l.Follow(db, ns, 1, from, page)
		if err != nil || len(second.Entries) != len(first.Entries) {
			b.Fatal(err, len(second.Entries), len(first.Entries))
		}
		if from = first.Next; len(first.Entries) < page {
			from = Cursor{}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*page), "ns/record")
}
