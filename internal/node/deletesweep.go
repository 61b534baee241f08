package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/tenantdb/tenantdb/internal/lifecycle"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// DefaultDeletionSweep is how often a gateway looks for tenant deletions
// left unfinished (Remote.DeletionSweep).
const DefaultDeletionSweep = time.Minute

// deletionSweeper finishes, on a gateway, the tenant deletions that a
// gateway killed (or an engine failing) left in status deleting: a
// tenant seen deleting at two sweeps in a row is deleted again
// (lifecycle.FinishDeletions), so a deletion is finished within two
// intervals of being cut short, by whichever gateways are up.
type deletionSweeper struct {
	stop context.CancelFunc
	done chan struct{}
}

func startDeletionSweeper(lc *lifecycle.Service, every time.Duration, log *slog.Logger) *deletionSweeper {
	if every <= 0 {
		every = DefaultDeletionSweep
	}
	ctx, stop := context.WithCancel(context.Background())
	d := &deletionSweeper{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		var seen map[tenancy.TenantID]bool
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			var err error
			if seen, err = lc.FinishDeletions(ctx, seen); err != nil && ctx.Err() == nil {
				log.Warn("finishing tenant deletions left unfinished", "err", err)
			}
		}
	}()
	return d
}

// Close stops the sweeper and waits for a sweep in progress (a deletion
// it cut short stays deleting, for the next sweep of any gateway).
func (d *deletionSweeper) Close() {
	d.stop()
	<-d.done
}
