package engine

// startBackground starts the engine's background work (the TTL sweeper,
// index backfills). Implemented by the TTL/backfill code.
func (e *Engine) startBackground() {}
