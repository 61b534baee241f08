package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
)

// Gateway registration (DESIGN.md, "Fleet"): each gateway keeps a
// heartbeat record in the engine, so that the fleet can be listed with one
// Query and a narrowing change can tell whether any other gateway may
// hold a cached copy of what it changed.
//
//	pk = "meta#gw"   sk = the gateway's id (random, per process start)
//	started, beat, expires (N, Unix ms), endpoint, host (S), pid (N)
//
// NB: the record is written (and must succeed) before the gateway serves
// anything, and renewed every HeartbeatInterval; it expires GatewayLease
// after its last renewal. A gateway counts as alive until its record
// expires, whether or not it is still heartbeating: a stalled gateway's
// cached copies were read before it stalled, and (HeartbeatInterval +
// the fleet's staleness bound) < GatewayLease, so they have expired by
// the time its record does. A gateway that closes deletes its record once
// it has stopped serving.
const gwPK = "meta#gw"

const (
	// HeartbeatInterval is how often a gateway renews its record.
	HeartbeatInterval = time.Second
	// GatewayLease is how long a record counts as alive after its last
	// renewal.
	GatewayLease = 5 * time.Second
	// gwForget is how long after its expiry a record is deleted by a
	// gateway listing the fleet (a gateway killed without closing).
	gwForget = time.Minute
)

// fleet is this gateway's registration.
type fleet struct {
	id      string
	started time.Time
	host    string
	pid     int

	mu      sync.Mutex
	lastOK  time.Time // last successful renewal
	stopped atomic.Bool
	done    chan struct{}
}

// registerGateway writes this gateway's heartbeat record and renews it every
// HeartbeatInterval until Close; endpoint is how clients reach the
// gateway (shown in the listing). It returns once the first record is
// written. NB: Open calls it before the gateway reads anything it
// caches (definitions, and later credentials and tenants), so that a
// gateway whose record a narrowing change does not find read nothing
// before that change's commit.
func (b *Backend) registerGateway(ctx context.Context, endpoint string) error {
	var id [8]byte
	rand.Read(id[:])
	host, _ := os.Hostname()
	f := &fleet{id: hex.EncodeToString(id[:]), started: time.Now(), host: host, pid: os.Getpid(), done: make(chan struct{})}
	if err := b.beat(ctx, f, endpoint); err != nil {
		return err
	}
	b.fleetMu.Lock()
	b.fleet = f
	b.fleetMu.Unlock()
	go func() {
		defer close(f.done)
		t := time.NewTicker(HeartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-b.bg.Done():
				return
			case <-t.C:
			}
			if err := b.beat(b.bg, f, endpoint); err != nil && b.bg.Err() == nil {
				b.log.Warn("remote: gateway heartbeat failed", "gateway", f.id, "error", err)
			}
		}
	}()
	return nil
}

// beat writes f's record.
func (b *Backend) beat(ctx context.Context, f *fleet, endpoint string) error {
	now := time.Now()
	item := map[string]types.AttributeValue{
		attrPK:    &types.AttributeValueMemberS{Value: gwPK},
		attrSK:    &types.AttributeValueMemberB{Value: []byte(f.id)},
		"started": num64(f.started.UnixMilli()),
		"beat":    num64(now.UnixMilli()),
		"expires": num64(now.Add(GatewayLease).UnixMilli()),
		"pid":     num64(int64(f.pid)),
	}
	if endpoint != "" {
		item["endpoint"] = &types.AttributeValueMemberS{Value: endpoint}
	}
	if f.host != "" {
		item["host"] = &types.AttributeValueMemberS{Value: f.host}
	}
	if f.stopped.Load() {
		return nil // NB: no renewal after the deregistration
	}
	if _, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: item}); err != nil {
		return engineErr(err, strip)
	}
	f.mu.Lock()
	f.lastOK = now
	f.mu.Unlock()
	return nil
}

// deregister deletes this gateway's record (Close, after serving ended).
func (b *Backend) deregister(ctx context.Context) {
	b.fleetMu.Lock()
	f := b.fleet
	b.fleetMu.Unlock()
	if f == nil {
		return
	}
	f.stopped.Store(true)
	<-f.done // the renewals ended (Close cancelled b.bg)
	if _, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: gwPK},
		attrSK: &types.AttributeValueMemberB{Value: []byte(f.id)},
	}}); err != nil {
		b.log.Warn("remote: gateway record not deleted; it expires by itself", "gateway", f.id, "error", engineErr(err, strip))
	}
}

// Gateways lists the live gateways over the engine (one strongly
// consistent Query), this one marked Self; records expired for over a
// minute are deleted on the way.
func (b *Backend) Gateways(ctx context.Context) ([]client.Gateway, error) {
	in := b.partitionQuery(gwPK)
	b.fleetMu.Lock()
	self := ""
	if b.fleet != nil {
		self = b.fleet.id
	}
	b.fleetMu.Unlock()
	now := time.Now()
	var out []client.Gateway
	for {
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range res.Items {
			sk, ok := it[attrSK].(*types.AttributeValueMemberB)
			if !ok {
				continue
			}
			expires := time.UnixMilli(counterOf(it, "expires"))
			if now.After(expires) {
				if now.Sub(expires) > gwForget {
					_, _ = b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: physKeyOf(it),
						ConditionExpression:       aws.String("#e = :e"),
						ExpressionAttributeNames:  map[string]string{"#e": "expires"},
						ExpressionAttributeValues: map[string]types.AttributeValue{":e": it["expires"]}})
				}
				continue
			}
			g := client.Gateway{ID: string(sk.Value), Started: time.UnixMilli(counterOf(it, "started")).UTC(),
				Heartbeat: time.UnixMilli(counterOf(it, "beat")).UTC(), Expires: expires.UTC(),
				PID: int(counterOf(it, "pid")), Self: string(sk.Value) == self}
			if s, ok := it["endpoint"].(*types.AttributeValueMemberS); ok {
				g.Endpoint = s.Value
			}
			if s, ok := it["host"].(*types.AttributeValueMemberS); ok {
				g.Host = s.Value
			}
			out = append(out, g)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.Before(out[j].Started)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Alone reports whether no other gateway may hold cached copies of the
// control plane: this gateway is registered, its own record is current
// (renewed within the lease), and no other record is alive. Any error
// answers false: a narrowing change then settles as always.
func (b *Backend) Alone(ctx context.Context) bool {
	b.fleetMu.Lock()
	f := b.fleet
	b.fleetMu.Unlock()
	if f == nil {
		return false
	}
	f.mu.Lock()
	fresh := time.Since(f.lastOK) < GatewayLease
	f.mu.Unlock()
	if !fresh {
		return false
	}
	gws, err := b.Gateways(ctx)
	if err != nil {
		return false
	}
	for _, g := range gws {
		if !g.Self {
			return false
		}
	}
	return true
}
