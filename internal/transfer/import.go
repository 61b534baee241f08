package transfer

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynamo"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// MaxBatchItems bounds the items of one admin import batch.
const MaxBatchItems = 1000

// maxWrite is BatchWriteItem's limit.
const maxWrite = 25

var (
	opBatchWrite = mustOp("BatchWriteItem")
	opCreate     = mustOp("CreateTable")
	opDescribe   = mustOp("DescribeTable")
	opTTL        = mustOp("UpdateTimeToLive")
)

func mustOp(name string) *dynamo.Op {
	op, ok := dynamo.Lookup(name)
	if !ok {
		panic("transfer: no operation " + name)
	}
	return op
}

// ImportBatch is the admin API's import: it writes one batch of items
// into req.Table of the scope's tenant through BatchWriteItem (creating
// the table from req.Definition first if the tenant sees none of that
// name). With DryRun it parses and checks the items and writes nothing.
// The first (Begin) and last (Done) batches are audited.
func (s *Service) ImportBatch(ctx context.Context, sc tenancy.Scope, req client.ImportRequest) (client.ImportResult, error) {
	res := client.ImportResult{Table: req.Table}
	if err := dataScope(sc); err != nil {
		return res, err
	}
	if req.Table == "" {
		return res, apierr.Validationf("table is required")
	}
	if len(req.Items) > MaxBatchItems {
		return res, apierr.Validationf("a batch holds at most %d items, this one %d", MaxBatchItems, len(req.Items))
	}
	def, err := parseDefinition(req.Definition)
	if err != nil {
		return res, apierr.Validationf("malformed definition: %s", apierr.Clip(err.Error()))
	}
	if req.Begin {
		if res.CreatedTable, err = s.ensureTable(ctx, sc, req.Table, def, req.DryRun); err != nil {
			return res, err
		}
		s.record(ctx, sc, audit.Event{Action: "import.begin", Target: apierr.Clip(fmt.Sprintf("table=%s source=%s position=%s dry_run=%t lift_quotas=%t created_table=%t",
			req.Table, req.Source, req.Position, req.DryRun, req.LiftQuotas, res.CreatedTable))})
	}
	items := make([]attr.Item, 0, len(req.Items))
	for i, raw := range req.Items {
		it, err := attr.ParseItemJSON(raw)
		if err != nil {
			return res, apierr.Validationf("item %d of the batch: %s", i, apierr.Clip(apierr.Message(err)))
		}
		items = append(items, it)
		res.Bytes += int64(attr.ItemSize(it))
	}
	if req.DryRun {
		if err := s.checkKeys(ctx, sc, req.Table, def, items); err != nil {
			return res, err
		}
	} else {
		h := s.o.Handler
		if req.LiftQuotas {
			h = s.o.Unlimited
		}
		if err := s.write(ctx, h, sc, req.Table, items); err != nil {
			return res, err
		}
		res.Written = int64(len(items))
	}
	if req.Done {
		s.record(ctx, sc, audit.Event{Action: "import.done", Target: apierr.Clip(fmt.Sprintf("table=%s source=%s dry_run=%t", req.Table, req.Source, req.DryRun))})
	}
	return res, nil
}

// ensureTable creates table name from def if scope sc sees no table of
// that name, and reports whether it did (a dry run only checks).
func (s *Service) ensureTable(ctx context.Context, sc tenancy.Scope, name string, def *dynexport.Definition, dryRun bool) (bool, error) {
	_, err := s.o.Handler.Handle(ctx, sc, opDescribe, &wire.DescribeTableInput{TableName: name})
	if err == nil || !apierr.Is(err, apierr.ResourceNotFound) {
		return false, err
	}
	if def == nil {
		return false, apierr.New(apierr.ResourceNotFound, "the tenant has no table %s and the export has no definition (tenantdb-table.json) to create it from; create it first", apierr.Clip(name))
	}
	if dryRun {
		return true, nil
	}
	if _, err := s.o.Handler.Handle(ctx, sc, opCreate, createInput(def, name)); err != nil {
		return false, err
	}
	if err := s.waitActive(ctx, sc, name); err != nil {
		return true, err
	}
	if t := def.TimeToLive; t != nil && t.Enabled {
		if _, err := s.o.Handler.Handle(ctx, sc, opTTL, &wire.UpdateTimeToLiveInput{TableName: name,
			TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: t.AttributeName}}); err != nil {
			return true, err
		}
	}
	return true, nil
}

func (s *Service) waitActive(ctx context.Context, sc tenancy.Scope, name string) error {
	for {
		out, err := s.o.Handler.Handle(ctx, sc, opDescribe, &wire.DescribeTableInput{TableName: name})
		if err != nil {
			return err
		}
		if out.(*wire.DescribeTableOutput).Table.TableStatus == "ACTIVE" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// checkKeys checks that every item carries the table's key attributes
// with their types (the dry run's check; the write path checks all).
func (s *Service) checkKeys(ctx context.Context, sc tenancy.Scope, name string, def *dynexport.Definition, items []attr.Item) error {
	var ks []dynexport.KeySchemaElement
	var ads []dynexport.AttributeDefinition
	if d, _, err := s.describe(ctx, sc, name); err == nil {
		ks, ads = d.KeySchema, d.AttributeDefinitions
	} else if apierr.Is(err, apierr.ResourceNotFound) && def != nil {
		ks, ads = def.KeySchema, def.AttributeDefinitions
	} else {
		return err
	}
	types := map[string]string{}
	for _, a := range ads {
		types[a.AttributeName] = a.AttributeType
	}
	for i, it := range items {
		for _, k := range ks {
			v, ok := it[k.AttributeName]
			if !ok || v.Type.String() != types[k.AttributeName] {
				return apierr.Validationf("item %d of the batch: key attribute %s missing or not of type %s", i, apierr.Clip(k.AttributeName), types[k.AttributeName])
			}
		}
	}
	return nil
}

// writers is how many BatchWriteItem requests of one import run at once:
// each waits for its WAL sync, and concurrent ones share one (group
// commit).
const writers = 8

// write puts items into table through h with scope sc, in BatchWriteItem
// requests of at most 25 distinct keys (up to writers at once), retrying
// unprocessed items and throttled requests with a growing pause until
// ctx ends.
// NB: requests run concurrently only when no key repeats among items;
// otherwise in order, so that the last of a key's items wins, as it would
// item by item.
func (s *Service) write(ctx context.Context, h dynamo.Handler, sc tenancy.Scope, table string, items []attr.Item) error {
	keys, err := s.keyNames(ctx, sc, table)
	if err != nil {
		return err
	}
	var batches [][]wire.WriteRequest
	batch := make([]wire.WriteRequest, 0, maxWrite)
	inBatch := map[string]bool{}
	all := make(map[string]bool, len(items))
	repeats := false
	var kb []byte
	for _, it := range items {
		kb = kb[:0]
		for _, k := range keys {
			kb = attr.AppendJSON(kb, it[k])
		}
		if all[string(kb)] {
			repeats = true
		}
		all[string(kb)] = true
		if len(batch) == maxWrite || inBatch[string(kb)] {
			batches = append(batches, batch)
			batch = make([]wire.WriteRequest, 0, maxWrite)
			clear(inBatch)
		}
		inBatch[string(kb)] = true
		batch = append(batch, wire.WriteRequest{PutRequest: &wire.PutRequest{Item: it}})
	}
	if len(batch) > 0 {
		batches = append(batches, batch)
	}
	g, gctx := errgroup.WithContext(ctx)
	if repeats {
		g.SetLimit(1)
	} else {
		g.SetLimit(writers)
	}
	for _, b := range batches {
		g.Go(func() error { return s.put(gctx, h, sc, table, b) })
	}
	return g.Wait()
}

// keyNames returns the key attribute names of table as sc sees it.
func (s *Service) keyNames(ctx context.Context, sc tenancy.Scope, table string) ([]string, error) {
	return s.o.Source.TableKeys(ctx, sc, table)
}

func (s *Service) put(ctx context.Context, h dynamo.Handler, sc tenancy.Scope, table string, batch []wire.WriteRequest) error {
	pending := append([]wire.WriteRequest(nil), batch...)
	pause := 10 * time.Millisecond
	for len(pending) > 0 {
		out, err := h.Handle(ctx, sc, opBatchWrite, &wire.BatchWriteItemInput{RequestItems: map[string][]wire.WriteRequest{table: pending}})
		switch {
		case err == nil:
			pending = out.(*wire.BatchWriteItemOutput).UnprocessedItems[table]
			if len(pending) == 0 {
				return nil
			}
		case apierr.Is(err, apierr.Throttling), apierr.Is(err, apierr.ProvisionedThroughputExceeded), apierr.Is(err, apierr.RequestLimitExceeded):
		default:
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
	return nil
}
