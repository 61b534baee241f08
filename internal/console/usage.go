package console

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// usageWindow is the span of the usage pages: the last day, by hour.
const usageWindow = 24 * time.Hour

type usageData struct {
	Report client.UsageReport
	Chart  template.HTML
	// StorageChart is the tenant's storage by hour: its tables' series
	// summed.
	StorageChart template.HTML
	Hours        []client.HourUsage // every hour of the window, oldest first
	Tables       []tableUse
}

// tableUse is one table's usage: the window's totals, its hours (the
// same chart as the tenant's) and its current storage.
type tableUse struct {
	Name string
	client.TableUsage
	Chart        template.HTML
	StorageChart template.HTML
	Hours        []client.HourUsage
	Storage      []storagePoint // by hour, like Hours
	Items        int64
	Bytes        int64
	IndexBytes   int64
}

func (h *Handler) usage(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	to := h.o.Now().UTC()
	rep, err := q.admin.Usage(q.ctx, t.ID, to.Add(-usageWindow), to)
	if err != nil {
		h.fail(q, err)
		return
	}
	d := usageData{Report: rep, Hours: hourly(rep.Hours, to)}
	d.Chart = usageChart("chart", "Consumed capacity per hour", d.Hours)
	tables := map[string]*tableUse{}
	use := func(name string) *tableUse {
		if tables[name] == nil {
			tables[name] = &tableUse{Name: name}
		}
		return tables[name]
	}
	for name, u := range rep.ByTable {
		if name != "" {
			use(name).TableUsage = u
		}
	}
	for _, st := range rep.Storage {
		u := use(st.Table)
		u.Items, u.Bytes, u.IndexBytes = u.Items+st.Items, u.Bytes+st.Bytes, u.IndexBytes+st.IndexBytes
	}
	byTable := map[string][]client.HourUsage{}
	samples := map[string][]client.TableHourUsage{}
	for _, th := range rep.TableHours {
		if th.Sampled {
			samples[th.Table] = append(samples[th.Table], th)
		}
		byTable[th.Table] = append(byTable[th.Table], client.HourUsage{Hour: th.Hour, OpUsage: client.OpUsage{
			Requests: th.Requests, ThrottledRequests: th.ThrottledRequests,
			ConsumedReadUnits: th.ConsumedReadUnits, ConsumedWriteUnits: th.ConsumedWriteUnits}})
	}
	for _, u := range tables {
		d.Tables = append(d.Tables, *u)
	}
	slices.SortFunc(d.Tables, func(a, b tableUse) int { return strings.Compare(a.Name, b.Name) })
	total := make([]storagePoint, len(d.Hours))
	for i := range d.Tables {
		u := &d.Tables[i]
		u.Hours = hourly(byTable[u.Name], to)
		u.Storage = storageSeries(u.Hours, samples[u.Name])
		// NB: the hour's sample is taken at its first activity; the
		// current hour shows the storage now, which the report has.
		if n := len(u.Storage); n > 0 && (u.Items > 0 || u.Bytes > 0 || u.Storage[n-1].Known) {
			u.Storage[n-1] = storagePoint{Known: true, Bytes: u.Bytes + u.IndexBytes, Items: u.Items, Now: true}
		}
		u.Chart = usageChart(fmt.Sprintf("table-chart-%d", i), "Consumed capacity of table "+u.Name+" per hour", u.Hours)
		u.StorageChart = storageChart(fmt.Sprintf("table-storage-%d", i), "Storage of table "+u.Name+" by hour", u.Hours, u.Storage)
		for j, p := range u.Storage {
			if p.Known {
				total[j].Known = true
				total[j].Bytes += p.Bytes
				total[j].Items += p.Items
				total[j].Carried = total[j].Carried || p.Carried
				total[j].Now = p.Now
			}
		}
	}
	d.StorageChart = storageChart("storage-chart", "Storage of the tenant's tables by hour", d.Hours, total)
	h.showTenant(q, t, "usage", "Usage of "+t.Name, d)
}

// hourly returns the window's hours ending at to, oldest first, each with
// the report's figures (zero where it has none).
func hourly(hours []client.HourUsage, to time.Time) []client.HourUsage {
	last := to.Truncate(time.Hour)
	n := int(usageWindow / time.Hour)
	out := make([]client.HourUsage, n)
	for i := range out {
		out[i].Hour = last.Add(-time.Duration(n-1-i) * time.Hour)
	}
	for _, hu := range hours {
		i := n - 1 - int(last.Sub(hu.Hour.UTC().Truncate(time.Hour))/time.Hour)
		if i >= 0 && i < n {
			out[i].OpUsage = hu.OpUsage
		}
	}
	return out
}

// storagePoint is a table's storage in one hour: sampled in it, or
// carried forward from the last sample before it (Carried).
type storagePoint struct {
	Bytes, Items int64
	Known        bool
	Carried      bool
	Now          bool // the current hour: the storage now
}

// storageSeries returns, for each of hours, the table's storage: the
// hour's sample, else the last earlier sample (the report's samples are
// oldest first), else unknown.
func storageSeries(hours []client.HourUsage, samples []client.TableHourUsage) []storagePoint {
	out := make([]storagePoint, len(hours))
	var last *client.TableHourUsage
	j := 0
	for i, h := range hours {
		carried := true
		for j < len(samples) && !samples[j].Hour.After(h.Hour) {
			carried = !samples[j].Hour.Equal(h.Hour)
			last = &samples[j]
			j++
		}
		if last != nil {
			out[i] = storagePoint{Bytes: last.StorageBytes, Items: last.Items, Known: true, Carried: carried}
		}
	}
	return out
}

// usageChart draws hours as an SVG bar chart: consumed read and write
// units stacked, requests as a line, throttled requests marked.
// id names the chart's title and description elements; title heads it.
func usageChart(id, title string, hours []client.HourUsage) template.HTML {
	const (
		w, hgt       = 720.0, 240.0
		left, right  = 56.0, 16.0
		top, bottom  = 16.0, 36.0
		plotW, plotH = w - left - right, hgt - top - bottom
	)
	maxU, maxR := 0.0, 0.0
	for _, hu := range hours {
		maxU = math.Max(maxU, hu.ConsumedReadUnits+hu.ConsumedWriteUnits)
		maxR = math.Max(maxR, float64(hu.Requests))
	}
	maxU = niceCeil(maxU)
	maxR = niceCeil(maxR)
	var b strings.Builder
	var total float64
	for _, hu := range hours {
		total += hu.ConsumedReadUnits + hu.ConsumedWriteUnits
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 %g %g" role="img" aria-labelledby="%s-title %s-desc">`, w, hgt, id, id)
	fmt.Fprintf(&b, `<title id="%s-title">%s, last %d hours</title>`, id, template.HTMLEscapeString(title), len(hours))
	fmt.Fprintf(&b, `<desc id="%s-desc">`, id)
	fmt.Fprintf(&b, `Stacked bars: read units (blue) and write units (orange) per hour; line: requests per hour. %.1f units in all.</desc>`, total)
	// Axes and grid.
	for i := 0; i <= 4; i++ {
		y := top + plotH - plotH*float64(i)/4
		fmt.Fprintf(&b, `<line class="grid" x1="%g" y1="%.1f" x2="%g" y2="%.1f"/>`, left, y, w-right, y)
		fmt.Fprintf(&b, `<text class="axis" x="%g" y="%.1f" text-anchor="end">%s</text>`, left-6, y+4, short(maxU*float64(i)/4))
	}
	slot := plotW / float64(len(hours))
	var line []string
	for i, hu := range hours {
		x := left + float64(i)*slot
		rh := plotH * hu.ConsumedReadUnits / maxU
		wh := plotH * hu.ConsumedWriteUnits / maxU
		label := fmt.Sprintf("%s: %.1f read units, %.1f write units, %d requests, %d throttled",
			hu.Hour.UTC().Format("Jan 2 15:04"), hu.ConsumedReadUnits, hu.ConsumedWriteUnits, hu.Requests, hu.ThrottledRequests)
		fmt.Fprintf(&b, `<g class="bar"><title>%s</title>`, template.HTMLEscapeString(label))
		fmt.Fprintf(&b, `<rect class="read" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, x+1, top+plotH-rh, slot-2, rh)
		fmt.Fprintf(&b, `<rect class="write" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`, x+1, top+plotH-rh-wh, slot-2, wh)
		if hu.ThrottledRequests > 0 {
			fmt.Fprintf(&b, `<circle class="throttled" cx="%.1f" cy="%.1f" r="3"/>`, x+slot/2, top+4)
		}
		b.WriteString(`</g>`)
		line = append(line, fmt.Sprintf("%.1f,%.1f", x+slot/2, top+plotH-plotH*float64(hu.Requests)/maxR))
		if i%4 == 3 || i == len(hours)-1 {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%g" text-anchor="middle">%s</text>`, x+slot/2, hgt-bottom+16, hu.Hour.UTC().Format("15:04"))
		}
	}
	fmt.Fprintf(&b, `<polyline class="requests" points="%s"/>`, strings.Join(line, " "))
	fmt.Fprintf(&b, `<text class="axis" x="%g" y="%g" text-anchor="end">requests max %s</text>`, w-right, top-4, short(maxR))
	fmt.Fprintf(&b, `<text class="axis" x="%g" y="%g">UTC</text>`, left, hgt-4)
	b.WriteString(`</svg>`)
	// NB: every value in the markup is a number or escaped text.
	return template.HTML(b.String())
}

// storageChart draws a storage series as an SVG line of bytes by hour:
// a dot where the hour was sampled (the current hour: now), the line
// carried flat through hours without a sample, nothing before the first
// sample.
func storageChart(id, title string, hours []client.HourUsage, pts []storagePoint) template.HTML {
	const (
		w, hgt       = 720.0, 160.0
		left, right  = 56.0, 16.0
		top, bottom  = 16.0, 36.0
		plotW, plotH = w - left - right, hgt - top - bottom
	)
	maxB, known := 0.0, 0
	for _, p := range pts {
		if p.Known {
			maxB = math.Max(maxB, float64(p.Bytes))
			known++
		}
	}
	maxB = niceCeil(maxB)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart storage" viewBox="0 0 %g %g" role="img" aria-labelledby="%s-title %s-desc">`, w, hgt, id, id)
	fmt.Fprintf(&b, `<title id="%s-title">%s, last %d hours</title>`, id, template.HTMLEscapeString(title), len(hours))
	fmt.Fprintf(&b, `<desc id="%s-desc">Line: bytes stored (items and index entries) by hour, sampled once in each hour with activity and carried through the others, the current hour as it is now; %d of %d hours known.</desc>`, id, known, len(hours))
	for i := 0; i <= 2; i++ {
		y := top + plotH - plotH*float64(i)/2
		fmt.Fprintf(&b, `<line class="grid" x1="%g" y1="%.1f" x2="%g" y2="%.1f"/>`, left, y, w-right, y)
		fmt.Fprintf(&b, `<text class="axis" x="%g" y="%.1f" text-anchor="end">%s</text>`, left-6, y+4, short(maxB*float64(i)/2)+"B")
	}
	slot := plotW / float64(len(hours))
	var line []string
	for i, h := range hours {
		x := left + float64(i)*slot + slot/2
		if i%4 == 3 || i == len(hours)-1 {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%g" text-anchor="middle">%s</text>`, x, hgt-bottom+16, h.Hour.UTC().Format("15:04"))
		}
		p := pts[i]
		if !p.Known {
			continue
		}
		y := top + plotH - plotH*float64(p.Bytes)/maxB
		line = append(line, fmt.Sprintf("%.1f,%.1f", x, y))
		if !p.Carried {
			label := fmt.Sprintf("%s: %d bytes in %d items", h.Hour.UTC().Format("Jan 2 15:04"), p.Bytes, p.Items)
			if p.Now {
				label = fmt.Sprintf("now: %d bytes in %d items", p.Bytes, p.Items)
			}
			fmt.Fprintf(&b, `<circle class="sample" cx="%.1f" cy="%.1f" r="3"><title>%s</title></circle>`, x, y, template.HTMLEscapeString(label))
		}
	}
	if len(line) > 0 {
		fmt.Fprintf(&b, `<polyline class="bytes" points="%s"/>`, strings.Join(line, " "))
	}
	fmt.Fprintf(&b, `<text class="axis" x="%g" y="%g">UTC</text>`, left, hgt-4)
	b.WriteString(`</svg>`)
	// NB: every value in the markup is a number or escaped text.
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (at least 1).
func niceCeil(v float64) float64 {
	if v <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case v >= 1e3:
		return fmt.Sprintf("%gk", math.Round(v/1e2)/10)
	}
	return fmt.Sprintf("%g", math.Round(v*10)/10)
}

type topRow struct {
	Tenant client.Tenant
	Usage  client.OpUsage
	Units  float64
	Bytes  int64
	Err    string
	Width  float64 // percent of the largest
}

// topTenants ranks the tenants the session sees by consumed capacity over
// the window.
func (h *Handler) topTenants(q *req) {
	ts, err := q.admin.Tenants(q.ctx)
	if err != nil {
		h.fail(q, err)
		return
	}
	to := h.o.Now().UTC()
	rows := make([]topRow, 0, len(ts))
	for _, t := range ts {
		row := topRow{Tenant: t}
		rep, err := q.admin.Usage(q.ctx, t.ID, to.Add(-usageWindow), to)
		if err != nil {
			row.Err = err.Error()
		} else {
			row.Usage, row.Bytes = rep.OpUsage, rep.StorageBytes
			row.Units = rep.ConsumedReadUnits + rep.ConsumedWriteUnits
		}
		rows = append(rows, row)
	}
	slices.SortStableFunc(rows, func(a, b topRow) int {
		switch {
		case a.Units > b.Units:
			return -1
		case a.Units < b.Units:
			return 1
		}
		return int(b.Usage.Requests - a.Usage.Requests)
	})
	if len(rows) > 0 && rows[0].Units > 0 {
		for i := range rows {
			rows[i].Width = 100 * rows[i].Units / rows[0].Units
		}
	}
	h.show(q, "top", q.page("Top tenants", rows))
}
