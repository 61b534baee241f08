package remote

import (
	"errors"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
)

// Raising a collection's shard count from observed throttling. The rule
// (DESIGN.md, "Shards"): when the engine has refused at least
// AutoShardThrottles write attempts (the engine client's retries
// included) to one collection within autoShardWindow on one gateway with
// a throttling error (ProvisionedThroughputExceeded, Throttling, RequestLimitExceeded:
// DynamoDB's answer to a hot partition key), and no change is under way,
// the gateway doubles the collection's shard count, up to AutoShardMax,
// with the same online change as the operator's (migrate.go). A doubled
// collection is not raised again before a window has passed after its
// change ended.

const autoShardWindow = 10 * time.Second

type throttleWindow struct {
	start time.Time
	n     int
}

type autoShard struct {
	mu      sync.Mutex
	windows map[string]*throttleWindow
}

// autoMax is the largest shard count raised to automatically (0: never).
func (b *Backend) autoMax() int {
	switch {
	case b.opts.AutoShardMax < 0:
		return 0
	case b.opts.AutoShardMax == 0:
		return 64
	}
	return b.opts.AutoShardMax
}

func (b *Backend) autoThreshold() int {
	if b.opts.AutoShardThrottles > 0 {
		return b.opts.AutoShardThrottles
	}
	return 50
}

// isThrottle reports whether err is the engine's throttling error.
func isThrottle(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded":
		return true
	}
	return false
}

// observe is a per-call option of the engine client for a write to p:
// every attempt the engine throttles counts (noteWrite), including those
// the client then retries successfully.
func (b *Backend) observe(p place) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		if o.Retryer != nil {
			o.Retryer = observed{o.Retryer, func(err error) { b.noteWrite(p, err) }}
		}
	}
}

// observed is a retryer that shows each failed attempt's error.
type observed struct {
	aws.Retryer
	saw func(error)
}

func (r observed) IsErrorRetryable(err error) bool {
	r.saw(err)
	return r.Retryer.IsErrorRetryable(err)
}

// noteWrite counts a write attempt to p the engine answered with err
// (nil: none) and starts doubling p's shard count when the rule above
// says so.
func (b *Backend) noteWrite(p place, err error) {
	if err == nil || !isThrottle(err) || p.tg.Namespace == nil || p.lay.moving() || p.lay.n*2 > b.autoMax() {
		return
	}
	sk := string(regSK(p.tg.Namespace, p.tg.Table.ID))
	now := time.Now()
	b.auto.mu.Lock()
	if b.auto.windows == nil {
		b.auto.windows = map[string]*throttleWindow{}
	}
	w := b.auto.windows[sk]
	if w == nil || now.Sub(w.start) > autoShardWindow {
		w = &throttleWindow{start: now}
		b.auto.windows[sk] = w
	}
	w.n++
	fire := w.n == b.autoThreshold()
	b.auto.mu.Unlock()
	if !fire {
		return
	}
	go func() {
		e := shardEntry{sk: []byte(sk), ns: p.tg.Namespace, id: p.tg.Table.ID, lay: p.lay}
		if err := b.beginChange(b.bg, e, p.lay.n*2); err != nil {
			b.log.Info("raising the shard count from throttling", "table", p.tg.Table.ID, "err", err)
			return
		}
		b.log.Info("raising the shard count from throttling", "table", p.tg.Table.ID, "from", p.lay.n, "to", p.lay.n*2)
		b.migrate(b.bg, e.sk, p.tg)
		// The window restarts after the change: the new layout's own
		// throttling decides the next raise.
		b.auto.mu.Lock()
		b.auto.windows[sk] = &throttleWindow{start: time.Now(), n: -b.autoThreshold() * 1000}
		b.auto.mu.Unlock()
	}()
}
