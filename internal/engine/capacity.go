package engine

import "math"

// DynamoDB's capacity arithmetic: a read unit covers 4 KB read strongly
// consistently (half a unit eventually consistently, transactional reads
// cost double); a write unit covers 1 KB (transactional writes cost double).
const (
	readUnitBytes  = 4096
	writeUnitBytes = 1024
)

// readUnits returns the capacity units of reading size bytes in one
// request unit (GetItem: the item; Query/Scan: the total of the page).
func readUnits(size int, consistent bool) float64 {
	u := math.Ceil(float64(size) / readUnitBytes)
	if u < 1 {
		u = 1
	}
	if !consistent {
		return u / 2
	}
	return u
}

// writeUnits returns the capacity units of writing an item of size bytes
// (for updates and deletes, the larger of the old and new item).
func writeUnits(size int) float64 {
	u := math.Ceil(float64(size) / writeUnitBytes)
	if u < 1 {
		u = 1
	}
	return u
}
