package isolation

import "testing"

// TestIsolation runs every attack of tenant A (and of B's test
// environment, the operator, narrowed and refused credentials) against
// one server holding the data of all of them.
func TestIsolation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, table := range dataTables {
		t.Run(table, func(t *testing.T) { w.dataAttacks(t, table) })
	}
	t.Run(tblLK, w.leadingKeysAttacks)
	t.Run("partiql", w.partiqlAttacks)
	t.Run("tables", w.tableAttacks)
	t.Run("environments", w.envAttacks)
	t.Run("credentials", w.credentialAttacks)
	t.Run("admin", w.adminAttacks)
	t.Run("admin-routes", w.adminRouteAttacks)
	t.Run("aggregates", w.aggregateAttacks)
	t.Run("lifecycle", w.lifecycleAttacks)
	t.Run("bytes", func(t *testing.T) {
		w.byteSweep(t, w.A, w.B, w.Btest)
		w.byteSweep(t, w.Btest, w.B)
	})
}
