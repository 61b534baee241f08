package schema

import (
	"encoding/json"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Encode returns the persisted form of t (JSON; the field names are a
// storage format: rename none without migrating stored definitions).
func Encode(t *Table) ([]byte, error) {
	v, err := json.Marshal(t)
	if err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "encoding table definition")
	}
	return v, nil
}

// Decode parses a definition persisted by Encode. Errors: Internal
// ("corrupt table definition").
func Decode(v []byte) (*Table, error) {
	var t Table
	if err := json.Unmarshal(v, &t); err != nil {
		return nil, apierr.Wrap(apierr.Internal, err, "corrupt table definition")
	}
	return &t, nil
}

// TableStorage is what one table holds for one tenant environment, as the
// backend storing it counts it.
type TableStorage struct {
	Table string `json:"table"`
	Env   string `json:"env"`
	// Items and Bytes are the table's items and their size as DynamoDB
	// counts it (DescribeTable's ItemCount and TableSizeBytes).
	Items int64 `json:"items"`
	Bytes int64 `json:"bytes"`
	// IndexBytes is the size of the table's index entries.
	IndexBytes int64 `json:"index_bytes"`
}

// TablePlacement says where a tenant's data of one table lives.
type TablePlacement struct {
	Table string `json:"table"`
	// Env is the environment owning a tenant's own table; "" for a
	// shared table.
	Env       string `json:"env,omitempty"`
	Isolation string `json:"isolation"`
	// Store is "pool" (the server's main store, shared by tenants) or
	// "silo" (the tenant's own store).
	Store string `json:"store"`
	// Path is the store's directory under the data directory ("" in
	// memory).
	Path string `json:"path,omitempty"`
	// HasData says whether the tenant has ever written to the table (in
	// any environment, for a shared table).
	HasData bool `json:"has_data"`
	// Moving, if not empty, is the phase of a move of the tenant's data of
	// the table to the other store (tenantdb tenant move).
	Moving string `json:"moving,omitempty"`
}
