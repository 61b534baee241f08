package remote

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// JobEvent is a step of a background job of the remote backend — a TTL
// sync (UpdateTimeToLive) or an index backfill (UpdateTable) — for the
// audit log: node appends it to the table owner's log (the platform's for
// a shared table), as the embedded server's tenant moves are.
type JobEvent struct {
	// Tenant owns the table (zero: a shared table, the platform's).
	Tenant tenancy.TenantID
	// Kind is "ttl-sync", "index-backfill" or "pitr-restore" (a
	// point-in-time restore, pitr.go).
	Kind string
	// Phase is "started" (by the request that changed the table),
	// "resumed" (by a gateway that found it left by another, at its
	// start), "done" (every collection synced; once per job, by the
	// gateway whose conditional end won) or "cancelled" (the table or the
	// index is gone).
	Phase string
	// Table is the logical table's name; Detail says what the job does
	// and how far it got ("attribute=exp enabled=true synced=120").
	Table, Detail string
	// By is the access key id of the request that started it ("" after).
	By string
}

// jobHooks holds the hook and the events that came before it was set
// (a job resumed while the node was still opening).
type jobHooks struct {
	mu      sync.Mutex
	hook    func(JobEvent)
	pending []JobEvent
}

// maxPendingJobEvents bounds the events kept for a hook not set yet (a
// backend without one, in tests, keeps no more).
const maxPendingJobEvents = 1024

// SetJobHook sets the function told of every background job's start,
// resumption and end (node: the audit log), and tells it those that
// happened before.
func (b *Backend) SetJobHook(f func(JobEvent)) {
	b.jobs.mu.Lock()
	b.jobs.hook = f
	pending := b.jobs.pending
	b.jobs.pending = nil
	b.jobs.mu.Unlock()
	for _, ev := range pending {
		f(ev)
	}
}

// jobEvent reports phase of job j.
func (b *Backend) jobEvent(j *ttlJob, phase, by string) {
	ev := JobEvent{Kind: j.kind(), Phase: phase, Table: j.name, By: by}
	ev.Tenant, _ = tenancy.ParseTenantID(j.tenant)
	if j.pk == gsiJobPK {
		ev.Detail = fmt.Sprintf("index=%s entries=%d", j.iname, j.synced)
	} else {
		ev.Detail = fmt.Sprintf("attribute=%s enabled=%t synced=%d", j.attr, j.enabled, j.synced)
	}
	b.emitJob(ev)
}

// emitJob logs ev and tells the hook.
func (b *Backend) emitJob(ev JobEvent) {
	b.log.Info("background job", "job", ev.Kind, "phase", ev.Phase, "table", ev.Table, "detail", ev.Detail)
	b.jobs.mu.Lock()
	f := b.jobs.hook
	if f == nil && len(b.jobs.pending) < maxPendingJobEvents {
		b.jobs.pending = append(b.jobs.pending, ev)
	}
	b.jobs.mu.Unlock()
	if f != nil {
		f(ev)
	}
}

func (j *ttlJob) kind() string {
	if j.pk == gsiJobPK {
		return "index-backfill"
	}
	return "ttl-sync"
}

// endJob deletes job j if it is still the table's current one and
// reports whether this call deleted it (another gateway running the same
// job may have).
func (b *Backend) endJob(ctx context.Context, j *ttlJob) (bool, error) {
	_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: jobKey(j.pk, j.id),
		ConditionExpression:       aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": "gen"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberB{Value: j.gen}},
	})
	if err != nil {
		if apierr.Is(engineErr(err, strip), apierr.ConditionalCheckFailed) {
			return false, nil
		}
		return false, engineErr(err, strip)
	}
	return true, nil
}

// finishJob ends job j with phase (done, cancelled), reported if this
// gateway's end won.
func (b *Backend) finishJob(ctx context.Context, j *ttlJob, phase string) error {
	ended, err := b.endJob(ctx, j)
	if ended {
		b.jobEvent(j, phase, "")
	}
	return err
}
