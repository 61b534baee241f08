// Package remote is a dynamo.Backend over a remote engine that speaks
// the DynamoDB API (AWS DynamoDB, ScyllaDB Alternator, dynalite, another
// tenantdb): tenantdb becomes a gateway, and every item lives in the
// engine.
//
// It decides no isolation: each request's table is resolved by
// internal/resolve into a Target (definition, namespace, leading-key
// checks, policy), and the backend maps the Target onto its physical
// layout — one engine table, one item collection per tenant environment
// and logical table — and rewrites keys, expressions and page tokens so
// that a tenant never sees or supplies a physical key. Conditional
// writes, UpdateItem and transactions are the engine's own; the gateway
// holds no lock. Table definitions are stored in the engine too, through
// the resolver's Catalog. See DESIGN.md for the layout, the cost of each
// operation and what is not served yet.
package remote

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// Options configure a Backend.
type Options struct {
	// Client talks to the engine; its credentials are the gateway's.
	Client *dynamodb.Client
	// TablePrefix names the engine table: <TablePrefix>tenantdb.
	TablePrefix string
	// Region and Account appear in table ARNs; Endpoint is what
	// DescribeEndpoints reports (the gateway's own address).
	Region, Account, Endpoint string
	// MaxTenantTables bounds one tenant environment's tables (0: 256).
	MaxTenantTables int
	// IndexSlots is the number of generic global secondary indexes of the
	// engine table (0: 20, DynamoDB's default limit), which bounds the
	// secondary indexes of one logical table. It is fixed when the engine
	// table is created.
	IndexSlots int
	// ShardCacheTTL bounds how long a gateway uses a collection's shard
	// layout before reading it again (0: 2 s); a change of shard count
	// waits for it between its phases (shard.go).
	ShardCacheTTL time.Duration
	// AutoShardMax is the largest shard count a collection is raised to
	// from observed engine throttling (0: 64; negative: never), and
	// AutoShardThrottles the throttled writes within 10 s that raise it
	// (0: 50); see autoshard.go.
	AutoShardMax, AutoShardThrottles int
	// Logger receives the backend's logs; nil discards them.
	Logger *slog.Logger
	// Now returns the time (tests); nil means time.Now.
	Now func() time.Time
	// DefinitionsMaxStale is how long cached table definitions are used
	// before they are read again from the engine (resolve.Options.MaxStale):
	// DDL through another gateway is seen within it. 0 keeps them until
	// this gateway's own DDL changes them (one gateway only).
	DefinitionsMaxStale time.Duration
	// Settle, if positive, is how long DeleteTable waits after the
	// definition is gone before it returns, keeping the name (a tombstone
	// in its place) from being created again meanwhile: every other
	// gateway's cached definition has expired then, so none writes into
	// the dropped table's items once a new table of the name exists
	// (DESIGN.md, "Fleet caches"). At least DefinitionsMaxStale; 0 never
	// waits (one gateway).
	Settle time.Duration
	// Streams talks to the engine's DynamoDB Streams (streams.go); nil
	// refuses streams. StreamSecret (32 bytes or more, the same on every
	// gateway: derived from the server key) seals tenants' shard
	// iterators, so that any gateway opens them.
	Streams      *dynamodbstreams.Client
	StreamSecret []byte
	// WriteFence, if positive, bounds every engine call of a request that
	// writes (Fence), and a deletion of a tenant or table deletes its
	// items again once no such call admitted before it can still run
	// (fence.go). 0: no fence (one gateway).
	WriteFence time.Duration
	// JobSweep is how often the gateway looks for background jobs (TTL
	// syncs, index backfills) whose progress has not moved since its
	// previous look, and runs them (0: 1 minute; jobsweep.go).
	JobSweep time.Duration
	// PITRWait is how long RestoreTableToPointInTime waits for its
	// restore before it answers the table CREATING (default 30 s;
	// pitr.go).
	PITRWait time.Duration
}

// Backend serves the DynamoDB operations over the engine. It is safe for
// concurrent use; it keeps no state that the engine does not also hold,
// except the resolver's cache of definitions (see DESIGN.md).
type Backend struct {
	db    *dynamodb.Client
	table string
	opts  Options
	res   *resolve.Resolver
	log   *slog.Logger

	reg  registry
	lays layouts
	auto autoShard
	// meter holds the storage deltas not yet flushed (storage.go); fleet
	// this gateway's registration (fleet.go).
	meter   *storageMeter
	fleetMu sync.Mutex
	fleet   *fleet
	bk      backupJobs // the backup and restore copies this gateway runs (backupjob.go)
	pitr    pitrCache  // the engine table's point-in-time recovery, read at most once a second (pitr.go)
	rw      rewinds    // the in-place tenant restores this gateway holds (rewind.go)

	st      streamState // DynamoDB Streams (streams.go)
	jobs    jobHooks    // told of background jobs' steps (jobaudit.go)
	running sync.Map    // jobID -> true: the jobs this gateway runs (jobsweep.go)

	// ttlOff says why the engine's TTL is not available ("" when it is;
	// ttl.go).
	ttlOff string

	// TransferOps serves the export and import operations (transfers.go).
	engine.TransferOps

	// bg is cancelled by Close: the migrators of shard changes run in it.
	bg   context.Context
	stop context.CancelFunc

	// ddl serializes this gateway's DDL, as the resolver requires; the
	// engine's conditional writes order DDL across gateways.
	ddl sync.Mutex
}

// Open returns a Backend over the engine, creating its table there if it
// does not exist yet (and waiting until it is active).
func Open(ctx context.Context, o Options) (*Backend, error) {
	if o.Client == nil {
		return nil, errors.New("remote: Options.Client is required")
	}
	if o.MaxTenantTables == 0 {
		o.MaxTenantTables = 256
	}
	if o.IndexSlots == 0 {
		o.IndexSlots = 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Account == "" {
		o.Account = "000000000000"
	}
	b := &Backend{db: o.Client, table: o.TablePrefix + "tenantdb", opts: o, log: o.Logger, meter: newStorageMeter()}
	b.Missing = "this gateway has no export root (start every gateway with the same shared --export-root DIR or TENANTDB_EXPORT_ROOT)"
	b.bg, b.stop = context.WithCancel(context.Background())
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if err := b.ensureTable(ctx); err != nil {
		return nil, err
	}
	if err := b.initStreams(o); err != nil {
		b.stop()
		return nil, err
	}
	if err := b.registerGateway(ctx, o.Endpoint); err != nil { // fleet.go
		b.stop()
		return nil, err
	}
	var err error
	b.res, err = resolve.New(ctx, catalog{b}, resolve.Options{Region: o.Region, Account: o.Account, MaxTenantTables: o.MaxTenantTables,
		MaxStale: o.DefinitionsMaxStale})
	if err != nil {
		b.Close()
		return nil, err
	}
	go b.resumeChanges(b.bg) // shard changes a gateway left (migrate.go)
	b.ensureTTL(ctx)
	go b.resumeTTLJobs(b.bg)    // TTL syncs a gateway left (ttl.go)
	go b.meterLoop(b.bg)        // storage counters (storage.go)
	go b.sweepJobs(b.bg)        // jobs a gateway leaves while this one runs (jobsweep.go)
	go b.resumeBackupJobs(b.bg) // backup and restore copies a gateway left (backupjob.go)
	go b.sweepGone(b.bg)        // kept streams of deleted tables past their 24 hours (streamgone.go)
	return b, nil
}

// Close stops the migrators of shard changes (resumable); the engine
// holds everything else.
func (b *Backend) Close() error {
	if b.stop != nil {
		b.stop()
	}
	b.deregister(context.Background())          // fleet.go
	return b.flushStorage(context.Background()) // the last second's storage deltas
}

// Table returns the name of the engine table.
func (b *Backend) Table() string { return b.table }

func (b *Backend) ensureTable(ctx context.Context) error {
	_, err := b.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &b.table})
	var nf *types.ResourceNotFoundException
	if err == nil {
		return b.waitActive(ctx)
	}
	if !errors.As(err, &nf) {
		return engineErr(err, strip)
	}
	in := &dynamodb.CreateTableInput{
		TableName: &b.table,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeB},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	}
	for i := range b.opts.IndexSlots {
		slot := slotOf(i)
		in.AttributeDefinitions = append(in.AttributeDefinitions,
			types.AttributeDefinition{AttributeName: aws.String(slot.pk), AttributeType: types.ScalarAttributeTypeS},
			types.AttributeDefinition{AttributeName: aws.String(slot.sk), AttributeType: types.ScalarAttributeTypeB})
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, types.GlobalSecondaryIndex{
			IndexName: aws.String(slot.name),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(slot.pk), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(slot.sk), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		})
	}
	_, err = b.db.CreateTable(ctx, in)
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) { // another gateway created it first
		return engineErr(err, strip)
	}
	return b.waitActive(ctx)
}

func (b *Backend) waitActive(ctx context.Context) error {
	for {
		out, err := b.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &b.table})
		if err != nil {
			return engineErr(err, strip)
		}
		if out.Table.TableStatus == types.TableStatusActive {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// catalog loads definitions from the engine for the resolver.
type catalog struct{ b *Backend }

func (c catalog) LoadShared(ctx context.Context) ([]*schema.Table, error) {
	return c.b.loadDefs(ctx, defShared)
}

func (c catalog) LoadOwned(ctx context.Context, ns []byte) ([]*schema.Table, error) {
	return c.b.loadDefs(ctx, defPK(ns))
}

// loadDefs reads every definition in the collection pk (strongly
// consistent, all pages).
func (b *Backend) loadDefs(ctx context.Context, pk string) ([]*schema.Table, error) {
	var out []*schema.Table
	var start map[string]types.AttributeValue
	for {
		in := b.partitionQuery(pk)
		in.ExclusiveStartKey = start
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range res.Items {
			if _, gone := it[attrDropped]; gone {
				continue // a tombstone (DeleteTable)
			}
			d, ok := it["def"].(*types.AttributeValueMemberB)
			if !ok {
				return nil, apierr.New(apierr.Internal, "corrupt table definition in the engine")
			}
			t, err := schema.Decode(d.Value)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// nextTableID allocates a table id from the engine's counter (an atomic
// ADD), so that ids are unique across gateways and never reused.
func uitoa(n uint64) string { return strconv.FormatUint(n, 10) }

func (b *Backend) nextTableID(ctx context.Context) (uint64, error) {
	out, err := b.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &b.table,
		Key: map[string]types.AttributeValue{
			attrPK: &types.AttributeValueMemberS{Value: seqPK},
			attrSK: &types.AttributeValueMemberB{Value: []byte("table-id")},
		},
		UpdateExpression:          aws.String("ADD #n :one"),
		ExpressionAttributeNames:  map[string]string{"#n": "n"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, engineErr(err, strip)
	}
	n, ok := out.Attributes["n"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, apierr.New(apierr.Internal, "the engine answered no table id")
	}
	return strconv.ParseUint(n.Value, 10, 64)
}

var _ dynamo.Backend = (*Backend)(nil)
