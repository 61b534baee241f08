package engine

import (
	"context"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Tags: only a table's owner may tag or untag it — the operator for shared
// tables, the tenant (admin) for its own tables — so one tenant can never
// write metadata another tenant reads. Anyone who can see a table may list
// its tags. Keys starting with "tenantdb:" are reserved: they are set at
// CreateTable (isolation) and cannot be added or removed later.

// tableFromARN resolves a table ARN visible to s (resolve.LookupARN).
// Only a table is a taggable resource: an index's or a stream's ARN is
// refused as a malformed one (our wording; DynamoDB refuses tags on
// indexes).
func (e *Engine) tableFromARN(ctx context.Context, s tenancy.Scope, arn string) (*schema.Table, error) {
	if i := strings.Index(arn, ":table/"); i >= 0 && strings.Contains(arn[i+len(":table/"):], "/") {
		return nil, apierr.Validationf("Invalid TableArn: Invalid ResourceArn provided as input %s", arn)
	}
	tg, err := e.res.LookupARN(ctx, s, arn)
	if err != nil {
		return nil, err
	}
	return tg.Table, nil
}

// TagResource adds or replaces tags of a table. Errors:
// ValidationException (reserved or invalid keys), LimitExceededException
// (more than 50 tags), ResourceNotFoundException, AccessDeniedException.
func (e *Engine) TagResource(ctx context.Context, s tenancy.Scope, in *wire.TagResourceInput) (*wire.EmptyOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if len(in.Tags) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value '[]' at 'tags' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	if err := checkTags(in.Tags, false); err != nil {
		return nil, err
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	t, err := e.tableFromARN(ctx, s, in.ResourceArn)
	if err != nil {
		return nil, err
	}
	if err := e.res.CheckManage(s, t); err != nil {
		return nil, err
	}
	c := t.Clone()
	for _, tg := range in.Tags {
		replaced := false
		for i := range c.Tags {
			if c.Tags[i].Key == tg.Key {
				c.Tags[i].Value = tg.Value
				replaced = true
			}
		}
		if !replaced {
			c.Tags = append(c.Tags, tg)
		}
	}
	if len(c.Tags) > maxTags {
		return nil, apierr.New(apierr.LimitExceeded, "The number of tags exceeds the limit of %d", maxTags)
	}
	if err := e.persist(c); err != nil {
		return nil, err
	}
	return &wire.EmptyOutput{}, nil
}

// UntagResource removes tags of a table (absent keys are ignored).
// Errors: ValidationException (reserved keys), ResourceNotFoundException,
// AccessDeniedException.
func (e *Engine) UntagResource(ctx context.Context, s tenancy.Scope, in *wire.UntagResourceInput) (*wire.EmptyOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if len(in.TagKeys) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value '[]' at 'tagKeys' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	drop := map[string]bool{}
	for _, k := range in.TagKeys {
		if strings.HasPrefix(k, "tenantdb:") {
			return nil, apierr.Validationf("One or more parameter values were invalid: Tag key %s is reserved: tenantdb: tags are set only at CreateTable", k)
		}
		drop[k] = true
	}
	e.ddl.Lock()
	defer e.ddl.Unlock()
	t, err := e.tableFromARN(ctx, s, in.ResourceArn)
	if err != nil {
		return nil, err
	}
	if err := e.res.CheckManage(s, t); err != nil {
		return nil, err
	}
	c := t.Clone()
	kept := c.Tags[:0]
	for _, tg := range c.Tags {
		if !drop[tg.Key] {
			kept = append(kept, tg)
		}
	}
	c.Tags = kept
	if err := e.persist(c); err != nil {
		return nil, err
	}
	return &wire.EmptyOutput{}, nil
}

// ListTagsOfResource lists the tags of a table s can see. All tags fit in
// one page (at most 50). Errors: ResourceNotFoundException,
// AccessDeniedException.
func (e *Engine) ListTagsOfResource(ctx context.Context, s tenancy.Scope, in *wire.ListTagsOfResourceInput) (*wire.ListTagsOfResourceOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	t, err := e.tableFromARN(ctx, s, in.ResourceArn)
	if err != nil {
		return nil, err
	}
	return &wire.ListTagsOfResourceOutput{Tags: append([]wire.Tag{}, t.Tags...)}, nil
}
