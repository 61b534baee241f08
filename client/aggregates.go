package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// CreateAggregateRequest is the body of POST /v1/tenants/{tenant}/aggregates.
type CreateAggregateRequest struct {
	Name    string `json:"name"`
	Table   string `json:"table"`
	GroupBy string `json:"group_by"`
	// Where is a FilterExpression an item must satisfy to be counted;
	// Names and Values are its ExpressionAttributeNames and
	// ExpressionAttributeValues (DynamoDB JSON, {"S": "x"}).
	Where  string                     `json:"where,omitempty"`
	Names  map[string]string          `json:"names,omitempty"`
	Values map[string]json.RawMessage `json:"values,omitempty"`
	Count  bool                       `json:"count"`
	Sum    []string                   `json:"sum,omitempty"`
	// GroupAfter: only the part of a string group value after its last
	// occurrence of GroupAfter names the group.
	GroupAfter string `json:"group_after,omitempty"`
	// Item materialises each group as an item of the table: key attribute
	// → string template with {group} and {tenant}.
	Item map[string]string `json:"item,omitempty"`
}

// Aggregate is an aggregate as the API shows it; Groups only in show.
type Aggregate struct {
	Name       string                     `json:"name"`
	Table      string                     `json:"table"`
	GroupBy    string                     `json:"group_by"`
	Where      string                     `json:"where,omitempty"`
	Names      map[string]string          `json:"names,omitempty"`
	Values     map[string]json.RawMessage `json:"values,omitempty"`
	Count      bool                       `json:"count"`
	Sum        []string                   `json:"sum,omitempty"`
	GroupAfter string                     `json:"group_after,omitempty"`
	Item       map[string]string          `json:"item,omitempty"`
	CreatedAt  time.Time                  `json:"created_at"`
	// State is "building" (computing from the table's items) or "ready".
	State string `json:"state"`
	// Cursor is the change-log position the groups include.
	Cursor string `json:"cursor"`
	// Applied counts changes folded in since the last rebuild.
	Applied uint64 `json:"applied"`
	// LagMillis is how far behind the latest committed write the
	// aggregate is (0 when caught up).
	LagMillis  int64      `json:"lag_ms"`
	LastChange *time.Time `json:"last_change,omitempty"`
	RebuiltAt  *time.Time `json:"rebuilt_at,omitempty"`
	Rebuilds   uint64     `json:"rebuilds"`
	// Scanned is how many items the last (or running) rebuild read.
	Scanned uint64 `json:"scanned"`
	Error   string `json:"error,omitempty"`
	// Fleet marks a copy of an aggregate the operator defined for every
	// tenant of a shared table (only the operator deletes it).
	Fleet bool `json:"fleet,omitempty"`
	// Groups maps each group value to its figures.
	Groups map[string]AggregateGroup `json:"groups,omitzero"`
}

// AggregateGroup is one group's count and exact decimal sums.
type AggregateGroup struct {
	Count *int64            `json:"count,omitempty"`
	Sum   map[string]string `json:"sum,omitempty"`
}

// AggregateList is the answer of GET /v1/tenants/{tenant}/aggregates.
type AggregateList struct {
	Aggregates []Aggregate `json:"aggregates"`
}

func aggregatePath(tenant, name string) string {
	p := tenantPath(tenant) + "/aggregates"
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// CreateAggregate defines an aggregate on one of the tenant's tables (for
// the operator: in the tenant's live environment).
func (c *Client) CreateAggregate(ctx context.Context, tenant string, in CreateAggregateRequest) (Aggregate, error) {
	var out Aggregate
	return out, c.do(ctx, "POST", aggregatePath(tenant, ""), c.Key, in, &out)
}

// Aggregates lists a tenant's aggregates, without their groups.
func (c *Client) Aggregates(ctx context.Context, tenant string) ([]Aggregate, error) {
	var out AggregateList
	return out.Aggregates, c.do(ctx, "GET", aggregatePath(tenant, ""), c.Key, nil, &out)
}

// Aggregate returns one aggregate with its groups.
func (c *Client) Aggregate(ctx context.Context, tenant, name string) (Aggregate, error) {
	var out Aggregate
	return out, c.do(ctx, "GET", aggregatePath(tenant, name), c.Key, nil, &out)
}

// DeleteAggregate stops and removes an aggregate.
func (c *Client) DeleteAggregate(ctx context.Context, tenant, name string) error {
	return c.do(ctx, "DELETE", aggregatePath(tenant, name), c.Key, nil, nil)
}

// RebuildAggregate recomputes an aggregate from the table's current items,
// online; it returns at once, with State "building".
func (c *Client) RebuildAggregate(ctx context.Context, tenant, name string) (Aggregate, error) {
	var out Aggregate
	return out, c.do(ctx, "POST", aggregatePath(tenant, name)+"/rebuild", c.Key, nil, &out)
}

// CreateFleetAggregate defines an aggregate on a shared table for every
// tenant at once (operator only): each tenant environment holding data of
// the table gets its own copy, covering its own items, under the same
// name (state "defined" in this answer).
func (c *Client) CreateFleetAggregate(ctx context.Context, in CreateAggregateRequest) (Aggregate, error) {
	var out Aggregate
	return out, c.do(ctx, "POST", "/v1/aggregates", c.Key, in, &out)
}

// FleetAggregates lists the aggregates defined for every tenant.
func (c *Client) FleetAggregates(ctx context.Context) ([]Aggregate, error) {
	var out AggregateList
	return out.Aggregates, c.do(ctx, "GET", "/v1/aggregates", c.Key, nil, &out)
}

// DeleteFleetAggregate deletes an aggregate defined for every tenant and
// every tenant's copy of it.
func (c *Client) DeleteFleetAggregate(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/v1/aggregates/"+url.PathEscape(name), c.Key, nil, nil)
}
