package engine

import (
	"context"

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
	if err := schema.CheckTaggableARN(arn); err != nil {
		return nil, err
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
	if err := schema.CheckTagResource(in); err != nil {
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
	if err := c.SetTags(in.Tags); err != nil {
		return nil, err
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
	if err := schema.CheckUntagResource(in); err != nil {
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
	c.RemoveTags(in.TagKeys)
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
