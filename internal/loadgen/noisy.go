package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// NoisyConfig describes issue 4's noisy-neighbour benchmark: a victim tenant
// at a steady rate, then alongside an aggressor tenant that floods the
// server, in three phases:
//
//  1. the victim alone;
//  2. plus the aggressor with many connections at Overload x its quota;
//  3. plus the aggressor within its quota (Phase3Rate) but saturating the
//     server's CPU.
//
// Phase 3 needs an aggressor quota above what the server can serve, while
// phase 2 needs a low one: Hook (called before each phase) can change the
// quota between phases. NB: servers with DynamoDB-like burst credit let an
// idle aggressor exceed its quota for up to 300 s of unused capacity, so
// phase 2 must be long enough, or the burst small, to see throttling.
type NoisyConfig struct {
	// Victim and Aggressor are the two load groups. Duration, Warmup and
	// Requests are taken from Victim for both; Rate of Aggressor is set per
	// phase. Victim.ServerPID, if set, reports server CPU per phase.
	Victim    Config
	Aggressor Config
	// AggressorQuota is the aggressor's quota in requests per second.
	AggressorQuota float64
	// Overload multiplies the quota in phase 2 (default 10).
	Overload float64
	// Phase3Rate is the aggressor's rate in phase 3 (default AggressorQuota;
	// 0 after defaults means unbounded). Phase3Workload, if set, replaces
	// the aggressor's workload in phase 3.
	Phase3Rate     float64
	Phase3Workload string
	// Phases lists the phases to run (default 1, 2, 3).
	Phases []int
	// Pause separates phases so queues drain (default 2 s).
	Pause time.Duration
	// Hook, if set, runs before each phase.
	Hook func(ctx context.Context, phase int) error
	// RunAggressor, if set, runs the aggressor's load instead of Run, e.g.
	// in a separate, lower-priority process so that on a small machine the
	// aggressor's client does not take the victim client's CPU.
	RunAggressor func(ctx context.Context, cfg Config) (*Result, error)
}

// PhaseResult is what one phase measured.
type PhaseResult struct {
	Phase         int     `json:"phase"`
	Name          string  `json:"name"`
	AggressorRate float64 `json:"aggressor_rate,omitempty"`
	Victim        *Result `json:"victim"`
	Aggressor     *Result `json:"aggressor,omitempty"`
}

// RunNoisy runs the phases of cfg in order and returns their results.
func RunNoisy(ctx context.Context, cfg NoisyConfig) ([]PhaseResult, error) {
	if cfg.AggressorQuota <= 0 {
		return nil, errors.New("loadgen: noisy: the aggressor quota must be positive")
	}
	if cfg.Overload == 0 {
		cfg.Overload = 10
	}
	if cfg.Phase3Rate == 0 {
		cfg.Phase3Rate = cfg.AggressorQuota
	}
	if cfg.Phase3Rate < 0 {
		cfg.Phase3Rate = 0
	}
	if len(cfg.Phases) == 0 {
		cfg.Phases = []int{1, 2, 3}
	}
	if cfg.Pause == 0 {
		cfg.Pause = 2 * time.Second
	}
	cfg.Victim.Label = "victim"
	cfg.Aggressor.Label = "aggressor"
	cfg.Aggressor.Duration = cfg.Victim.Duration
	cfg.Aggressor.Warmup = cfg.Victim.Warmup
	cfg.Aggressor.Requests = 0
	cfg.Aggressor.ServerPID = 0
	if cfg.Aggressor.Duration <= 0 {
		return nil, errors.New("loadgen: noisy: phases need a duration")
	}

	var out []PhaseResult
	for i, phase := range cfg.Phases {
		if i > 0 {
			select {
			case <-ctx.Done():
				return out, ctx.Err()
			case <-time.After(cfg.Pause):
			}
		}
		pr := PhaseResult{Phase: phase}
		agg := cfg.Aggressor
		switch phase {
		case 1:
			pr.Name = "victim alone"
		case 2:
			agg.Rate = cfg.AggressorQuota * cfg.Overload
			pr.Name = fmt.Sprintf("aggressor at %gx quota", cfg.Overload)
		case 3:
			agg.Rate = cfg.Phase3Rate
			if cfg.Phase3Workload != "" {
				agg.Workload = cfg.Phase3Workload
			}
			pr.Name = "aggressor within quota, saturating"
		default:
			return out, fmt.Errorf("loadgen: noisy: no phase %d", phase)
		}
		pr.AggressorRate = agg.Rate
		if cfg.Hook != nil {
			if err := cfg.Hook(ctx, phase); err != nil {
				return out, fmt.Errorf("loadgen: noisy: phase %d hook: %w", phase, err)
			}
		}
		var (
			wg     sync.WaitGroup
			aggErr error
		)
		if phase != 1 {
			runAgg := Run
			if cfg.RunAggressor != nil {
				runAgg = cfg.RunAggressor
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				pr.Aggressor, aggErr = runAgg(ctx, agg)
			}()
		}
		var err error
		pr.Victim, err = Run(ctx, cfg.Victim)
		wg.Wait()
		if err = errors.Join(err, aggErr); err != nil {
			return out, fmt.Errorf("loadgen: noisy: phase %d: %w", phase, err)
		}
		out = append(out, pr)
	}
	return out, nil
}

// WriteNoisyText prints phase results as a table, with the victim's
// throughput and p99 relative to phase 1 (issue 4's targets: throughput
// within 10%, p99 within 1.5x).
func WriteNoisyText(w io.Writer, phases []PhaseResult) error {
	var base *Result
	for _, p := range phases {
		if p.Phase == 1 {
			base = p.Victim
		}
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tdescription\tvictim ops/s\tvs solo\tp50\tp99\tvs solo\tp99 sched\tvictim err/thr\taggr rate\taggr ops/s\taggr throttled\taggr errors\tserver cores\tverdict")
	for _, p := range phases {
		v := p.Victim
		ratio, p99ratio := "-", "-"
		verdict := "-"
		if base != nil && p.Phase != 1 && base.OpsPerSec > 0 && base.Latency.P99 > 0 {
			tr := v.OpsPerSec / base.OpsPerSec
			lr := v.Latency.P99 / base.Latency.P99
			ratio, p99ratio = fmt.Sprintf("%.2f", tr), fmt.Sprintf("%.2fx", lr)
			verdict = "ok"
			var miss []string
			if tr < 0.9 {
				miss = append(miss, "throughput")
			}
			if lr > 1.5 {
				miss = append(miss, "p99")
			}
			if v.Throttled > 0 {
				miss = append(miss, "victim throttled")
			}
			if len(miss) > 0 {
				verdict = "MISS " + strings.Join(miss, "+")
			}
		}
		sched := "-"
		if v.SchedLatency != nil {
			sched = FormatMicros(v.SchedLatency.P99)
		}
		cores := "-"
		if v.ServerCPU != nil {
			cores = fmt.Sprintf("%.2f", v.ServerCPU.Cores)
		}
		aggRate, aggOps, aggThr, aggErr := "-", "-", "-", "-"
		if a := p.Aggressor; a != nil {
			aggRate = "unbounded"
			if p.AggressorRate > 0 {
				aggRate = fmt.Sprintf("%g/s", p.AggressorRate)
			}
			aggOps = fmt.Sprintf("%.1f", a.OpsPerSec)
			aggThr = fmt.Sprintf("%d", a.Throttled)
			aggErr = fmt.Sprintf("%d", a.Errors-a.Throttled)
		}
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			p.Phase, p.Name, v.OpsPerSec, ratio, FormatMicros(v.Latency.P50), FormatMicros(v.Latency.P99), p99ratio,
			sched, v.Errors-v.Throttled, v.Throttled, aggRate, aggOps, aggThr, aggErr, cores, verdict)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}
