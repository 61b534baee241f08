package changelog

import "time"

// Pacer decides when a consumer of the log (a webhook subscription, an
// aggregate) reads next, so that under load one read carries many commits'
// changes and at light load a change is read as soon as it commits.
//
// A consumer woken for every commit of its namespace (Changed) would read
// once per commit. Making every read wait Window after the previous one
// batches them under load but adds up to Window to every change's lag when
// changes are rare. So the window opens only while changes arrive fast:
// when the reads of the last PaceHorizon windows found at least
// PaceRecords changes between them (with a 10 ms window, 400 changes a
// second); below that the consumer reads at once.
//
// Wakes that find nothing count as one change each: Changed fires for
// commits to any table of the namespace, so a tenant writing fast to
// another table would otherwise make the consumer read once per commit
// of it. (The empty read that follows one that found changes — the
// consumer making sure it has seen everything — is not a wake and does
// not count.)
//
// The zero Pacer with Window set is ready; it is not safe for concurrent
// use (each consumer owns one).
type Pacer struct {
	Window time.Duration
	reads  []paceRead // the reads of the last PaceHorizon windows, oldest first
	found  int        // changes found by reads (and empty wakes)
	empty  bool       // the last read found nothing
}

type paceRead struct {
	at time.Time
	n  int
}

// Pacing constants: see Pacer.
const (
	PaceRecords = 16
	PaceHorizon = 4
)

// Next records a read made at readAt that found n changes (full: as many
// as it asked for) and returns when the next read may start: the zero
// time for at once.
func (p *Pacer) Next(readAt time.Time, n int, full bool) time.Time {
	horizon := readAt.Add(-PaceHorizon * p.Window)
	i := 0
	for i < len(p.reads) && p.reads[i].at.Before(horizon) {
		p.found -= p.reads[i].n
		i++
	}
	p.reads = append(p.reads[:0], p.reads[i:]...)
	count := n
	if n == 0 && p.empty {
		count = 1 // woken for nothing: another table's commit, say
	}
	p.empty = n == 0
	if count > 0 {
		p.reads = append(p.reads, paceRead{readAt, count})
		p.found += count
	}
	if full || p.found < PaceRecords {
		// NB: a full page is a backlog (read on at once); too few
		// changes lately means light load, where a window would only
		// add to every change's lag.
		return time.Time{}
	}
	return readAt.Add(p.Window)
}
