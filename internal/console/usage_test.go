package console

import (
	"fmt"
	"regexp"
	"strings"
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
	want := []storagePoint{{50, 5, true, true, false}, {100, 10, true, false, false}, {100, 10, true, true, false}, {300, 30, true, false, false}, {300, 30, true, true, false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := storageSeries(hours, nil); got[0].Known || got[4].Known {
		t.Errorf("no samples: %v", got)
	}
}

// The storage chart draws nothing before the first sample, a dot for each
// sampled hour and the line through every known hour (carried ones
// flat), scaled to the largest value.
func TestStorageChart(t *testing.T) {
	to := time.Date(2026, 1, 2, 12, 30, 0, 0, time.UTC)
	hours := hourly(nil, to)
	pts := make([]storagePoint, len(hours))
	for i := 20; i < len(pts); i++ {
		pts[i] = storagePoint{Known: true, Bytes: 1000, Items: 10, Carried: i != 20}
	}
	pts[23] = storagePoint{Known: true, Bytes: 400, Items: 4}
	svg := string(storageChart("s", "Storage of <t>", hours, pts))
	if n := strings.Count(svg, `<circle class="sample"`); n != 2 {
		t.Errorf("%d sample dots, want 2:\n%s", n, svg)
	}
	line := regexp.MustCompile(`<polyline class="bytes" points="([^"]*)"`).FindStringSubmatch(svg)
	if line == nil || len(strings.Fields(line[1])) != 4 {
		t.Fatalf("line %v, want 4 points:\n%s", line, svg)
	}
	if !strings.Contains(svg, "Storage of &lt;t&gt;") || !strings.Contains(svg, "4 of 24 hours known") || !strings.Contains(svg, ">1kB<") {
		t.Errorf("title, description or scale missing:\n%s", svg)
	}
	if svg := string(storageChart("s", "t", hours, make([]storagePoint, len(hours)))); strings.Contains(svg, "polyline") {
		t.Errorf("a chart without samples draws a line:\n%s", svg)
	}
}
