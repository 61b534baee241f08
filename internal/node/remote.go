package node

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/enginekv"
	"github.com/tenantdb/tenantdb/internal/fleetkey"
	"github.com/tenantdb/tenantdb/internal/remote"
)

// BackendDynamoDB is Options.Backend for a remote DynamoDB-API engine.
const BackendDynamoDB = "dynamodb"

// Remote configures the remote backend. The engine's credentials come
// from the standard AWS chain (environment, shared config and
// credentials files, profile), as for any AWS tool.
type Remote struct {
	// Endpoint is the engine's URL; "" means AWS DynamoDB in Region.
	Endpoint string
	// Region is the engine's region; "" means the AWS chain's, else
	// Options.Region.
	Region string
	// TablePrefix prefixes the name of the engine table the backend keeps
	// everything in (<TablePrefix>tenantdb).
	TablePrefix string
	// CredentialsFile and Profile, if set, name the shared credentials
	// file and the profile in it that the AWS chain reads (as
	// AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE would); tests use them
	// to give each gateway its own engine credential without touching the
	// process's environment.
	CredentialsFile, Profile string
	// AutoShardMax bounds the shard count a hot tenant's table is raised to
	// from the engine's throttling (remote.Options.AutoShardMax: 0 means
	// 64, negative never).
	AutoShardMax int
	// DeletionSweep is how often the gateway looks for tenant deletions
	// left unfinished (a gateway killed mid-deletion) and finishes those
	// it saw at the previous look (0: DefaultDeletionSweep).
	DeletionSweep time.Duration
	// JobSweep is how often the gateway looks for background jobs (TTL
	// syncs, index backfills) another gateway left stalled, to run them
	// (remote.Options.JobSweep; 0: 1 minute).
	JobSweep time.Duration
	// PITRWait is how long RestoreTableToPointInTime waits for its
	// restore before it answers the table CREATING
	// (remote.Options.PITRWait; 0: 30 s).
	PITRWait time.Duration
	// WebhookLease is how long a gateway delivering a webhook
	// subscription holds it without renewing (webhook.Options.Lease; 0:
	// FleetWebhookLease).
	WebhookLease time.Duration
}

// FleetStaleness is how long a gateway over a remote engine uses what it
// cached of the control plane and the definitions (a credential, a
// tenant's status, its quotas, a namespace's tables, registry entries,
// shard layouts, data keys) before reading it again, counted from when
// the read started; a change that narrows access waits FleetSettle before
// it returns, so it is in force on every gateway by then.
const FleetStaleness = time.Second

// FleetSettle is how long a change that narrows access (a key revoked, a
// tenant suspended or deleted, a quota changed, a table deleted) waits on
// a gateway after its commit before it is acknowledged: every other
// gateway's cached copy was read before the commit (ages count from a
// read's start), so it has expired — when a revocation returns, every
// gateway refuses the key. The margin covers clocks of gateways that
// run at slightly different rates (internal/remote/DESIGN.md, "Fleet
// caches").
const FleetSettle = FleetStaleness + FleetStaleness/10

// FleetWriteFence bounds every engine call a gateway makes for a request
// that writes, from when the request reached its backend; deleting a
// tenant or a table deletes its items again once that (+10 % and a
// second for the call's way to the engine) has passed, so a write
// admitted before the deletion settled leaves nothing behind
// (internal/remote/DESIGN.md, "Fencing").
const FleetWriteFence = 10 * time.Second

// settle is FleetSettle for a gateway (stale > 0), else 0: the embedded
// server never waits.
func settle(stale time.Duration) time.Duration {
	if stale <= 0 {
		return 0
	}
	return FleetSettle
}

// open connects the remote backend and returns it with the control
// plane's store in the same engine table (package enginekv): tenants,
// credentials, memberships, audit, quotas, usage and tenants' wrapped data
// keys live there, so any gateway started with the same settings shares
// them (internal/remote/DESIGN.md, "Stage 2+").
func (r Remote) open(ctx context.Context, o Options, key *auth.ServerKey, log *slog.Logger) (*remote.Backend, *enginekv.Store, error) {
	var lo []func(*config.LoadOptions) error
	if r.Region != "" {
		lo = append(lo, config.WithRegion(r.Region))
	}
	if r.CredentialsFile != "" {
		lo = append(lo, config.WithSharedCredentialsFiles([]string{r.CredentialsFile}))
	}
	if r.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(r.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Region == "" {
		cfg.Region = o.Region
	}
	client := dynamodb.NewFromConfig(cfg, func(co *dynamodb.Options) {
		if r.Endpoint != "" {
			co.BaseEndpoint = aws.String(r.Endpoint)
		}
	})
	streams := dynamodbstreams.NewFromConfig(cfg, func(so *dynamodbstreams.Options) {
		if r.Endpoint != "" {
			so.BaseEndpoint = aws.String(r.Endpoint)
		}
	})
	b, err := remote.Open(ctx, remote.Options{
		Client:       client,
		Streams:      streams,
		StreamSecret: key.Derive(remoteStreamsInfo), // NB: replaced by the fleet's (startFleetKey)
		TablePrefix:  r.TablePrefix,
		Region:       o.Region,
		Endpoint:     o.Endpoint,
		Logger:       log.With("component", "remote"),

		DefinitionsMaxStale: FleetStaleness,
		Settle:              FleetSettle,
		ShardCacheTTL:       FleetStaleness,
		WriteFence:          FleetWriteFence,
		AutoShardMax:        r.AutoShardMax,
		JobSweep:            r.JobSweep,
		PITRWait:            r.PITRWait,
	})
	if err != nil {
		return nil, nil, err
	}
	return b, enginekv.New(client, b.Table(), log.With("component", "enginekv")), nil
}

// checkFleetKey makes sure the engine's control plane is sealed under
// key, or that the gateway joins the rotation in progress of it, and
// returns the key to start with (package fleetkey): the first gateway
// records the key's check value with a conditional put, and a gateway
// started with another key refuses to start, saying what to do, instead
// of failing every credential it reads (credentials stay sealed in the
// engine; every gateway of a fleet is given the same server key, by
// TENANTDB_SERVER_KEY or the same <data-dir>/server.key file).
func checkFleetKey(ctx context.Context, st *enginekv.Store, key *auth.ServerKey, o Options) (*auth.ServerKey, error) {
	dir := o.DataDir
	if o.InMemory {
		dir = ""
	}
	return fleetkey.Check(ctx, st, key, dir, o.ServerKey != "")
}

// startFleetKey follows the fleet's server key rotations (joining the one
// in progress before the gateway serves) and drives those asked of it.
func (n *Node) startFleetKey(ctx context.Context, o Options, st *enginekv.Store, key *auth.ServerKey) (err error) {
	dir := o.DataDir
	if o.InMemory {
		dir = ""
	}
	n.fleetKey, err = fleetkey.Start(ctx, fleetkey.Options{
		Store: st, Gateways: n.remote.Gateways, Self: n.remote.GatewayID(),
		Auth: n.auth, Keys: n.keys, KEKInfo: kekInfo,
		DataDir: dir, FromEnv: o.ServerKey != "",
		Audit: auditPlatform(n.audit, n.log), Logger: n.log.With("component", "fleetkey"),
		Lease: remote.GatewayLease,
	})
	if err != nil {
		return err
	}
	// NB: after joining a rotation in progress: the secret may be sealed
	// under either key.
	secret, err := fleetkey.StreamSecret(ctx, st, n.auth, key.Derive(remoteStreamsInfo))
	if err != nil {
		return err
	}
	return n.remote.SetStreamSecret(secret)
}

// remoteStreamsInfo derives, from the server key, the stream secret of a
// fleet whose engine has none stored yet (fleetkey.StreamSecret).
const remoteStreamsInfo = "tenantdb remote streams v1"
