package keyspace

import (
	"encoding/binary"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Keys of tenant moves between the pool and a silo store (engine's
// move.go), in the main store:
//
//	s plc/ <tenant:16> <table:8>   where the tenant's data of the table lives ("pool" or "silo"), once moved
//	s mov/ <tenant:16> <table:8>   a move of the tenant's data of the table in progress (its phase)

func tenantTable(sys string, t tenancy.TenantID, table uint64) []byte {
	return binary.BigEndian.AppendUint64(append(System(sys), t[:]...), table)
}

// TablePlacement returns the key of where tenant t's data of table lives.
func TablePlacement(t tenancy.TenantID, table uint64) []byte {
	return tenantTable(SysPlacements, t, table)
}

// TablePlacements returns the range of every tenant's table placements.
func TablePlacements() (lo, hi []byte) { return prefixRange(System(SysPlacements)) }

// TableMove returns the key of the move of tenant t's data of table.
func TableMove(t tenancy.TenantID, table uint64) []byte { return tenantTable(SysMoves, t, table) }

// TableMoves returns the range of every move in progress.
func TableMoves() (lo, hi []byte) { return prefixRange(System(SysMoves)) }

// ParseTenantTable returns the tenant and table of a TablePlacement or
// TableMove key; ok is false for a key of another shape.
func ParseTenantTable(key []byte) (t tenancy.TenantID, table uint64, ok bool) {
	for _, sys := range []string{SysPlacements, SysMoves} {
		p := System(sys)
		if len(key) == len(p)+len(t)+8 && string(key[:len(p)]) == string(p) {
			copy(t[:], key[len(p):])
			return t, binary.BigEndian.Uint64(key[len(p)+len(t):]), true
		}
	}
	return t, 0, false
}
