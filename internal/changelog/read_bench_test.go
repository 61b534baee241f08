package changelog

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkRead measures one consumer reading pages of 1,000 records
// (GetRecords' maximum) of NEW_AND_OLD_IMAGES changes; records/s is
// b.N*1000 divided by the time.
func BenchmarkRead(b *testing.B) {
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	db := openDB(b, "")
	l, err := New(db, Options{Secret: secret, Now: c.now})
	if err != nil {
		b.Fatal(err)
	}
	s, _ := l.CreateStream(1, NewAndOldImage, "tbl", nil, nil)
	ns := tenantNS(1, "live")
	const n = 10_000
	for i := 0; i < n; i += 100 {
		a := l.NewAppender()
		bt := db.NewBatch()
		for j := i; j < i+100; j++ {
			pk := fmt.Sprint("k", j)
			if err := a.Append(db, bt, ns, s, Change{Keys: key(pk), Existed: true, Old: item(pk, "old"), New: item(pk, "new")}); err != nil {
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
	p := Position{}
	for i := 0; i < b.N; i++ {
		pg, err := l.Read(db, ns, s, p, 1000, 1<<20)
		if err != nil {
			b.Fatal(err)
		}
		if p = pg.Next; len(pg.Records) < 1000 {
			p = Position{}
		}
	}
	b.ReportMetric(float64(b.N)*1000/b.Elapsed().Seconds(), "records/s")
}
