package schema

import "time"

// MoveStatus is the state of a move of a tenant's data of one table
// between the pool (the main store) and the tenant's silo store, as the
// engine reports it (engine.StartMove, engine.Moves).
type MoveStatus struct {
	// Table is the table whose data moves; empty for a tier move (Tier).
	Table string `json:"table"`
	// Tier, set on a tier move, is the tier the tenant gets once its
	// shared tables have moved (a move of all of them, "waiting" for
	// them, then "checking", "setting" and "done" or "failed").
	Tier string `json:"tier,omitempty"`
	// From and To are "pool" or "silo".
	From string `json:"from"`
	To   string `json:"to"`
	// Phase is "copying" (a snapshot of the data), "catching-up" (the
	// change log since the snapshot), "cutover" (the tenant's writers of
	// the table held), "cleaning" (the data moved; the source's copy is
	// being deleted), "done", "failed" (rolled back: the data stayed
	// where it was) or "unchanged" (it was there already).
	Phase    string    `json:"phase"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Items is how many items the copy has copied, of ItemsTotal (the
	// source's item count when the copy began).
	Items      int64 `json:"items"`
	ItemsTotal int64 `json:"items_total"`
	// Changes is how many logged changes the catch-up applied.
	Changes int64 `json:"changes"`
	// Attempts counts cutovers begun; one abandoned (too much to catch up
	// with the writers held, or a definition change) lets writers go and
	// catches up again.
	Attempts int `json:"attempts"`
	// BlockedMS is how long the tenant's writes of the table were held at
	// the cutover that moved it (milliseconds).
	BlockedMS float64 `json:"blocked_ms"`
	Error     string  `json:"error,omitempty"`
}
