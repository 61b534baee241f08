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
//	s mvt/ <tenant:16>             a move of all the tenant's shared tables that sets its tier at the end
//	s mvh/ <tenant:16> <finished:8> <table:8>   a finished move (the last few per tenant)

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

// TierMove returns the key of the move of all of tenant t's shared
// tables that changes its tier once they have moved.
func TierMove(t tenancy.TenantID) []byte { return append(System(SysTierMoves), t[:]...) }

// TierMoves returns the range of every tier move in progress.
func TierMoves() (lo, hi []byte) { return prefixRange(System(SysTierMoves)) }

// MoveLog returns the key of a finished move of tenant t's data of table
// (0: its tier), ordered by when it finished (unix nanoseconds).
func MoveLog(t tenancy.TenantID, finished int64, table uint64) []byte {
	b := binary.BigEndian.AppendUint64(append(System(SysMoveLog), t[:]...), uint64(finished))
	return binary.BigEndian.AppendUint64(b, table)
}

// MoveLogRange returns the range of tenant t's finished moves.
func MoveLogRange(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(System(SysMoveLog), t[:]...))
}

// TenantMoveKeys returns the prefixes of every key of tenant t's moves and
// placements (placements, moves in progress, its tier move, finished
// moves): what a dropped tenant leaves nothing of.
func TenantMoveKeys(t tenancy.TenantID) [][]byte {
	var out [][]byte
	for _, sys := range []string{SysPlacements, SysMoves, SysTierMoves, SysMoveLog} {
		out = append(out, append(System(sys), t[:]...))
	}
	return out
}
