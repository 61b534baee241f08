// Package model is a randomized model test of tenant isolation: several
// tenants (and two environments of one tenant) issue random operations
// concurrently against tables they share, or whose names they share, over
// a small key space so that their keys collide. Each actor runs its own
// operations one at a time and applies every acknowledged write to its
// own model; every read — and the final view of every table and index —
// must equal that model, and no actor may ever observe an item it did not
// write. The run is seeded (the seed is logged; -model.seed replays it)
// and bounded (-model.ops operations per actor).
package model
