// Package crashpoint kills the process with SIGKILL at a named point of
// its work, for crash tests that must stop a server exactly there (the
// instant after a cutover's synced batch, in the middle of a cleanup)
// rather than at a random moment. The points are compiled in only with
// the build tag crashpoints (tests/crash builds its binary with it);
// without it Hit is empty and the process never reads the environment.
//
// With the tag, TENANTDB_CRASHPOINT names the point to die at; when the
// process reaches it, it creates the file TENANTDB_CRASHPOINT_MARK (if
// set), so that the test knows the point was reached, and kills itself
// with SIGKILL: no deferred function, flush or shutdown runs.
package crashpoint

// The environment variables read with the crashpoints tag.
const (
	Env     = "TENANTDB_CRASHPOINT"
	MarkEnv = "TENANTDB_CRASHPOINT_MARK"
)

// The points.
const (
	// MoveCutover is right after a move's switch batch (placement and
	// phase) is synced, before the held writers go on or anything in
	// memory changes.
	MoveCutover = "move-cutover"
	// MoveCleanup is during the cleanup of a moved table's source copy:
	// its data deleted, its change log not yet, the move not ended.
	MoveCleanup = "move-cleanup"
)
