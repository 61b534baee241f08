package loadgen

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// NB: the histogram is log-linear, like HdrHistogram: values below 2^histSubBits
// nanoseconds get a bucket each, and every octave above is split into
// 2^histSubBits equal buckets, so any recorded value is reported within
// 1/2^histSubBits (0.8%) of itself. Memory is fixed (histBuckets counters)
// whatever the number of samples.
const (
	histSubBits  = 7
	histSubCount = 1 << histSubBits
	// histMaxBits bounds the largest distinct value at 2^histMaxBits ns (~137 s);
	// larger values are recorded in the last bucket (Max stays exact).
	histMaxBits = 37
	histBuckets = (histMaxBits-histSubBits)*histSubCount + histSubCount
)

// Histogram records durations with bounded memory and ~1% relative precision.
// Record is safe for concurrent use; reading methods (Count, Quantile, ...)
// may run concurrently with Record but then see a moving target.
type Histogram struct {
	counts [histBuckets]atomic.Uint64
	total  atomic.Uint64
	sum    atomic.Int64
	min    atomic.Int64 // valid only when total > 0
	max    atomic.Int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	h := &Histogram{}
	h.min.Store(math.MaxInt64)
	return h
}

func bucketOf(v int64) int {
	if v < histSubCount {
		if v < 0 {
			return 0
		}
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - histSubBits - 1
	idx := shift*histSubCount + int(v>>uint(shift))
	if idx >= histBuckets {
		return histBuckets - 1
	}
	return idx
}

// bucketUpper returns the largest value that falls into bucket idx.
func bucketUpper(idx int) int64 {
	if idx < histSubCount {
		return int64(idx)
	}
	shift := idx/histSubCount - 1
	mantissa := int64(idx - shift*histSubCount)
	return (mantissa+1)<<uint(shift) - 1
}

// Record adds one sample.
func (h *Histogram) Record(d time.Duration) {
	v := int64(d)
	if v < 0 {
		v = 0
	}
	h.counts[bucketOf(v)].Add(1)
	h.total.Add(1)
	h.sum.Add(v)
	for {
		cur := h.min.Load()
		if v >= cur || h.min.CompareAndSwap(cur, v) {
			break
		}
	}
	for {
		cur := h.max.Load()
		if v <= cur || h.max.CompareAndSwap(cur, v) {
			break
		}
	}
}

// Merge adds all samples of o to h.
func (h *Histogram) Merge(o *Histogram) {
	n := o.total.Load()
	if n == 0 {
		return
	}
	for i := range o.counts {
		if c := o.counts[i].Load(); c != 0 {
			h.counts[i].Add(c)
		}
	}
	h.total.Add(n)
	h.sum.Add(o.sum.Load())
	if v := o.min.Load(); v < h.min.Load() {
		h.min.Store(v)
	}
	if v := o.max.Load(); v > h.max.Load() {
		h.max.Store(v)
	}
}

// Count returns the number of samples.
func (h *Histogram) Count() uint64 { return h.total.Load() }

// Max returns the largest sample exactly, or 0 when empty.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max.Load()) }

// Min returns the smallest sample exactly, or 0 when empty.
func (h *Histogram) Min() time.Duration {
	if h.total.Load() == 0 {
		return 0
	}
	return time.Duration(h.min.Load())
}

// Mean returns the exact mean of the samples, or 0 when empty.
func (h *Histogram) Mean() time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(h.sum.Load() / int64(n))
}

// Quantile returns the value at quantile q (0 < q <= 1): the upper bound of
// the bucket holding the ceil(q*count)-th smallest sample, clamped to the
// exact min and max. It returns 0 when the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			v := bucketUpper(i)
			if mx := h.max.Load(); v > mx {
				v = mx
			}
			if mn := h.min.Load(); v < mn {
				v = mn
			}
			return time.Duration(v)
		}
	}
	return h.Max()
}
