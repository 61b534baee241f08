package console

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestQuantile(t *testing.T) {
	b := func(up float64, n uint64) *dto.Bucket {
		return &dto.Bucket{UpperBound: proto.Float64(up), CumulativeCount: proto.Uint64(n)}
	}
	// 100 samples: 50 in (0, 1ms], 40 in (1ms, 2ms], 9 in (2ms, 4ms], 1 above.
	hg := &dto.Histogram{SampleCount: proto.Uint64(100), Bucket: []*dto.Bucket{
		b(0.004, 99), b(0.001, 50), b(0.002, 90), b(math.Inf(1), 100),
	}}
	for _, c := range []struct {
		q    float64
		want string
	}{{.5, "1ms"}, {.25, "500µs"}, {.7, "1.5ms"}, {.9, "2ms"}, {.95, "3.111ms"}, {.999, "> 4ms"}} {
		if got := quantile(hg, c.q); got != c.want {
			t.Errorf("quantile(%g) = %s, want %s", c.q, got, c.want)
		}
	}
}
