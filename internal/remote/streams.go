package remote

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DynamoDB Streams of logical tables, read from the engine table's own
// stream (DESIGN.md, "Streams"): the engine table has one
// NEW_AND_OLD_IMAGES stream, enabled by the first gateway that enables a
// logical stream; a logical stream is a record under meta#stream#<table
// id> (its view type, when it was enabled and disabled, the engine
// stream it reads); GetRecords reads the engine's shards and keeps the
// records of the caller's own collection of the table, within the
// logical stream's lifetime, mapped back to logical items.

// streamRetention is how long a disabled stream stays listed and
// readable (DynamoDB keeps stream records 24 hours).
const streamRetention = 24 * time.Hour

// maxEngineRecords bounds the engine records one GetRecords reads (and
// filters) before it answers with what it found, possibly nothing, and an
// iterator after them: DynamoDB may return empty pages of an open shard.
const maxEngineRecords = 4000

// maxRecordBytes bounds the records' size in one GetRecords, as
// DynamoDB's 1 MB.
const maxRecordBytes = 1 << 20

// engineIteratorMax is the longest engine shard iterator a tenant's
// iterator carries (sealed, it must fit DynamoDB's 2,048 characters).
const engineIteratorMax = 1300

// streamState is the backend's part of Streams: the engine's Streams
// client, the sealer of tenants' shard iterators, and what it learnt of
// the engine table's stream.
type streamState struct {
	client *dynamodbstreams.Client
	tokens *changelog.Log // seals and opens iterators only (no store)

	mu   sync.Mutex
	arn  string            // the engine table's stream ARN, once enabled
	recs map[recKey]recHit // logical stream records read, briefly cached
}

type recKey struct{ table, id uint64 }

type recHit struct {
	rec  *streamRec
	read time.Time
}

// initStreams sets up b's Streams from o; without a Streams client or a
// secret every stream operation answers why.
func (b *Backend) initStreams(o Options) error {
	b.st.client = o.Streams
	b.st.recs = map[recKey]recHit{}
	if o.Streams == nil || len(o.StreamSecret) == 0 {
		return nil
	}
	l, err := changelog.New(nil, changelog.Options{Secret: o.StreamSecret, Now: o.Now})
	if err != nil {
		return err
	}
	b.st.tokens = l
	return nil
}

// errEngineStreams is the error of a stream asked of a gateway whose
// engine has no DynamoDB Streams (dynalite) or whose gateway was given
// no Streams client.
func errEngineStreams(why string) error {
	return apierr.Validationf("One or more parameter values were invalid: StreamEnabled is not supported: the remote backend's engine does not serve DynamoDB Streams (%s)", why)
}

// engineStream returns the ARN of the engine table's stream, enabling a
// NEW_AND_OLD_IMAGES stream on the engine table first if it has none (and
// waiting until it is ENABLED). Errors: ValidationException when the
// engine has no Streams or its table's stream has another view type.
func (b *Backend) engineStream(ctx context.Context) (string, error) {
	b.st.mu.Lock()
	arn := b.st.arn
	b.st.mu.Unlock()
	if arn != "" {
		return arn, nil
	}
	if b.st.client == nil || b.st.tokens == nil {
		return "", errEngineStreams("the gateway has no DynamoDB Streams client")
	}
	// NB: the Streams API is probed before the table is changed: an engine
	// without it (dynalite) keeps its table as it was.
	if _, err := b.st.client.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: &b.table, Limit: aws.Int32(1)}); err != nil {
		b.log.Warn("the engine does not serve DynamoDB Streams", "err", err)
		return "", errEngineStreams("its ListStreams failed")
	}
	for range 3 {
		d, err := b.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &b.table})
		if err != nil {
			return "", engineErr(err, strip)
		}
		if sp := d.Table.StreamSpecification; sp != nil && aws.ToBool(sp.StreamEnabled) {
			if sp.StreamViewType != types.StreamViewTypeNewAndOldImages {
				return "", errEngineStreams("the engine table's stream has view type " + string(sp.StreamViewType) + ", the gateway needs NEW_AND_OLD_IMAGES")
			}
			arn = aws.ToString(d.Table.LatestStreamArn)
			if err := b.waitStreamEnabled(ctx, arn); err != nil {
				return "", err
			}
			b.st.mu.Lock()
			b.st.arn = arn
			b.st.mu.Unlock()
			return arn, nil
		}
		_, err = b.db.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: &b.table,
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}})
		var ve *types.ResourceInUseException
		if err != nil && !errors.As(err, &ve) && !strings.Contains(err.Error(), "already has an enabled stream") {
			return "", engineErr(err, strip)
		}
		// Enabled now (by this gateway or another one): read its ARN.
		if err := b.waitActive(ctx); err != nil {
			return "", err
		}
	}
	return "", apierr.New(apierr.Internal, "the engine table's stream could not be enabled")
}

// waitStreamEnabled waits until the engine stream arn is ENABLED.
func (b *Backend) waitStreamEnabled(ctx context.Context, arn string) error {
	for {
		d, err := b.st.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: &arn, Limit: aws.Int32(1)})
		if err != nil {
			return engineErr(err, strip)
		}
		if d.StreamDescription.StreamStatus == stypes.StreamStatusEnabled {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// streamRec is a logical stream: stream id (its creation time in ms, as
// changelog.Stream's, so labels and ARNs have DynamoDB's shape) of table
// id, stored under meta#stream#<table id> / id.
type streamRec struct {
	table, id uint64
	view      string
	engine    string    // the engine stream it reads
	disabled  time.Time // zero while enabled
	// withTable says the stream was created with its table, so every
	// record of the table's collections belongs to it (no lower bound).
	withTable bool

	// Set once the table is deleted (streamgone.go): when, its name, the
	// namespace that owned it (nil for a shared table) and its definition.
	gone  time.Time
	name  string
	owner []byte
	def   []byte

	// Set once the stream is disabled (streamend.go): the engine shards
	// open then (openKnown false: not recorded), the logical ends of
	// engine shards found so far (nil: a stream disabled before ends were
	// recorded) and how far a search for an end has read.
	open      []string
	openKnown bool
	ends      map[string]string
	scan      map[string]string
}

func (r *streamRec) created() time.Time { return time.UnixMilli(int64(r.id)).UTC() }

// shown reports whether the Streams API shows r at now.
func (r *streamRec) shown(now time.Time) bool {
	return r.disabled.IsZero() || now.Sub(r.disabled) < streamRetention
}

// ofDef reports whether r is a stream of t's definition: not newer than
// its latest stream, or just created (a gateway's definition may be up to
// DefinitionsMaxStale old). NB: a record newer than the definition and
// older than that is left by an UpdateTable cut off before it changed the
// definition: never shown.
func (r *streamRec) ofDef(t *schema.Table, now time.Time) bool {
	return r.id <= t.LatestStream || now.Sub(r.created()) < orphanAfter
}

// orphanAfter is how long a stream's record may be newer than the
// definition a gateway has.
const orphanAfter = 5 * time.Second

func (r *streamRec) status() string {
	if r.disabled.IsZero() {
		return "ENABLED"
	}
	return "DISABLED"
}

func (r *streamRec) label() string { return changelog.Stream{Table: r.table, ID: r.id}.Label() }

func streamPK(table uint64) string { return "meta#stream#" + uitoa(table) }

func streamSK(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

func (b *Backend) putStreamRec(ctx context.Context, r *streamRec) error {
	item := map[string]types.AttributeValue{
		attrPK:   &types.AttributeValueMemberS{Value: streamPK(r.table)},
		attrSK:   &types.AttributeValueMemberB{Value: streamSK(r.id)},
		"view":   &types.AttributeValueMemberS{Value: r.view},
		"engine": &types.AttributeValueMemberS{Value: r.engine},
		"wt":     &types.AttributeValueMemberBOOL{Value: r.withTable},
	}
	_, err := b.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &b.table, Item: item,
		ConditionExpression: aws.String("attribute_not_exists(#p)"), ExpressionAttributeNames: map[string]string{"#p": attrPK}})
	if err != nil {
		return engineErr(err, strip)
	}
	return nil
}

// dropStreamRec deletes the record of a stream whose definition change
// failed (best effort: a record left would be listed as an enabled
// stream without changes).
func (b *Backend) dropStreamRec(ctx context.Context, table, id uint64) {
	_, err := b.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: streamPK(table)},
		attrSK: &types.AttributeValueMemberB{Value: streamSK(id)},
	}})
	if err != nil {
		b.log.Warn("dropping the record of a stream not enabled", "table", table, "err", err)
	}
}

// setStreamDisabled records when stream id of table was disabled (zero:
// enabled again, undoing a disable whose definition change failed).
func (b *Backend) setStreamDisabled(ctx context.Context, table, id uint64, at time.Time) error {
	in := &dynamodb.UpdateItemInput{TableName: &b.table, Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: streamPK(table)},
		attrSK: &types.AttributeValueMemberB{Value: streamSK(id)},
	}, ConditionExpression: aws.String("attribute_exists(#p)"), ExpressionAttributeNames: map[string]string{"#p": attrPK, "#d": "dis"}}
	if at.IsZero() {
		in.UpdateExpression = aws.String("REMOVE #d")
	} else {
		in.UpdateExpression = aws.String("SET #d = :d")
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":d": &types.AttributeValueMemberN{Value: itoa64(at.UnixMilli())}}
	}
	b.endAttrs(ctx, in, !at.IsZero()) // streamend.go
	if _, err := b.db.UpdateItem(ctx, in); err != nil {
		return engineErr(err, strip)
	}
	b.st.mu.Lock()
	delete(b.st.recs, recKey{table, id})
	b.st.mu.Unlock()
	return nil
}

func decodeStreamRec(table uint64, it map[string]types.AttributeValue) (*streamRec, bool) {
	sk, ok := it[attrSK].(*types.AttributeValueMemberB)
	if !ok || len(sk.Value) != 8 {
		return nil, false
	}
	r := &streamRec{table: table, id: binary.BigEndian.Uint64(sk.Value)}
	if v, ok := it["view"].(*types.AttributeValueMemberS); ok {
		r.view = v.Value
	}
	if v, ok := it["engine"].(*types.AttributeValueMemberS); ok {
		r.engine = v.Value
	}
	if v, ok := it["wt"].(*types.AttributeValueMemberBOOL); ok {
		r.withTable = v.Value
	}
	if v, ok := it["dis"].(*types.AttributeValueMemberN); ok {
		if ms, err := parseInt64(v.Value); err == nil {
			r.disabled = time.UnixMilli(ms).UTC()
		}
	}
	decodeStreamEnd(r, it)  // streamend.go
	decodeStreamGone(r, it) // streamgone.go
	return r, r.view != "" && r.engine != ""
}

// streamRecs returns table's logical streams, oldest first (strongly
// consistent).
func (b *Backend) streamRecs(ctx context.Context, table uint64) ([]*streamRec, error) {
	var out []*streamRec
	var start map[string]types.AttributeValue
	for {
		in := b.partitionQuery(streamPK(table))
		in.ExclusiveStartKey = start
		res, err := b.db.Query(ctx, in)
		if err != nil {
			return nil, engineErr(err, strip)
		}
		for _, it := range res.Items {
			if r, ok := decodeStreamRec(table, it); ok {
				out = append(out, r)
			}
		}
		if len(res.LastEvaluatedKey) == 0 {
			return out, nil
		}
		start = res.LastEvaluatedKey
	}
}

// streamRecOf returns stream id of table (nil if there is none), cached
// for at most a second: a disable is seen by every gateway within it.
func (b *Backend) streamRecOf(ctx context.Context, table, id uint64) (*streamRec, error) {
	k := recKey{table, id}
	now := time.Now()
	b.st.mu.Lock()
	h, ok := b.st.recs[k]
	b.st.mu.Unlock()
	if ok && now.Sub(h.read) < time.Second {
		return h.rec, nil
	}
	r, err := b.streamRecFresh(ctx, table, id)
	if err != nil {
		return nil, err
	}
	b.st.mu.Lock()
	if len(b.st.recs) > 10_000 {
		clear(b.st.recs)
	}
	b.st.recs[k] = recHit{r, now}
	b.st.mu.Unlock()
	return r, nil
}

// streamRecFresh reads stream id of table from the engine (strongly
// consistent); nil if there is none.
func (b *Backend) streamRecFresh(ctx context.Context, table, id uint64) (*streamRec, error) {
	out, err := b.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &b.table, ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{
		attrPK: &types.AttributeValueMemberS{Value: streamPK(table)},
		attrSK: &types.AttributeValueMemberB{Value: streamSK(id)},
	}})
	if err != nil {
		return nil, engineErr(err, strip)
	}
	if out.Item == nil {
		return nil, nil
	}
	r, ok := decodeStreamRec(table, out.Item)
	if !ok {
		return nil, apierr.New(apierr.Internal, "corrupt stream record in the engine")
	}
	return r, nil
}

// checkStreamSpec validates a StreamSpecification as DynamoDB does (the
// embedded engine's words).
func checkStreamSpec(spec *wire.StreamSpecification) error {
	if spec.StreamEnabled == nil {
		return apierr.Validationf("1 validation error detected: Value null at 'streamSpecification.streamEnabled' failed to satisfy constraint: Member must not be null")
	}
	switch spec.StreamViewType {
	case "":
		if *spec.StreamEnabled {
			return apierr.Validationf("One or more parameter values were invalid: StreamViewType is required when StreamEnabled is true")
		}
	case "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY":
		if !*spec.StreamEnabled {
			return apierr.Validationf("One or more parameter values were invalid: StreamViewType cannot be specified when StreamEnabled is false")
		}
	default:
		return apierr.Validationf("1 validation error detected: Value '%s' at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set: [NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]", apierr.Clip(spec.StreamViewType))
	}
	return nil
}

func specEnabled(spec *wire.StreamSpecification) bool {
	return spec != nil && spec.StreamEnabled != nil && *spec.StreamEnabled
}

// newStreamID returns the id of a new stream of t: now in ms, after every
// earlier stream's.
func (b *Backend) newStreamID(t *schema.Table) uint64 {
	return max(uint64(b.opts.Now().UnixMilli()), t.LatestStream+1)
}

// startStream makes a new logical stream of t (whose ID is set) as spec
// asks: enables the engine's stream if needed, records the stream, and
// sets it in t. withTable: t is being created.
func (b *Backend) startStream(ctx context.Context, t *schema.Table, spec *wire.StreamSpecification, withTable bool) error {
	arn, err := b.engineStream(ctx)
	if err != nil {
		return err
	}
	r := &streamRec{table: t.ID, id: b.newStreamID(t), view: spec.StreamViewType, engine: arn, withTable: withTable}
	if err := b.putStreamRec(ctx, r); err != nil {
		return err
	}
	cp := *spec
	t.Stream, t.LatestStream = &cp, r.id
	return nil
}

// describeStream sets d's stream fields from t, as the embedded engine:
// the latest stream's ARN and label (kept once disabled) and the
// specification while it is enabled.
func (b *Backend) describeStream(t *schema.Table, d *wire.TableDescription) {
	if specEnabled(t.Stream) && t.LatestStream != 0 {
		spec := *t.Stream
		d.StreamSpecification = &spec
	}
	if t.LatestStream != 0 {
		s := changelog.Stream{Table: t.ID, ID: t.LatestStream}
		d.LatestStreamLabel = s.Label()
		d.LatestStreamArn = changelog.FormatStreamARN(b.opts.Region, b.opts.Account, t.Name, s)
	}
}

func (b *Backend) streamARN(name string, r *streamRec) string {
	return changelog.FormatStreamARN(b.opts.Region, b.opts.Account, name, changelog.Stream{Table: r.table, ID: r.id})
}

// streamNotFound is the error for a stream ARN that does not resolve.
func streamNotFound(arn string) *apierr.Error {
	return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Stream: %s not found", apierr.Clip(arn))
}

// openStream resolves a stream ARN for scope s: the table it belongs to
// (resolved by name for the scope, as any data-plane request) and the
// logical stream.
func (b *Backend) openStream(ctx context.Context, s tenancy.Scope, arn string) (resolve.Target, *streamRec, error) {
	if arn == "" {
		return resolve.Target{}, nil, apierr.Validationf("1 validation error detected: Value null at 'streamArn' failed to satisfy constraint: Member must not be null")
	}
	if len(arn) < 37 || len(arn) > 1024 {
		return resolve.Target{}, nil, apierr.Validationf("1 validation error detected: Value '%s' at 'streamArn' failed to satisfy constraint: Member must have length between 37 and 1024", apierr.Clip(arn))
	}
	a, ok := changelog.ParseStreamARN(arn)
	if !ok {
		return resolve.Target{}, nil, apierr.Validationf("Invalid StreamArn: %s", apierr.Clip(arn))
	}
	if a.Region != b.opts.Region || a.Account != b.opts.Account {
		return resolve.Target{}, nil, streamNotFound(arn)
	}
	tg, err := b.res.Open(ctx, s, a.Table)
	if err != nil && !apierr.Is(err, apierr.ResourceNotFound) {
		return resolve.Target{}, nil, err
	}
	var live uint64 // the id of the live table of that name, if any
	if err == nil {
		live = tg.Table.ID
		// NB: read fresh (not from the GetRecords cache), so that a
		// disable through another gateway shows at once.
		r, err := b.streamRecFresh(ctx, tg.Table.ID, a.Stream)
		if err != nil {
			return resolve.Target{}, nil, err
		}
		if now := b.opts.Now(); r != nil && r.shown(now) && r.ofDef(tg.Table, now) {
			return tg, r, nil
		}
	}
	// The stream of a deleted table (or of an earlier table of that name),
	// kept until retention (streamgone.go).
	gone, err := b.goneStreams(ctx, s, a.Table)
	if err != nil {
		return resolve.Target{}, nil, err
	}
	for _, r := range gone {
		if r.id == a.Stream && r.table != live {
			gt, err := goneTarget(s, r)
			if err != nil {
				return resolve.Target{}, nil, err
			}
			return gt, r, nil
		}
	}
	// NB: the same answer, audited as a denial, whether or not the stream
	// exists for someone else (as the embedded engine's).
	nf := streamNotFound(arn)
	nf.Denial = true
	return resolve.Target{}, nil, nf
}

// pageLimit validates an optional Limit of at most max (default max).
func pageLimit(l *int64, max int64) (int, error) {
	if l == nil {
		return int(max), nil
	}
	if *l < 1 {
		return 0, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *l)
	}
	if *l > max {
		return 0, apierr.Validationf("1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value less than or equal to %d", *l, max)
	}
	return int(*l), nil
}

// ListStreams lists the streams of the tables scope s can see (or of the
// one named), by table name and age, paged by ExclusiveStartStreamArn.
// Disabled streams stay listed for 24 hours, those of deleted tables too
// (DESIGN.md, "Streams").
func (b *Backend) ListStreams(ctx context.Context, s tenancy.Scope, in *wire.ListStreamsInput) (*wire.ListStreamsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 100)
	if err != nil {
		return nil, err
	}
	names := []string{in.TableName}
	if in.TableName == "" {
		if names, err = b.res.Visible(ctx, s); err != nil {
			return nil, err
		}
	}
	type listed struct {
		name string
		r    *streamRec
	}
	var all []listed
	now := b.opts.Now()
	live := map[string]uint64{} // name -> id of the live table
	var openErr error
	for _, name := range names {
		tg, err := b.res.Open(ctx, s, name)
		if err != nil {
			if apierr.Is(err, apierr.ResourceNotFound) {
				openErr = err // deleted since it was listed, or the named table is gone
				continue
			}
			return nil, err
		}
		live[name] = tg.Table.ID
		if tg.Table.LatestStream == 0 {
			continue // never had a stream: no engine call
		}
		recs, err := b.streamRecs(ctx, tg.Table.ID)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.shown(now) && r.ofDef(tg.Table, now) {
				all = append(all, listed{name, r})
			}
		}
	}
	// The kept streams of deleted tables (and of earlier tables of a name).
	gone, err := b.goneStreams(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	for _, r := range gone {
		if live[r.name] != r.table {
			all = append(all, listed{r.name, r})
		}
	}
	if len(all) == 0 && in.TableName != "" && openErr != nil {
		return nil, openErr
	}
	slices.SortStableFunc(all, func(x, y listed) int {
		if c := strings.Compare(x.name, y.name); c != 0 {
			return c
		}
		switch {
		case x.r.id < y.r.id:
			return -1
		case x.r.id > y.r.id:
			return 1
		}
		return 0
	})
	sums := make([]wire.StreamSummary, len(all))
	for i, l := range all {
		sums[i] = wire.StreamSummary{StreamArn: b.streamARN(l.name, l.r), StreamLabel: l.r.label(), TableName: l.name}
	}
	return engine.PageStreams(sums, in.ExclusiveStartStreamArn, limit), nil
}

// DescribeStream describes a logical stream with the engine stream's
// shards (their ids and sequence numbers are the engine's: the same for
// every tenant and table). One engine DescribeStream.
func (b *Backend) DescribeStream(ctx context.Context, s tenancy.Scope, in *wire.DescribeStreamInput) (*wire.DescribeStreamOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 100)
	if err != nil {
		return nil, err
	}
	tg, r, err := b.openStream(ctx, s, in.StreamArn)
	if err != nil {
		return nil, err
	}
	d := wire.StreamDescription{
		StreamArn:               b.streamARN(tg.Table.Name, r),
		StreamLabel:             r.label(),
		StreamStatus:            r.status(),
		StreamViewType:          r.view,
		CreationRequestDateTime: float64(r.id) / 1e3,
		TableName:               tg.Table.Name,
		KeySchema:               keySchema(tg.Table.Hash, tg.Table.Range),
		Shards:                  []wire.Shard{},
	}
	if !r.disabled.IsZero() {
		// NB: its shards are closed at their ends (streamend.go), found by
		// reading them: the gateway pages them itself.
		all, err := b.disabledShards(ctx, r)
		if err != nil {
			return nil, err
		}
		page, last, err := pageShards(all, in.ExclusiveStartShardId, limit)
		if err != nil {
			return nil, err
		}
		d.Shards = append(d.Shards, page...)
		d.LastEvaluatedShardId = last
		return &wire.DescribeStreamOutput{StreamDescription: d}, nil
	}
	ein := &dynamodbstreams.DescribeStreamInput{StreamArn: &r.engine, Limit: aws.Int32(int32(limit))}
	if in.ExclusiveStartShardId != "" {
		ein.ExclusiveStartShardId = aws.String(in.ExclusiveStartShardId)
	}
	ed, err := b.st.client.DescribeStream(ctx, ein)
	if err != nil {
		return nil, streamEngineErr(err)
	}
	d.LastEvaluatedShardId = aws.ToString(ed.StreamDescription.LastEvaluatedShardId)
	for _, sh := range ed.StreamDescription.Shards {
		w := wire.Shard{ShardId: aws.ToString(sh.ShardId), ParentShardId: aws.ToString(sh.ParentShardId)}
		if sr := sh.SequenceNumberRange; sr != nil {
			w.SequenceNumberRange.StartingSequenceNumber = aws.ToString(sr.StartingSequenceNumber)
			w.SequenceNumberRange.EndingSequenceNumber = aws.ToString(sr.EndingSequenceNumber)
		}
		d.Shards = append(d.Shards, w)
	}
	return &wire.DescribeStreamOutput{StreamDescription: d}, nil
}

// streamEngineErr maps an error of the engine's Streams client: a shard
// or position the engine does not have is the client's (in DynamoDB's
// words, naming nothing physical); anything else as engineErr.
func streamEngineErr(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ResourceNotFoundException":
			if strings.Contains(ae.ErrorMessage(), "Shard") {
				return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Shard does not exist")
			}
			return apierr.New(apierr.ResourceNotFound, "Requested resource not found: Stream not found")
		case "TrimmedDataAccessException":
			return apierr.New(apierr.TrimmedDataAccess, "The operation attempted to read past the oldest stream record in a shard.")
		case "ExpiredIteratorException":
			return apierr.New(apierr.ExpiredIterator, "Iterator expired. The iterator was created more than 15 minutes ago.")
		}
	}
	return engineErr(err, strip)
}

// Positions a tenant's iterator stands for, in an engine shard.
const (
	posTrim   = 'T' // TRIM_HORIZON
	posAt     = 'A' // AT_SEQUENCE_NUMBER seq
	posAfter  = 'F' // AFTER_SEQUENCE_NUMBER seq
	posEngine = 'I' // the engine's own iterator (from LATEST, before any record)
)

// iterPos is what a tenant's shard iterator says besides its namespace,
// table and stream: the table's name, the engine shard and the position.
type iterPos struct {
	name, shard string
	kind        byte
	arg         string // the sequence number or engine iterator
}

// NB: carried in changelog.Iterator's Name (sealed with the rest): table
// names and shard ids hold no NUL.
func (p iterPos) pack() string { return p.name + "\x00" + p.shard + "\x00" + string(p.kind) + p.arg }

func unpackPos(s string) (iterPos, bool) {
	name, rest, ok := strings.Cut(s, "\x00")
	if !ok {
		return iterPos{}, false
	}
	shard, rest, ok := strings.Cut(rest, "\x00")
	if !ok || rest == "" {
		return iterPos{}, false
	}
	p := iterPos{name: name, shard: shard, kind: rest[0], arg: rest[1:]}
	switch p.kind {
	case posTrim, posAt, posAfter, posEngine:
		return p, true
	}
	return iterPos{}, false
}

func (b *Backend) sealIter(ns []byte, r *streamRec, p iterPos) string {
	return b.st.tokens.SealIterator(changelog.Iterator{NS: ns, Name: p.pack(), Table: r.table, Stream: r.id, Issued: b.opts.Now()})
}

// engineIterator returns an engine iterator at p of stream arn.
func (b *Backend) engineIterator(ctx context.Context, arn string, p iterPos) (*string, error) {
	if p.kind == posEngine {
		return aws.String(p.arg), nil
	}
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &arn, ShardId: &p.shard}
	switch p.kind {
	case posTrim:
		in.ShardIteratorType = stypes.ShardIteratorTypeTrimHorizon
	case posAt:
		in.ShardIteratorType, in.SequenceNumber = stypes.ShardIteratorTypeAtSequenceNumber, &p.arg
	case posAfter:
		in.ShardIteratorType, in.SequenceNumber = stypes.ShardIteratorTypeAfterSequenceNumber, &p.arg
	}
	out, err := b.st.client.GetShardIterator(ctx, in)
	if err != nil {
		return nil, streamEngineErr(err)
	}
	return out.ShardIterator, nil
}

// GetShardIterator returns an iterator at a position of a shard of the
// engine stream, sealed and bound to the scope's tenant, environment,
// table and stream; it expires after 15 minutes. One engine
// GetShardIterator (which validates the shard and sequence number).
func (b *Backend) GetShardIterator(ctx context.Context, s tenancy.Scope, in *wire.GetShardIteratorInput) (*wire.GetShardIteratorOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if in.ShardId == "" {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'shardId' failed to satisfy constraint: Member must not be null")
	}
	tg, r, err := b.openStream(ctx, s, in.StreamArn)
	if err != nil {
		return nil, err
	}
	p := iterPos{name: tg.Table.Name, shard: in.ShardId}
	switch in.ShardIteratorType {
	case "TRIM_HORIZON":
		p.kind = posTrim
	case "LATEST":
		p.kind = posEngine
	case "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER":
		if in.SequenceNumber == "" {
			return nil, apierr.Validationf("Must specify a sequence number for iterator type %s", in.ShardIteratorType)
		}
		p.kind, p.arg = posAt, in.SequenceNumber
		if in.ShardIteratorType == "AFTER_SEQUENCE_NUMBER" {
			p.kind = posAfter
		}
	default:
		return nil, apierr.Validationf("1 validation error detected: Value '%s' at 'shardIteratorType' failed to satisfy constraint: Member must satisfy enum value set: [AFTER_SEQUENCE_NUMBER, AT_SEQUENCE_NUMBER, LATEST, TRIM_HORIZON]", apierr.Clip(in.ShardIteratorType))
	}
	ein := &dynamodbstreams.GetShardIteratorInput{StreamArn: &r.engine, ShardId: &p.shard,
		ShardIteratorType: stypes.ShardIteratorType(in.ShardIteratorType)}
	if p.kind == posAt || p.kind == posAfter {
		ein.SequenceNumber = &p.arg
	}
	out, err := b.st.client.GetShardIterator(ctx, ein)
	if err != nil {
		return nil, streamEngineErr(err)
	}
	if p.kind == posEngine {
		// NB: LATEST is the engine's position now, which only its iterator
		// holds until a record has been read.
		if p.arg = aws.ToString(out.ShardIterator); len(p.arg) > engineIteratorMax {
			return nil, apierr.New(apierr.Internal, "the engine's shard iterator is too long to carry")
		}
	}
	return &wire.GetShardIteratorOutput{ShardIterator: b.sealIter(resolve.Namespace(s), r, p)}, nil
}

// iterError maps an error of opening a sealed iterator.
func iterError(err error) error {
	switch {
	case errors.Is(err, changelog.ErrExpiredIterator):
		return apierr.New(apierr.ExpiredIterator, "Iterator expired. The iterator was created more than 15 minutes ago.")
	case errors.Is(err, changelog.ErrForeignIterator):
		// NB: AccessDenied, so the server audits the cross-tenant attempt.
		return apierr.New(apierr.AccessDenied, "Not authorized to use this shard iterator")
	}
	return apierr.Validationf("Invalid ShardIterator")
}

// GetRecords reads the engine shard from the iterator's position and
// returns the records of the caller's collection of the table within the
// logical stream's lifetime, mapped to logical items and the stream's
// view type. It reads at most maxEngineRecords engine records (every
// tenant's changes of the engine table, filtered here) and stops at Limit
// records, answering the iterator after the last record it read (its
// engine sequence number). NextShardIterator is null once the shard was
// read to its end, or past the time the logical stream was disabled.
func (b *Backend) GetRecords(ctx context.Context, s tenancy.Scope, in *wire.GetRecordsInput) (*wire.GetRecordsOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	limit, err := pageLimit(in.Limit, 1000)
	if err != nil {
		return nil, err
	}
	if in.ShardIterator == "" {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'shardIterator' failed to satisfy constraint: Member must not be null")
	}
	if s.Tenant().IsZero() {
		return nil, apierr.New(apierr.AccessDenied, "The operator credential has no access to table data; use a tenant credential")
	}
	if b.st.tokens == nil {
		return nil, apierr.Validationf("Invalid ShardIterator")
	}
	it, err := b.st.tokens.OpenIterator(in.ShardIterator, resolve.Namespace(s))
	if err != nil {
		return nil, iterError(err)
	}
	p, ok := unpackPos(it.Name)
	if !ok {
		return nil, apierr.Validationf("Invalid ShardIterator")
	}
	gone := apierr.New(apierr.ResourceNotFound, "Requested resource not found: Stream of table %s not found", p.name)
	tg, err := b.res.Open(ctx, s, p.name)
	if err != nil && !apierr.Is(err, apierr.ResourceNotFound) {
		return nil, err // e.g. a narrowed credential's policy
	}
	r, rerr := b.streamRecOf(ctx, it.Table, it.Stream)
	if rerr != nil {
		return nil, rerr
	}
	if r == nil || !r.shown(b.opts.Now()) {
		return nil, gone
	}
	if err != nil || tg.Table.ID != it.Table {
		// The table was deleted (and maybe created again): its stream is
		// read while kept, by whom resolve allows (streamgone.go).
		if r.gone.IsZero() || r.name != p.name || !resolve.MayReadGone(s, r.owner, r.name) {
			return nil, gone
		}
		if tg, err = goneTarget(s, r); err != nil {
			return nil, err
		}
	}
	rd := recordReader{b: b, tg: tg, r: r, coll: collBase(tg.Namespace, tg.Table.ID), limit: limit}
	if err := rd.read(ctx, p); err != nil {
		return nil, err
	}
	out := &wire.GetRecordsOutput{Records: rd.out}
	if out.Records == nil {
		out.Records = []wire.Record{} // NB: an empty page has Records [], as DynamoDB's (not null)
	}
	// NB: one read unit per engine page read (1 to 4), not one per call as
	// embedded: a call's cost to the engine grows with every tenant's
	// changes, and the tenant's quota bounds what its reads cost the fleet.
	out.U = wire.Usage{ReadUnits: float64(max(rd.pages, 1)), Table: tg.Table.Name}
	if !rd.drained {
		next := p
		switch {
		case rd.lastSeq != "":
			next.kind, next.arg = posAfter, rd.lastSeq
		case rd.engineNext != "" && len(rd.engineNext) <= engineIteratorMax:
			next.kind, next.arg = posEngine, rd.engineNext
		}
		// else: nothing read and no engine iterator to carry; the same
		// position is read again next time.
		tok := b.sealIter(resolve.Namespace(s), r, next)
		out.NextShardIterator = &tok
	}
	return out, nil
}

// recordReader is one GetRecords' reading of an engine shard.
type recordReader struct {
	b     *Backend
	tg    resolve.Target
	r     *streamRec
	coll  string // the caller's collections' partition keys' beginning
	limit int

	out        []wire.Record
	bytes      int64  // the records' SizeBytes
	pages      int    // engine pages read
	lastSeq    string // the engine sequence number of the last record read
	engineNext string // the engine's iterator after the last page read whole
	drained    bool
}

func (rd *recordReader) read(ctx context.Context, p iterPos) error {
	// A disabled stream's shard whose end is known ends there
	// (streamend.go); until then at the disable's second.
	end, final := rd.r.endOf(p.shard)
	if final && pastEnd(p, end) {
		rd.drained = true
		return nil
	}
	iter, err := rd.b.engineIterator(ctx, rd.r.engine, p)
	if err != nil {
		return err
	}
	var lo, hi int64 = -1 << 62, 1 << 62 // the stream's lifetime, in whole seconds
	if !rd.r.withTable {
		lo = rd.r.created().Unix()
	}
	if !rd.r.disabled.IsZero() {
		hi = rd.r.disabled.Unix()
	}
	// ended records the end found by this read, where nothing after the
	// last engine record read can be of the stream.
	ended := func() {
		rd.drained = true
		if rd.r.disabled.IsZero() || final {
			return
		}
		if e, ok := endAtDrain(p, rd.lastSeq); ok {
			rd.b.setEnd(ctx, rd.r, p.shard, e)
		}
	}
	place := placeOf(rd.tg, layout{})
	seen := 0
	for seen < maxEngineRecords {
		res, err := rd.b.st.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		if err != nil {
			return streamEngineErr(err)
		}
		rd.pages++
		for i, er := range res.Records {
			seen++
			sr := er.Dynamodb
			if sr == nil {
				continue
			}
			seq := aws.ToString(sr.SequenceNumber)
			at := aws.ToTime(sr.ApproximateCreationDateTime).Unix()
			if at > hi || final && seqCmp(seq, end) > 0 {
				// NB: records of a shard come in the order of their writes:
				// everything from here on is after the stream was disabled.
				ended()
				return nil
			}
			if at >= lo {
				w, ok, err := rd.record(place, er)
				if err != nil {
					return err
				}
				if ok {
					if len(rd.out) > 0 && rd.bytes+w.Dynamodb.SizeBytes > maxRecordBytes {
						return nil // a full answer: this record comes next time
					}
					rd.out = append(rd.out, w)
					rd.bytes += w.Dynamodb.SizeBytes
				}
			}
			rd.lastSeq = seq
			if final && seqCmp(seq, end) == 0 {
				rd.drained = true // the shard's last record
				return nil
			}
			if len(rd.out) == rd.limit && i < len(res.Records)-1 {
				return nil // the rest of this page is read again next time
			}
		}
		if res.NextShardIterator == nil {
			ended() // a closed shard, read to its end
			return nil
		}
		rd.engineNext, iter = aws.ToString(res.NextShardIterator), res.NextShardIterator
		if len(res.Records) == 0 || len(rd.out) == rd.limit {
			// Read up to the shard's present end: a disabled stream's shard
			// ends here once no record of its lifetime can still arrive.
			if len(res.Records) == 0 && !rd.r.disabled.IsZero() && rd.b.opts.Now().Sub(rd.r.disabled) > drainAfter {
				ended()
			}
			return nil
		}
	}
	return nil
}

// drainAfter is how long after a logical stream was disabled a read that
// finds no more records in a shard ends it (NextShardIterator null): the
// engine's records reach its stream within seconds of the write.
const drainAfter = 10 * time.Second

// record maps engine record er to the logical stream's record; ok is false
// if it is not a change of the caller's collection of the table, or only
// of the gateway's own attributes (an index entry or TTL copy written by
// a backfill, a move's mark, a version renewed by a put of the item as it
// was), or of nothing at all (an engine that records a put of the same
// item, as Alternator may) — which DynamoDB would not record — or a copy
// made or left by a move between shards (streammove.go).
func (rd *recordReader) record(place place, er stypes.Record) (wire.Record, bool, error) {
	sr := er.Dynamodb
	pk, ok := sr.Keys[attrPK].(*stypes.AttributeValueMemberS)
	if !ok || !strings.HasPrefix(pk.Value, rd.coll) || strings.ContainsRune(pk.Value[len(rd.coll):], '#') {
		return wire.Record{}, false, nil
	}
	keys, err := place.logicalKey(fromStreamItem(sr.Keys))
	if err != nil {
		return wire.Record{}, false, err
	}
	newPhys, oldPhys := fromStreamItem(sr.NewImage), fromStreamItem(sr.OldImage)
	newImg, oldImg := strip(fromStreamItem(sr.NewImage)), strip(fromStreamItem(sr.OldImage))
	if er.EventName == stypes.OperationTypeModify && newImg != nil && oldImg != nil && equalItems(newImg, oldImg) {
		return wire.Record{}, false, nil
	}
	if moveRecord(string(er.EventName), newPhys, oldPhys, er.UserIdentity != nil) {
		return wire.Record{}, false, nil // a copy made or left by a move (streammove.go)
	}
	w := wire.Record{
		AwsRegion:    rd.b.opts.Region,
		EventID:      aws.ToString(er.EventID),
		EventName:    string(er.EventName),
		EventSource:  "aws:dynamodb",
		EventVersion: aws.ToString(er.EventVersion),
		Dynamodb: wire.StreamRecord{
			ApproximateCreationDateTime: float64(aws.ToTime(sr.ApproximateCreationDateTime).Unix()),
			Keys:                        keys,
			SequenceNumber:              aws.ToString(sr.SequenceNumber),
			StreamViewType:              rd.r.view,
		},
	}
	if w.EventVersion == "" {
		w.EventVersion = "1.1"
	}
	switch rd.r.view {
	case "NEW_IMAGE":
		w.Dynamodb.NewImage = newImg
	case "OLD_IMAGE":
		w.Dynamodb.OldImage = oldImg
	case "NEW_AND_OLD_IMAGES":
		w.Dynamodb.NewImage, w.Dynamodb.OldImage = newImg, oldImg
	}
	w.Dynamodb.SizeBytes = int64(itemSize(keys) + itemSize(w.Dynamodb.NewImage) + itemSize(w.Dynamodb.OldImage))
	if er.UserIdentity != nil {
		w.UserIdentity = &wire.Identity{PrincipalId: aws.ToString(er.UserIdentity.PrincipalId), Type: aws.ToString(er.UserIdentity.Type)}
	}
	return w, true, nil
}
