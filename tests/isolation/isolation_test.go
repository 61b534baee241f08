package isolation

import "testing"

// TestIsolation runs every attack of tenant A (and of B's test
// environment, the operator, narrowed and refused credentials) against
// one server holding the data of all of them.
func TestIsolation(t *testing.T) {
	w := newWorld(t)
	for _, table := range dataTables {
		t.Run(table, func(t *testing.T) { w.dataAttacks(t, table) })
	}
	t.Run(tblLK, w.leadingKeysAttacks)
}
