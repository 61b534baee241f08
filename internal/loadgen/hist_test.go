package loadgen

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

const histRelErr = 1.0 / histSubCount

func TestBucketBounds(t *testing.T) {
	prevIdx, prevUpper := -1, int64(-1)
	check := func(v int64) {
		t.Helper()
		idx := bucketOf(v)
		up := bucketUpper(idx)
		if up < v {
			t.Fatalf("bucketUpper(bucketOf(%d)) = %d, want >= %d", v, up, v)
		}
		if float64(up-v) > histRelErr*float64(v) {
			t.Fatalf("value %d reported as %d: relative error %.4f > %.4f", v, up, float64(up-v)/float64(v), histRelErr)
		}
		if idx < prevIdx || (idx > prevIdx && prevIdx >= 0 && bucketUpper(prevIdx) >= v) {
			t.Fatalf("bucketOf(%d) = %d not monotonic after bucket %d (upper %d)", v, idx, prevIdx, prevUpper)
		}
		prevIdx, prevUpper = idx, up
	}
	for v := int64(0); v < 1<<16; v++ {
		check(v)
	}
	for v := int64(1 << 16); v < 1<<histMaxBits; v += v/1000 + 1 {
		check(v)
	}
	if got := bucketOf(math.MaxInt64); got != histBuckets-1 {
		t.Errorf("bucketOf(MaxInt64) = %d, want last bucket %d", got, histBuckets-1)
	}
	if got := bucketOf(-5); got != 0 {
		t.Errorf("bucketOf(-5) = %d, want 0", got)
	}
}

func TestQuantileMatchesSortedSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	h := NewHistogram()
	samples := make([]int64, 100_000)
	for i := range samples {
		// Log-uniform from 10µs to 10s, like latencies with a long tail.
		v := int64(math.Exp(math.Log(10e3) + r.Float64()*(math.Log(10e9)-math.Log(10e3))))
		samples[i] = v
		h.Record(time.Duration(v))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	for _, q := range []float64{0.001, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		want := samples[int(math.Ceil(q*float64(len(samples))))-1]
		got := int64(h.Quantile(q))
		if got < want || float64(got-want) > histRelErr*float64(want) {
			t.Errorf("Quantile(%g) = %d, want %d within +%.2f%%", q, got, want, histRelErr*100)
		}
	}
	if got, want := h.Count(), uint64(len(samples)); got != want {
		t.Errorf("Count() = %d, want %d", got, want)
	}
	if got, want := int64(h.Max()), samples[len(samples)-1]; got != want {
		t.Errorf("Max() = %d, want exact %d", got, want)
	}
	if got, want := int64(h.Min()), samples[0]; got != want {
		t.Errorf("Min() = %d, want exact %d", got, want)
	}
	if got := h.Quantile(1); got != h.Max() {
		t.Errorf("Quantile(1) = %v, want Max %v", got, h.Max())
	}
}

func TestHistogramSmallAndEmpty(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Min() != 0 || h.Mean() != 0 {
		t.Fatalf("empty histogram: got q50 %v max %v min %v mean %v, want zeros", h.Quantile(0.5), h.Max(), h.Min(), h.Mean())
	}
	for _, v := range []time.Duration{3, 1, 2, 100, 4} {
		h.Record(v)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{{0.2, 1}, {0.4, 2}, {0.5, 3}, {0.6, 3}, {0.8, 4}, {0.99, 100}, {1, 100}}
	for _, tt := range tests {
		if got := h.Quantile(tt.q); got != tt.want {
			t.Errorf("Quantile(%g) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got, want := h.Mean(), time.Duration(22); got != want {
		t.Errorf("Mean() = %v, want %v", got, want)
	}
	h.Record(-time.Second)
	if got := h.Min(); got != 0 {
		t.Errorf("after a negative sample Min() = %v, want 0", got)
	}
}

func TestHistogramMergeAndConcurrency(t *testing.T) {
	a, b := NewHistogram(), NewHistogram()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= 1000; i++ {
				a.Record(time.Duration(i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	b.Record(time.Hour)
	b.Record(time.Nanosecond)
	a.Merge(b)
	a.Merge(NewHistogram())
	if got, want := a.Count(), uint64(8002); got != want {
		t.Errorf("Count() = %d, want %d", got, want)
	}
	if got, want := a.Max(), time.Hour; got != want {
		t.Errorf("Max() = %v, want %v", got, want)
	}
	if got, want := a.Min(), time.Nanosecond; got != want {
		t.Errorf("Min() = %v, want %v", got, want)
	}
	if got, want := a.Quantile(0.5), 500*time.Microsecond; got < want || float64(got-want) > histRelErr*float64(want) {
		t.Errorf("Quantile(0.5) = %v, want %v", got, want)
	}
}
