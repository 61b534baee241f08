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
