package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// A table's storage by hour: the hour's sample, else the last one before
// it (carried), else unknown.
func TestStorageSeries(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	hours := make([]client.HourUsage, 5)
	for i := range hours {
		hours[i].Hour = t0.Add(time.Duration(i) * time.Hour)
	}
	sample := func(h int, bytes int64) client.TableHourUsage {
		return client.TableHourUsage{Hour: t0.Add(time.Duration(h) * time.Hour), Sampled: true, StorageBytes: bytes, Items: bytes / 10}
	}
	got := storageSeries(hours, []client.TableHourUsage{sample(-3, 50), sample(1, 100), sample(3, 300)})
	want := []storagePoint{{50, 5, true, true}, {100, 10, true, false}, {100, 10, true, true}, {300, 30, true, false}, {300, 30, true, true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := storageSeries(hours, nil); got[0].Known || got[4].Known {
		t.Errorf("no samples: %v", got)
	}
}
