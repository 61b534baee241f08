package cfn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/wire"
)

// Caller sends one operation of DynamoDB's JSON 1.0 API (X-Amz-Target
// DynamoDB_20120810.<op>) with in as the request and decodes the response
// into out. An error the server answered should implement
// ErrorCode() string returning DynamoDB's error type
// ("ResourceNotFoundException"), as smithy-go's APIError does.
type Caller interface {
	Call(ctx context.Context, op string, in, out any) error
}

// Statuses of a Result.
const (
	Created   = "created"   // the table did not exist and was created
	Updated   = "updated"   // it existed; TTL or tags were brought in line
	Unchanged = "unchanged" // it existed exactly as the template says
	Conflict  = "conflict"  // it exists with a definition apply cannot change
	Failed    = "failed"    // an API call failed
)

// Result says what Apply did with one table.
type Result struct {
	LogicalID string `json:"logical_id"`
	TableName string `json:"table_name"`
	Status    string `json:"status"`
	// Actions are the API calls that changed something, in order.
	Actions  []string `json:"actions,omitempty"`
	TableARN string   `json:"table_arn,omitempty"`
	// Differences say why a table conflicts, or what an update changed.
	Differences []string `json:"differences,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// ApplyOptions tune Apply.
type ApplyOptions struct {
	// Wait bounds the wait for a new table to become ACTIVE; 0 means two
	// minutes.
	Wait time.Duration
}

// Apply makes table t exist as the template defines it, through c:
// DescribeTable; if the table is missing, CreateTable, wait for ACTIVE,
// then UpdateTimeToLive if the template enables TTL. An existing table
// with the same definition is left unchanged; if only its TTL or its
// (non-reserved) tags differ they are updated; any other difference
// (keys, indexes, billing, streams, isolation tags, ...) is a Conflict,
// which Apply reports and does not try to resolve.
//
// The error is non-nil exactly when the Result's status is Conflict or
// Failed.
func Apply(ctx context.Context, c Caller, t Table, opts ApplyOptions) (Result, error) {
	r := Result{LogicalID: t.LogicalID, TableName: t.CreateTable.TableName}
	fail := func(err error) (Result, error) {
		r.Status, r.Error = Failed, err.Error()
		return r, fmt.Errorf("table %s: %w", r.TableName, err)
	}
	d, err := describeTable(ctx, c, r.TableName)
	if err != nil && ErrorCode(err) != "ResourceNotFoundException" {
		return fail(err)
	}
	if d == nil {
		var out wire.CreateTableOutput
		err := c.Call(ctx, "CreateTable", &t.CreateTable, &out)
		switch {
		case err == nil:
			r.Actions = append(r.Actions, "CreateTable")
			if d, err = waitActive(ctx, c, r.TableName, opts.Wait); err != nil {
				return fail(err)
			}
		case ErrorCode(err) == "ResourceInUseException":
			// Created meanwhile by someone else: compare below.
			if d, err = describeTable(ctx, c, r.TableName); err != nil {
				return fail(err)
			}
		default:
			return fail(err)
		}
	}
	r.TableARN = d.TableArn

	if diffs := Differences(t, d); len(diffs) > 0 {
		r.Status, r.Differences = Conflict, diffs
		return r, fmt.Errorf("table %s exists with a different definition: %s", r.TableName, strings.Join(diffs, "; "))
	}
	var tagsOut wire.ListTagsOfResourceOutput
	if err := c.Call(ctx, "ListTagsOfResource", &wire.ListTagsOfResourceInput{ResourceArn: d.TableArn}, &tagsOut); err != nil {
		return fail(err)
	}
	add, remove, fixed := tagChanges(t.CreateTable.Tags, tagsOut.Tags)
	if len(fixed) > 0 {
		r.Status, r.Differences = Conflict, fixed
		return r, fmt.Errorf("table %s exists with a different definition: %s", r.TableName, strings.Join(fixed, "; "))
	}
	created := len(r.Actions) > 0
	if !created {
		if len(add) > 0 {
			if err := c.Call(ctx, "TagResource", &wire.TagResourceInput{ResourceArn: d.TableArn, Tags: add}, &struct{}{}); err != nil {
				return fail(err)
			}
			r.Actions = append(r.Actions, "TagResource")
			for _, tg := range add {
				r.Differences = append(r.Differences, fmt.Sprintf("tag %s set to %q", tg.Key, tg.Value))
			}
		}
		if len(remove) > 0 {
			if err := c.Call(ctx, "UntagResource", &wire.UntagResourceInput{ResourceArn: d.TableArn, TagKeys: remove}, &struct{}{}); err != nil {
				return fail(err)
			}
			r.Actions = append(r.Actions, "UntagResource")
			for _, k := range remove {
				r.Differences = append(r.Differences, "tag "+k+" removed")
			}
		}
	}

	var ttlOut wire.DescribeTimeToLiveOutput
	if err := c.Call(ctx, "DescribeTimeToLive", &wire.DescribeTimeToLiveInput{TableName: r.TableName}, &ttlOut); err != nil {
		return fail(err)
	}
	steps, diff := ttlChanges(t.TimeToLive, ttlOut.TimeToLiveDescription)
	for _, s := range steps {
		if err := c.Call(ctx, "UpdateTimeToLive", &wire.UpdateTimeToLiveInput{TableName: r.TableName, TimeToLiveSpecification: s}, &wire.UpdateTimeToLiveOutput{}); err != nil {
			return fail(err)
		}
		r.Actions = append(r.Actions, "UpdateTimeToLive")
	}
	if diff != "" && !created {
		r.Differences = append(r.Differences, diff)
	}
	switch {
	case created:
		r.Status = Created
	case len(r.Actions) > 0:
		r.Status = Updated
	default:
		r.Status = Unchanged
	}
	return r, nil
}

// ErrorCode returns the DynamoDB error type of err ("" if it has none).
func ErrorCode(err error) string {
	var c interface{ ErrorCode() string }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return ""
}

func describeTable(ctx context.Context, c Caller, name string) (*wire.TableDescription, error) {
	var out wire.DescribeTableOutput
	if err := c.Call(ctx, "DescribeTable", &wire.DescribeTableInput{TableName: name}, &out); err != nil {
		return nil, err
	}
	if out.Table == nil {
		return nil, fmt.Errorf("DescribeTable %s: the response has no Table", name)
	}
	return out.Table, nil
}

// waitActive polls DescribeTable until the table and its GSIs are ACTIVE.
func waitActive(ctx context.Context, c Caller, name string, wait time.Duration) (*wire.TableDescription, error) {
	if wait <= 0 {
		wait = 2 * time.Minute
	}
	deadline := time.Now().Add(wait)
	poll := 20 * time.Millisecond
	for {
		d, err := describeTable(ctx, c, name)
		if err != nil {
			return nil, err
		}
		active := d.TableStatus == "ACTIVE"
		for _, g := range d.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == "ACTIVE"
		}
		if active {
			return d, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("table %s is still %s after %v", name, d.TableStatus, wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		poll = min(2*poll, time.Second)
	}
}

// Differences lists how table description d differs from t's definition
// in what CreateTable sets (tags and TTL aside); nil if it does not.
func Differences(t Table, d *wire.TableDescription) []string {
	in := &t.CreateTable
	var diffs []string
	differ := func(what, table, template string) {
		if table != template {
			diffs = append(diffs, fmt.Sprintf("%s: the table has %s, the template %s", what, table, template))
		}
	}
	differ("key schema", keysString(d.KeySchema), keysString(in.KeySchema))
	differ("attribute definitions", defsString(d.AttributeDefinitions), defsString(in.AttributeDefinitions))

	billing := "PROVISIONED"
	if d.BillingModeSummary != nil && d.BillingModeSummary.BillingMode != "" {
		billing = d.BillingModeSummary.BillingMode
	}
	wantBilling := in.BillingMode
	if wantBilling == "" {
		wantBilling = "PROVISIONED"
	}
	differ("billing mode", billing, wantBilling)
	if wantBilling == "PROVISIONED" && in.ProvisionedThroughput != nil {
		differ("provisioned throughput", throughputString(d.ProvisionedThroughput), wantThroughputString(in.ProvisionedThroughput))
	}

	gotG := map[string]wire.GlobalSecondaryIndexDescription{}
	for _, g := range d.GlobalSecondaryIndexes {
		gotG[g.IndexName] = g
	}
	wantG := map[string]bool{}
	for _, g := range in.GlobalSecondaryIndexes {
		wantG[g.IndexName] = true
		have, ok := gotG[g.IndexName]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("global secondary index %s: the table has none, the template defines it", g.IndexName))
			continue
		}
		what := "global secondary index " + g.IndexName
		differ(what+" key schema", keysString(have.KeySchema), keysString(g.KeySchema))
		differ(what+" projection", projString(have.Projection), projString(g.Projection))
		if wantBilling == "PROVISIONED" && g.ProvisionedThroughput != nil {
			differ(what+" provisioned throughput", throughputString(have.ProvisionedThroughput), wantThroughputString(g.ProvisionedThroughput))
		}
	}
	for _, g := range d.GlobalSecondaryIndexes {
		if !wantG[g.IndexName] {
			diffs = append(diffs, fmt.Sprintf("global secondary index %s: the table has it, the template does not", g.IndexName))
		}
	}

	gotL := map[string]wire.LocalSecondaryIndexDescription{}
	for _, l := range d.LocalSecondaryIndexes {
		gotL[l.IndexName] = l
	}
	wantL := map[string]bool{}
	for _, l := range in.LocalSecondaryIndexes {
		wantL[l.IndexName] = true
		have, ok := gotL[l.IndexName]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("local secondary index %s: the table has none, the template defines it", l.IndexName))
			continue
		}
		what := "local secondary index " + l.IndexName
		differ(what+" key schema", keysString(have.KeySchema), keysString(l.KeySchema))
		differ(what+" projection", projString(have.Projection), projString(l.Projection))
	}
	for _, l := range d.LocalSecondaryIndexes {
		if !wantL[l.IndexName] {
			diffs = append(diffs, fmt.Sprintf("local secondary index %s: the table has it, the template does not", l.IndexName))
		}
	}

	differ("stream", streamString(d.StreamSpecification), streamString(in.StreamSpecification))
	wantDP := in.DeletionProtectionEnabled != nil && *in.DeletionProtectionEnabled
	differ("deletion protection", fmt.Sprint(d.DeletionProtectionEnabled), fmt.Sprint(wantDP))
	class := "STANDARD"
	if d.TableClassSummary != nil && d.TableClassSummary.TableClass != "" {
		class = d.TableClassSummary.TableClass
	}
	wantClass := in.TableClass
	if wantClass == "" {
		wantClass = "STANDARD"
	}
	differ("table class", class, wantClass)
	return diffs
}

func keysString(ks []wire.KeySchemaElement) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = k.AttributeName + " " + k.KeyType
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func defsString(ds []wire.AttributeDefinition) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.AttributeName + " " + d.AttributeType
	}
	slices.Sort(parts)
	return "(" + strings.Join(parts, ", ") + ")"
}

func projString(p *wire.Projection) string {
	if p == nil {
		return "no projection"
	}
	typ := p.ProjectionType
	if typ == "" {
		typ = "KEYS_ONLY" // DynamoDB's default
	}
	if typ != "INCLUDE" {
		return typ
	}
	attrs := slices.Clone(p.NonKeyAttributes)
	slices.Sort(attrs)
	return "INCLUDE (" + strings.Join(attrs, ", ") + ")"
}

func throughputString(p *wire.ProvisionedThroughputDescription) string {
	if p == nil {
		return "no throughput"
	}
	return fmt.Sprintf("%d RCU/%d WCU", p.ReadCapacityUnits, p.WriteCapacityUnits)
}

func wantThroughputString(p *wire.ProvisionedThroughput) string {
	var r, w int64
	if p.ReadCapacityUnits != nil {
		r = *p.ReadCapacityUnits
	}
	if p.WriteCapacityUnits != nil {
		w = *p.WriteCapacityUnits
	}
	return fmt.Sprintf("%d RCU/%d WCU", r, w)
}

func streamString(s *wire.StreamSpecification) string {
	if s == nil || s.StreamEnabled == nil || !*s.StreamEnabled {
		return "no stream"
	}
	return "a stream of " + s.StreamViewType
}

// tagChanges compares the template's tags with the table's: tags to add
// or change, keys to remove, and differences in reserved tenantdb: tags,
// which are fixed at CreateTable.
func tagChanges(want, have []wire.Tag) (add []wire.Tag, remove, fixed []string) {
	h := map[string]string{}
	for _, t := range have {
		h[t.Key] = t.Value
	}
	w := map[string]bool{}
	for _, t := range want {
		w[t.Key] = true
		v, ok := h[t.Key]
		if ok && v == t.Value {
			continue
		}
		if strings.HasPrefix(t.Key, "tenantdb:") {
			if ok {
				fixed = append(fixed, fmt.Sprintf("tag %s: the table has %q, the template %q (fixed at CreateTable)", t.Key, v, t.Value))
			} else {
				fixed = append(fixed, fmt.Sprintf("tag %s: the table has none, the template %q (fixed at CreateTable)", t.Key, t.Value))
			}
			continue
		}
		add = append(add, t)
	}
	for _, t := range have {
		if w[t.Key] {
			continue
		}
		if strings.HasPrefix(t.Key, "tenantdb:") {
			fixed = append(fixed, fmt.Sprintf("tag %s: the table has %q, the template none (fixed at CreateTable)", t.Key, t.Value))
			continue
		}
		remove = append(remove, t.Key)
	}
	return add, remove, fixed
}

// ttlChanges returns the UpdateTimeToLive calls that bring the table's
// TTL to the template's (absent means disabled), and a description of the
// change.
func ttlChanges(want *wire.TimeToLiveSpecification, have wire.TimeToLiveDescription) ([]wire.TimeToLiveSpecification, string) {
	on := have.TimeToLiveStatus == "ENABLED" || have.TimeToLiveStatus == "ENABLING"
	wantOn := want != nil && want.Enabled
	switch {
	case wantOn && on && have.AttributeName == want.AttributeName:
		return nil, ""
	case wantOn && on:
		return []wire.TimeToLiveSpecification{
			{Enabled: false, AttributeName: have.AttributeName},
			{Enabled: true, AttributeName: want.AttributeName},
		}, fmt.Sprintf("TTL attribute changed from %s to %s", have.AttributeName, want.AttributeName)
	case wantOn:
		return []wire.TimeToLiveSpecification{*want}, "TTL enabled on " + want.AttributeName
	case on:
		return []wire.TimeToLiveSpecification{{Enabled: false, AttributeName: have.AttributeName}}, "TTL on " + have.AttributeName + " disabled"
	}
	return nil, ""
}
