package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// UpdateTable changes a table: billing mode and throughput (accepted and
// reported), stream specification, deletion protection, table class, and
// GSIs: a created GSI is CREATING while it is backfilled in the background
// from the items of every namespace, then ACTIVE; a deleted GSI disappears
// at once and its entries are removed. Only the table's owner may update
// it. Errors: ValidationException, ResourceNotFoundException,
// LimitExceededException (more than one index created or deleted at once),
// AccessDeniedException.
func (e *Engine) UpdateTable(ctx context.Context, s tenancy.Scope, in *wire.UpdateTableInput) (*wire.UpdateTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	if err := CheckTableUpdate(in); err != nil {
		return nil, err
	}

	e.ddl.Lock()
	defer e.ddl.Unlock()
	tg, err := e.res.Lookup(ctx, s, in.TableName)
	if err != nil {
		return nil, err
	}
	t := tg.Table
	if err := e.res.CheckManage(s, t); err != nil {
		return nil, err
	}
	plan, err := PlanTableUpdate(t, in, e.opts.Now())
	if err != nil {
		return nil, err
	}
	c, created, dropped := plan.Table, plan.Created, plan.Dropped

	// Other settings.
	var endedStream uint64 // a stream to disable once writers see c
	if in.StreamSpecification != nil {
		if err := e.checkStreamSpec(in.StreamSpecification); err != nil {
			return nil, err
		}
		// Without Options.Streams only StreamEnabled=false gets here. A
		// stream stored by an earlier version (which accepted them and
		// delivered nothing) is removed by it.
		enabled := specEnabled(c.Stream)
		switch want := *in.StreamSpecification.StreamEnabled; {
		case want && enabled:
			return nil, apierr.Validationf("Table already has an enabled stream: %s", e.tableARN(c.Name))
		case !want && !enabled:
			return nil, apierr.Validationf("Table already has no enabled stream")
		case want:
			spec := *in.StreamSpecification
			c.Stream = &spec
		default:
			c.Stream = nil
			if e.opts.Streams {
				endedStream = c.LatestStream
			}
		}
	}
	if err := e.checkSSE(in.SSESpecification); err != nil {
		return nil, err
	}
	if err := ApplyTableSettings(c, in); err != nil {
		return nil, err
	}

	if e.opts.Streams && in.StreamSpecification != nil && specEnabled(c.Stream) {
		// NB: the descriptor is written before the definition naming it;
		// if saving fails, only an unused descriptor is left.
		if err := e.newStream(c, c.Stream); err != nil {
			return nil, err
		}
	}
	// With log consumers, the log goes on in a hidden stream while the
	// DynamoDB stream is disabled, and in the DynamoDB stream while it is
	// enabled (see RetainLog).
	var endedHidden uint64 // the hidden stream to disable once writers see c
	if in.StreamSpecification != nil && len(c.LogConsumers) > 0 {
		switch {
		case streamEnabled(c) && c.HiddenStream != 0:
			endedHidden, c.HiddenStream = c.HiddenStream, 0
		case !streamEnabled(c) && c.HiddenStream == 0:
			if err := e.newHiddenStream(c); err != nil {
				return nil, err
			}
		}
	}

	// Persist the definition with drop records for deleted indexes.
	b := e.db.NewBatch()
	defer b.Close()
	if err := saveTable(b, c); err != nil {
		return nil, err
	}
	var drops []dropRecord
	for _, ix := range dropped {
		rec := dropRecord{Table: c.ID, Index: ix.No, Isolate: c.Isolation}
		v, err := json.Marshal(rec)
		if err != nil {
			return nil, apierr.Wrap(apierr.Internal, err, "encoding drop record")
		}
		b.Set(dropKey(c.ID, ix.No), v)
		drops = append(drops, rec)
	}
	if err := e.db.Apply(b); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "saving table definition")
	}
	e.res.Publish(c)
	if len(created)+len(dropped) > 0 || in.StreamSpecification != nil && (e.opts.Streams || len(c.LogConsumers) > 0) {
		// NB: every write committed from now on maintains the new index
		// set; the backfill and the drop cover everything before.
		e.locks.barrier()
	}
	if endedStream != 0 {
		e.endStream(c.ID, endedStream)
	}
	if endedHidden != 0 {
		e.endStream(c.ID, endedHidden)
	}
	for _, rec := range drops {
		if err := e.drop(rec); err != nil {
			e.log.Error("engine: dropping index data", "table", c.Name, "err", err)
		}
	}
	for _, ix := range created {
		e.startBackfill(c.ID, ix.No)
	}
	tg.Table = c
	st, err := e.statsFor(ctx, tg)
	if err != nil {
		return nil, err
	}
	d := e.describe(c, st)
	if len(created)+len(dropped) > 0 {
		d.TableStatus = "UPDATING"
	}
	return &wire.UpdateTableOutput{TableDescription: d}, nil
}

// usedDefs returns the attribute definitions of t's key attributes, in
// name order, with types from defs.
func usedDefs(t *schema.Table, defs map[string]attr.Type) []wire.AttributeDefinition {
	used := map[string]bool{}
	for _, k := range []schema.KeyAttr{t.Hash, t.Range} {
		used[k.Name] = true
	}
	for _, ix := range t.Indexes {
		used[ix.Hash.Name] = true
		used[ix.Range.Name] = true
	}
	delete(used, "")
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]wire.AttributeDefinition, 0, len(names))
	for _, n := range names {
		out = append(out, wire.AttributeDefinition{AttributeName: n, AttributeType: defs[n].String()})
	}
	return out
}

// CheckTableUpdate validates what an UpdateTable request says on its own
// (before its table is looked up): that it changes something, its billing
// mode and its attribute definitions.
func CheckTableUpdate(in *wire.UpdateTableInput) error {
	if in.ProvisionedThroughput == nil && in.BillingMode == "" && len(in.GlobalSecondaryIndexUpdates) == 0 &&
		in.StreamSpecification == nil && in.SSESpecification == nil && in.ReplicaUpdates == nil &&
		in.DeletionProtectionEnabled == nil && in.TableClass == "" && in.OnDemandThroughput == nil && in.WarmThroughput == nil {
		return apierr.Validationf("At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or SSESpecification or ReplicaUpdates is required")
	}
	_, err := checkBillingMode(in.BillingMode)
	if err != nil {
		return err
	}
	if in.AttributeDefinitions != nil {
		if _, err := checkAttrDefs(in.AttributeDefinitions); err != nil {
			return err
		}
	}
	return nil
}

// TableUpdate is a definition changed by an UpdateTable request's
// billing, throughput, attribute definitions and index updates, with the
// indexes it creates (CREATING, Backfilling) and deletes.
type TableUpdate struct {
	Table            *schema.Table
	Created, Dropped []*schema.Index
}

// PlanTableUpdate applies those parts of in (checked by CheckTableUpdate)
// to a copy of t at time now, as UpdateTable does: the embedded engine
// and the remote backend share it. Errors: ValidationException,
// ResourceNotFoundException (an unknown index), LimitExceededException.
func PlanTableUpdate(t *schema.Table, in *wire.UpdateTableInput, now time.Time) (*TableUpdate, error) {
	billing, err := checkBillingMode(in.BillingMode)
	if err != nil {
		return nil, err
	}
	newDefs := map[string]attr.Type{}
	if in.AttributeDefinitions != nil {
		if newDefs, err = checkAttrDefs(in.AttributeDefinitions); err != nil {
			return nil, err
		}
	}
	c := t.Clone()

	// Billing and throughput.
	if billing != "" && billing != c.BillingMode {
		c.BillingMode = billing
		if billing == "PAY_PER_REQUEST" {
			c.OnDemandSince = now
			c.ReadCapacity, c.WriteCapacity = 0, 0
			for _, ix := range c.Indexes {
				ix.ReadCapacity, ix.WriteCapacity = 0, 0
			}
		} else if in.ProvisionedThroughput == nil {
			return nil, apierr.Validationf("One or more parameter values were invalid: ProvisionedThroughput must be specified when BillingMode is PROVISIONED")
		}
	}
	if in.ProvisionedThroughput != nil {
		if c.BillingMode == "PAY_PER_REQUEST" {
			return nil, apierr.Validationf("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
		if c.ReadCapacity, c.WriteCapacity, err = checkUnits(in.ProvisionedThroughput, "provisionedThroughput"); err != nil {
			return nil, err
		}
	}

	// Attribute definitions: the table's, plus the request's new ones.
	defs := map[string]attr.Type{}
	for _, d := range c.AttrDefs {
		ty, _ := attr.ParseType(d.AttributeType)
		defs[d.AttributeName] = ty
	}
	for n, ty := range newDefs {
		if old, ok := defs[n]; ok && old != ty {
			return nil, apierr.Validationf("One or more parameter values were invalid: Attribute %s is already defined with type %s", n, old)
		}
		defs[n] = ty
	}

	// Index changes.
	var created []*schema.Index
	var dropped []*schema.Index
	seen := map[string]bool{}
	for i, u := range in.GlobalSecondaryIndexUpdates {
		field := fmt.Sprintf("globalSecondaryIndexUpdates.%d.member", i+1)
		n := 0
		name := ""
		if u.Create != nil {
			n++
			name = u.Create.IndexName
		}
		if u.Update != nil {
			n++
			name = u.Update.IndexName
		}
		if u.Delete != nil {
			n++
			name = u.Delete.IndexName
		}
		if n != 1 {
			return nil, apierr.Validationf("One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Update, GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Delete must not be null")
		}
		if seen[name] {
			return nil, apierr.Validationf("One or more parameter values were invalid: Only one global secondary index update per index is allowed simultaneously. Index: %s", name)
		}
		seen[name] = true
		switch {
		case u.Create != nil:
			g := u.Create
			ix, err := checkIndex(g.IndexName, g.KeySchema, g.Projection, defs, field+".create")
			if err != nil {
				return nil, err
			}
			if ix.ReadCapacity, ix.WriteCapacity, err = checkIndexThroughput(c.BillingMode, g.ProvisionedThroughput, g.IndexName, field+".create"); err != nil {
				return nil, err
			}
			if c.Index(ix.Name) != nil {
				return nil, apierr.Validationf("One or more parameter values were invalid: Table already has an index with name %s", ix.Name)
			}
			ix.No = c.NextIndexNo
			c.NextIndexNo++
			ix.Status = "CREATING"
			ix.Backfilling = true
			ix.Created = now
			c.Indexes = append(c.Indexes, ix)
			created = append(created, ix)
		case u.Update != nil:
			if err := schema.ValidateIndexName(u.Update.IndexName, field+".update.indexName"); err != nil {
				return nil, err
			}
			ix := c.Index(u.Update.IndexName)
			if ix == nil || ix.Local {
				return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Index: %s not found", u.Update.IndexName)
			}
			if u.Update.ProvisionedThroughput != nil {
				if c.BillingMode == "PAY_PER_REQUEST" {
					return nil, apierr.Validationf("One or more parameter values were invalid: ProvisionedThroughput should not be specified for index: %s when BillingMode is PAY_PER_REQUEST", ix.Name)
				}
				if ix.ReadCapacity, ix.WriteCapacity, err = checkUnits(u.Update.ProvisionedThroughput, field+".update.provisionedThroughput"); err != nil {
					return nil, err
				}
			}
		case u.Delete != nil:
			if err := schema.ValidateIndexName(u.Delete.IndexName, field+".delete.indexName"); err != nil {
				return nil, err
			}
			ix := c.Index(u.Delete.IndexName)
			if ix == nil || ix.Local {
				return nil, apierr.New(apierr.ResourceNotFound, "Requested resource not found: Index: %s not found", u.Delete.IndexName)
			}
			dropped = append(dropped, ix)
			kept := c.Indexes[:0:0]
			for _, x := range c.Indexes {
				if x != ix {
					kept = append(kept, x)
				}
			}
			c.Indexes = kept
		}
	}
	if len(created)+len(dropped) > 1 {
		return nil, apierr.New(apierr.LimitExceeded, "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table")
	}
	gsis := 0
	projected := 0
	for _, ix := range c.Indexes {
		if !ix.Local {
			gsis++
		}
		projected += len(ix.NonKey)
	}
	if gsis > maxGSIs {
		return nil, apierr.New(apierr.LimitExceeded, "Subscriber limit exceeded: GlobalSecondaryIndex count exceeds the per-table limit of %d", maxGSIs)
	}
	if projected > maxProjectedAttrs {
		return nil, apierr.Validationf("One or more parameter values were invalid: The number of attributes projected into all secondary indexes exceeds the per-table limit of %d", maxProjectedAttrs)
	}
	if err := resolve.CheckLeadingKeyTypes(c); err != nil {
		return nil, err
	}
	// Keep exactly the definitions of key attributes still in use; the
	// request's own definitions must all be used.
	if len(newDefs) > 0 {
		if err := checkDefsUsed(c, in.AttributeDefinitions); err != nil {
			return nil, err
		}
	}
	c.AttrDefs = usedDefs(c, defs)
	return &TableUpdate{Table: c, Created: created, Dropped: dropped}, nil
}

// ApplyTableSettings applies an UpdateTable request's deletion protection
// and table class to c. Errors: ValidationException.
func ApplyTableSettings(c *schema.Table, in *wire.UpdateTableInput) error {
	if in.DeletionProtectionEnabled != nil {
		c.DeletionProtection = *in.DeletionProtectionEnabled
	}
	if in.TableClass != "" {
		if in.TableClass != "STANDARD" && in.TableClass != "STANDARD_INFREQUENT_ACCESS" {
			return enumErr(in.TableClass, "tableClass", "STANDARD, STANDARD_INFREQUENT_ACCESS")
		}
		c.TableClass = in.TableClass
	}
	return nil
}

// CheckSSE validates an SSESpecification for a backend other than the
// embedded engine (which does not encrypt its tables itself).
func CheckSSE(raw json.RawMessage) error {
	var e *Engine // checkSSE uses no engine state; nil says "another backend"
	return e.checkSSE(raw)
}
