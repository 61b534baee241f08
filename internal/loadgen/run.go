package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Config describes one load run: a group of workers sharing a workload, a
// rate limit and a set of tenant clients.
type Config struct {
	// Clients has one client per tenant; worker i uses Clients[i%len(Clients)].
	Clients []*dynamodb.Client
	Table   string
	// Workload is one of Workloads; Mix is the weights for "mixed"
	// (DefaultMix when empty).
	Workload string
	Mix      string
	// Concurrency is the number of workers, each with one request in flight.
	Concurrency int
	// The measured window ends after Duration or after Requests measured
	// requests, whichever comes first; at least one must be set.
	Duration time.Duration
	Requests uint64
	// Warmup runs the load before the measured window without recording it.
	Warmup time.Duration
	// Rate caps the total request rate of the run in requests per second
	// (0 = unbounded). Requests follow a fixed schedule, and SchedLatency
	// measures from each request's scheduled time, so a stalled server is
	// not hidden by the client waiting for it (coordinated omission).
	Rate float64
	// ItemSize is the DynamoDB size of written items in bytes.
	ItemSize int
	// Keyspace is the number of distinct items writes address (item numbers
	// 0..Keyspace-1); Preloaded is the number of items reads address and
	// must have been written beforehand by Preload.
	Keyspace  int
	Preloaded int
	// BatchSize is the number of puts per BatchWriteItem; TxItems the
	// number of puts per TransactWriteItems.
	BatchSize int
	TxItems   int
	// Timeout bounds each request.
	Timeout time.Duration
	// ServerPID, when non-zero, is the server process whose CPU time is
	// measured over the window.
	ServerPID int
	// Label names the run in reports (e.g. the target server).
	Label string
	// Seed makes key choice reproducible; 0 picks a random seed.
	Seed uint64
}

func (c *Config) setDefaults() {
	if c.Concurrency == 0 {
		c.Concurrency = 64
	}
	if c.ItemSize == 0 {
		c.ItemSize = 1024
	}
	if c.BatchSize == 0 {
		c.BatchSize = 25
	}
	if c.TxItems == 0 {
		c.TxItems = 4
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Keyspace == 0 {
		c.Keyspace = max(c.Preloaded, 100_000)
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
}

func (c *Config) validate(mix Mix) error {
	switch {
	case len(c.Clients) == 0:
		return errors.New("loadgen: no clients")
	case c.Table == "":
		return errors.New("loadgen: no table")
	case c.Concurrency < 1:
		return errors.New("loadgen: concurrency must be at least 1")
	case c.Duration <= 0 && c.Requests == 0:
		return errors.New("loadgen: set a duration or a number of requests")
	case c.Rate < 0:
		return errors.New("loadgen: rate must not be negative")
	case c.BatchSize < 1 || c.BatchSize > c.Keyspace:
		return fmt.Errorf("loadgen: batch size %d must be between 1 and the keyspace %d", c.BatchSize, c.Keyspace)
	case c.TxItems < 1 || c.TxItems > c.Keyspace:
		return fmt.Errorf("loadgen: transaction items %d must be between 1 and the keyspace %d", c.TxItems, c.Keyspace)
	}
	for _, op := range mix.Ops() {
		if op == OpGet && c.Preloaded < 1 {
			return errors.New("loadgen: the get workload needs preloaded items (--preload)")
		}
		if op == OpQuery && c.Preloaded < CollectionSize {
			return fmt.Errorf("loadgen: the query workload needs at least %d preloaded items (--preload)", CollectionSize)
		}
	}
	return nil
}

type opStats struct {
	ok, errs, throttled, unprocessed atomic.Uint64
	lat                              *Histogram // successful requests, from send
	sched                            *Histogram // successful requests, from schedule (Rate > 0)
}

// Run drives the load described by cfg until the measured window ends or ctx
// is canceled, and returns what it measured. Request errors are counted in
// the Result, not returned; Run fails only on a bad Config or when ctx is
// canceled before the measured window begins.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	mix, err := MixFor(cfg.Workload, cfg.Mix)
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(mix); err != nil {
		return nil, err
	}
	runner := &opRunner{
		table:     cfg.Table,
		items:     newItems(cfg.ItemSize),
		keyspace:  cfg.Keyspace,
		preloaded: cfg.Preloaded,
		batchSize: cfg.BatchSize,
		txItems:   cfg.TxItems,
	}
	var stats [numOps]*opStats
	for _, op := range mix.Ops() {
		stats[op] = &opStats{lat: NewHistogram(), sched: NewHistogram()}
	}
	var tally errorTally

	var (
		measuring atomic.Bool
		issued    atomic.Uint64 // measured requests started
		slot      atomic.Int64  // next schedule slot (Rate > 0)
		stop      = make(chan struct{})
		stopOnce  sync.Once
		wg        sync.WaitGroup
	)
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	// NB: requests in flight when the window ends are drained, not
	// canceled, so the last ones are not reported as errors; ctx cancels all.
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) / cfg.Rate)
	}
	t0 := time.Now()

	worker := func(id int) {
		defer wg.Done()
		client := cfg.Clients[id%len(cfg.Clients)]
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(id)))
		var timer *time.Timer
		for {
			select {
			case <-stop:
				return
			default:
			}
			scheduled := time.Time{}
			if interval > 0 {
				scheduled = t0.Add(time.Duration(slot.Add(1)-1) * interval)
				if d := time.Until(scheduled); d > 0 {
					if timer == nil {
						timer = time.NewTimer(d)
					} else {
						timer.Reset(d)
					}
					select {
					case <-stop:
						timer.Stop()
						return
					case <-timer.C:
					}
				}
			}
			measured := measuring.Load()
			if measured && cfg.Requests > 0 && issued.Add(1) > cfg.Requests {
				halt()
				return
			}
			op := mix.Pick(r)
			rctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
			start := time.Now()
			unprocessed, err := runner.do(rctx, client, op, r)
			end := time.Now()
			cancel()
			if !measured {
				continue
			}
			s := stats[op]
			if unprocessed > 0 {
				s.unprocessed.Add(uint64(unprocessed))
			}
			if err != nil {
				if ctx.Err() != nil {
					return // interrupted: not the server's error
				}
				s.errs.Add(1)
				if IsThrottle(tally.add(err)) {
					s.throttled.Add(1)
				}
				continue
			}
			s.ok.Add(1)
			s.lat.Record(end.Sub(start))
			if interval > 0 {
				s.sched.Record(end.Sub(scheduled))
			}
		}
	}

	var (
		cpuStart, selfStart, busyStart time.Duration
		srvErr, machErr                error
	)
	begin := func() {
		if cfg.ServerPID != 0 {
			cpuStart, srvErr = ProcCPU(cfg.ServerPID)
		}
		busyStart, _, machErr = machineCPU()
		selfStart = selfCPU()
	}
	if cfg.Warmup <= 0 {
		begin()
		measuring.Store(true)
	}
	wg.Add(cfg.Concurrency)
	for i := 0; i < cfg.Concurrency; i++ {
		go worker(i)
	}
	if cfg.Warmup > 0 {
		select {
		case <-ctx.Done():
			halt()
			wg.Wait()
			return nil, ctx.Err()
		case <-time.After(cfg.Warmup):
		}
		begin()
		measuring.Store(true)
	}
	mStart := time.Now()
	var deadline <-chan time.Time
	if cfg.Duration > 0 {
		tm := time.NewTimer(cfg.Duration)
		defer tm.Stop()
		deadline = tm.C
	}
	select {
	case <-ctx.Done():
	case <-deadline:
	case <-stop:
	}
	halt()
	wg.Wait()
	elapsed := time.Since(mStart)

	res := &Result{
		Label:       cfg.Label,
		Workload:    cfg.Workload,
		Concurrency: cfg.Concurrency,
		Tenants:     len(cfg.Clients),
		Rate:        cfg.Rate,
		ItemSize:    ItemSize(cfg.ItemSize),
		Interrupted: ctx.Err() != nil,
		ElapsedSec:  elapsed.Seconds(),
	}
	if cfg.Workload == "mixed" {
		res.Mix = cfg.Mix
		if res.Mix == "" {
			res.Mix = DefaultMix
		}
	}
	all, allSched := NewHistogram(), NewHistogram()
	for _, op := range mix.Ops() {
		s := stats[op]
		o := OpResult{
			Op:          op.String(),
			OK:          s.ok.Load(),
			Errors:      s.errs.Load(),
			Throttled:   s.throttled.Load(),
			Unprocessed: s.unprocessed.Load(),
			Latency:     summarize(s.lat),
		}
		o.OpsPerSec = float64(o.OK) / elapsed.Seconds()
		res.OK += o.OK
		res.Errors += o.Errors
		res.Throttled += o.Throttled
		res.Unprocessed += o.Unprocessed
		all.Merge(s.lat)
		allSched.Merge(s.sched)
		res.ByOp = append(res.ByOp, o)
	}
	res.OpsPerSec = float64(res.OK) / elapsed.Seconds()
	res.Latency = summarize(all)
	if interval > 0 {
		l := summarize(allSched)
		res.SchedLatency = &l
	}
	res.ErrorsByCode = tally.snapshot()

	n := res.OK + res.Errors
	res.ClientCPU = cpuUsage(0, selfCPU()-selfStart, elapsed, n)
	if busyEnd, _, err := machineCPU(); err == nil && machErr == nil {
		res.MachineBusyCores = (busyEnd - busyStart).Seconds() / elapsed.Seconds()
	}
	if cfg.ServerPID != 0 {
		var cpuEnd time.Duration
		if srvErr == nil {
			cpuEnd, srvErr = ProcCPU(cfg.ServerPID)
		}
		if srvErr != nil {
			res.ServerCPUError = srvErr.Error()
		} else {
			u := cpuUsage(cfg.ServerPID, cpuEnd-cpuStart, elapsed, n)
			res.ServerCPU = &u
		}
	}
	return res, nil
}

func cpuUsage(pid int, cpu, elapsed time.Duration, requests uint64) CPUUsage {
	u := CPUUsage{PID: pid, Seconds: cpu.Seconds(), Cores: cpu.Seconds() / elapsed.Seconds()}
	if requests > 0 {
		u.MicrosPerOp = float64(cpu.Microseconds()) / float64(requests)
	}
	return u
}
