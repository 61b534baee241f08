package remote

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// Background jobs left by a gateway that was killed or closed mid-job
// (TTL syncs, index backfills) are resumed by every gateway's start
// (resumeTTLJobs), and, without a restart, by any gateway that finds a
// job's recorded progress unchanged for a whole Options.JobSweep: it
// runs the job from there too (two runners are safe: every write of a
// job is conditioned on the item as read, and its position is saved on
// condition that it is still the table's job).

// defaultJobSweep is Options.JobSweep's default.
const defaultJobSweep = time.Minute

// jobMark is what a sweep remembers of a job: its progress.
type jobMark struct {
	synced int64
	cns    []byte
	shard  int
	last   []byte
}

func (m jobMark) same(o jobMark) bool {
	return m.synced == o.synced && m.shard == o.shard && bytes.Equal(m.cns, o.cns) && bytes.Equal(m.last, o.last)
}

// jobID names a job (one generation of one table's job) in b.running.
func (j *ttlJob) jobID() string { return fmt.Sprintf("%s/%d/%x", j.pk, j.id, j.gen) }

// sweepJobs looks at the jobs in the engine every Options.JobSweep
// until ctx ends, and runs those whose progress did not move since the
// previous look and that this gateway does not run.
func (b *Backend) sweepJobs(ctx context.Context) {
	every := b.opts.JobSweep
	if every <= 0 {
		every = defaultJobSweep
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var seen map[string]jobMark
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		seen = b.sweepJobsOnce(ctx, seen)
		b.sweepScratch(ctx) // pitr.go
	}
}

func (b *Backend) sweepJobsOnce(ctx context.Context, prev map[string]jobMark) map[string]jobMark {
	next := map[string]jobMark{}
	for _, pk := range []string{ttlJobPK, gsiJobPK} {
		out, err := b.db.Query(ctx, b.partitionQuery(pk))
		if err != nil {
			if ctx.Err() == nil {
				b.log.Warn("reading jobs to sweep", "jobs", pk, "err", err)
			}
			return prev
		}
		for _, it := range out.Items {
			j, err := jobFrom(it)
			if err != nil {
				continue
			}
			id := j.jobID()
			if _, mine := b.running.Load(id); mine {
				continue
			}
			m := jobMark{synced: j.synced, cns: j.cns, shard: j.shard, last: j.last}
			if p, ok := prev[id]; ok && p.same(m) {
				go b.runTTLJob(ctx, j, "resumed") // stalled: its runner is gone
				continue
			}
			next[id] = m
		}
	}
	return next
}
