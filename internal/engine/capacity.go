package engine

import (
	"math"

	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/wire"
)

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

// checkConsumedMode validates ReturnConsumedCapacity.
func checkConsumedMode(m string) error {
	switch m {
	case "", "NONE", "TOTAL", "INDEXES":
		return nil
	}
	return enumErr(m, "returnConsumedCapacity", "INDEXES, TOTAL, NONE")
}

// capTally accumulates the capacity an operation consumed, per table and
// index, in the order tables were first charged.
type capTally struct {
	order  []string
	tables map[string]*tableTally
}

type tableTally struct {
	units   float64
	indexes map[*schema.Index]float64
}

func (c *capTally) table(name string) *tableTally {
	if c.tables == nil {
		c.tables = map[string]*tableTally{}
	}
	tt := c.tables[name]
	if tt == nil {
		tt = &tableTally{}
		c.tables[name] = tt
		c.order = append(c.order, name)
	}
	return tt
}

// addWrite charges a committed write, scaled by factor (2 in transactions).
func (c *capTally) addWrite(name string, w writeCost, factor float64) {
	tt := c.table(name)
	tt.units += w.table * factor
	for ix, u := range w.indexes {
		if tt.indexes == nil {
			tt.indexes = map[*schema.Index]float64{}
		}
		tt.indexes[ix] += u * factor
	}
}

// addRead charges units of a read of table name.
func (c *capTally) addRead(name string, units float64) { c.table(name).units += units }

// total returns all units charged.
func (c *capTally) total() float64 {
	n := 0.0
	for _, tt := range c.tables {
		n += tt.units
		for _, u := range tt.indexes {
			n += u
		}
	}
	return n
}

// first returns the first table charged ("" if none).
func (c *capTally) first() string {
	if len(c.order) == 0 {
		return ""
	}
	return c.order[0]
}

// usage returns the Usage to meter: all units as reads or writes.
func (c *capTally) usage(write bool) wire.Usage {
	u := wire.Usage{Table: c.first()}
	if write {
		u.WriteUnits = c.total()
	} else {
		u.ReadUnits = c.total()
	}
	if len(c.order) > 1 {
		u.PerTable = make([]wire.TableUnits, 0, len(c.order))
		for _, name := range c.order {
			tt := c.tables[name]
			n := tt.units
			for _, iu := range tt.indexes {
				n += iu
			}
			u.PerTable = append(u.PerTable, wire.TableUnits{Table: name, Units: n})
		}
	}
	return u
}

// report returns ReturnConsumedCapacity's view for mode (nil for NONE).
func (c *capTally) report(mode string) []wire.ConsumedCapacity {
	if mode != "TOTAL" && mode != "INDEXES" {
		return nil
	}
	out := make([]wire.ConsumedCapacity, 0, len(c.order))
	for _, name := range c.order {
		tt := c.tables[name]
		cc := wire.ConsumedCapacity{TableName: name, CapacityUnits: tt.units}
		for _, u := range tt.indexes {
			cc.CapacityUnits += u
		}
		if mode == "INDEXES" {
			cc.Table = &wire.Capacity{CapacityUnits: tt.units}
			for ix, u := range tt.indexes {
				if ix.Local {
					if cc.LocalSecondaryIndexes == nil {
						cc.LocalSecondaryIndexes = map[string]wire.Capacity{}
					}
					cc.LocalSecondaryIndexes[ix.Name] = wire.Capacity{CapacityUnits: cc.LocalSecondaryIndexes[ix.Name].CapacityUnits + u}
				} else {
					if cc.GlobalSecondaryIndexes == nil {
						cc.GlobalSecondaryIndexes = map[string]wire.Capacity{}
					}
					cc.GlobalSecondaryIndexes[ix.Name] = wire.Capacity{CapacityUnits: cc.GlobalSecondaryIndexes[ix.Name].CapacityUnits + u}
				}
			}
		}
		out = append(out, cc)
	}
	return out
}

// reportOne is report for single-table operations.
func (c *capTally) reportOne(mode string) *wire.ConsumedCapacity {
	r := c.report(mode)
	if len(r) == 0 {
		return nil
	}
	return &r[0]
}
