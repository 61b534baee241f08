package client

import "context"

// ShardRequest changes the shard count of a tenant's tables on a server
// that is a gateway over a remote engine (tenantdb serve --backend
// dynamodb): Table "" means every table the tenant has items in.
type ShardRequest struct {
	Shards int    `json:"shards"`
	Table  string `json:"table,omitempty"`
}

// ShardStatus is the shard layout of one of a tenant's tables in one
// environment, and the progress of a change of its shard count.
type ShardStatus struct {
	Table  string `json:"table"`
	Env    string `json:"env,omitempty"`
	Shards int    `json:"shards"`
	// From is the shard count being left while a change is under way
	// (0 when none is); Phase is then "prep" or "move", Moved the items
	// moved so far and Shard the shard the migrator is reading.
	From  int    `json:"from,omitempty"`
	Phase string `json:"phase,omitempty"`
	Moved int64  `json:"moved"`
	Shard int    `json:"shard,omitempty"`
}

// ShardsResult lists a tenant's tables' shard layouts.
type ShardsResult struct {
	Tables []ShardStatus `json:"tables"`
}

// SetShards sets the shard count of a tenant's tables (operator only).
// The change is online: it returns at once, and Shards shows its
// progress.
func (c *Client) SetShards(ctx context.Context, ref string, req ShardRequest) (ShardsResult, error) {
	var out ShardsResult
	return out, c.do(ctx, "POST", tenantPath(ref)+"/shards", c.Key, req, &out)
}

// Shards lists the shard layouts of a tenant's tables (operator only).
func (c *Client) Shards(ctx context.Context, ref string) (ShardsResult, error) {
	var out ShardsResult
	return out, c.do(ctx, "GET", tenantPath(ref)+"/shards", c.Key, nil, &out)
}
