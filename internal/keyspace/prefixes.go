package keyspace

// Every prefix byte and system key name of the key space, by level. The
// layout they build is drawn in the package comment.
//
// NB: two prefixes of one level must differ (TestPrefixesDistinct), and
// no constant of this package is declared outside this file
// (TestPrefixesInOneFile): a new record kind is added here, beside all
// the others, so that a collision is seen before it can mix two kinds of
// record in one range.

// Top level: the first byte of every key.
const (
	sysPrefix     = 's' // server-wide values: sequences, registries, pending drops
	catalogPrefix = 'c' // server-wide catalog: shared tables, slugs, memberships
	tenantPrefix  = 't' // everything a tenant owns, followed by its 16-byte id
)

// Catalog level: the byte after catalogPrefix.
const (
	catTable      = 'T' // shared (operator) table definitions
	catSlug       = 'X' // tenant slug -> tenant id
	catMembership = 'M' // platform user memberships: sub 0x00 tenant
)

// Tenant level: the byte after tenantPrefix and the tenant id.
const (
	subRecord     = 'i' // the tenant record
	subCredential = 'k' // credentials, by key id
	subLastUsed   = 'l' // credentials' last use, by key id
	subAudit      = 'a' // audit records, by sequence
	subAuditHead  = 'A' // the audit chain's head
	subAuditDeny  = 'D' // denials not yet in the log, counted by one gateway: <gateway id>
	subUsage      = 'u' // usage buckets, by hour
	subQuota      = 'q' // quotas, by table ("" tenant-wide)
	subCapacity   = 'b' // token bucket checkpoint
	subMember     = 'p' // memberships of platform users, by sub
	subInvite     = 'v' // invitations, by token hash
	subNamespace  = 'n' // environments' data: env 0x00 ...
	subWebhook    = 'w' // webhook subscriptions and their state (see wh*)
	subSession    = 'S' // web console sessions, by token hash
	subTransfer   = 'j' // export and import job records of a gateway fleet: env 0x00 kind id
)

// Namespace level: the byte after Namespace(tenant, env).
const (
	nsTable   = 'T' // tenant-owned table definitions, by name
	nsItem    = 'd' // items
	nsIndex   = 'x' // index entries
	nsCounter = 'm' // statistics counters
	nsChange  = 'c' // change log records: <table:8> <stream:8> <shard:4> <seq:8>
	nsChgMeta = 'C' // change log state of the namespace (see chg*)
	nsAgg     = 'g' // aggregates: <name> 0x00 (see agg*)
	nsBackup  = 'B' // backup descriptors: <backup id>
	nsBakItem = 'b' // backed-up items: <backup id> <n:8>
)

// Change log state level: the byte after Namespace(tenant, env) nsChgMeta.
const (
	chgCeiling = 's' // the leased ceiling of the namespace's sequence numbers
	chgHorizon = 'h' // <table:8> <stream:8>: the first position not trimmed
	chgTrimmed = 't' // <table:8>: the newest record of the table trimmed away
)

// Aggregate level: the byte after Namespace(tenant, env) nsAgg <name> aggSep.
const (
	aggDefinition = 'd' // the aggregate's definition
	aggProgress   = 'p' // its consumer cursor and state
	aggGroup      = 'g' // <type:1> <group value>: one group's count and sums
)

// Webhook level: the byte after Tenant(t) subWebhook. Each is followed by
// the subscription id.
const (
	whSubscription = 's' // <id>: the subscription
	whCursor       = 'c' // <id>: its durable delivery cursor
	whDead         = 'd' // <id> 0x00 <n:8>: its dead-letter list
	whAttempt      = 'a' // <id> 0x00 <n:8>: its recent delivery attempts
	whDeadCount    = 'k' // <id>: how many dead letters it holds
	whCount        = 'n' // (no id): how many subscriptions the tenant has
)

// Separators.
const (
	membershipSep = 0x00 // ends the sub of a membership key
	envSep        = 0x00 // ends the environment of a namespace
	aggSep        = 0x00 // ends an aggregate's name
)

// Stream name index level: the byte after System(SysStreamNames).
const (
	strShared  = 's'  // streams of shared tables: <name> 0x00 <table:8> <stream:8>
	strOwned   = 'o'  // streams of tenant-owned tables: <ns> <name> 0x00 <table:8> <stream:8>
	strNameEnd = 0x00 // ends the table name
)

// System key names, under sysPrefix (System(name)). None may be a prefix
// of another.
const (
	SysTableSeq      = "seq/table" // next table id
	SysTableRegistry = "tns/"      // <table:8><namespace>: namespace holds data of table
	SysStreamNames   = "chn/"      // <owner><name>0x00<table:8><stream:8>: stream descriptors by table name
	SysPendingDrops  = "drop/"     // <table:8><index:2>: pending removal of data
	SysStreams       = "chs/"      // <table:8><stream:8>: stream descriptors
	SysChangeLogs    = "chl/"      // <namespace><table:8><stream:8>: namespace holds records of stream
	SysAggregates    = "agg/"      // <namespace><name>: namespace holds the aggregate
	SysAggFleet      = "aggf/"     // <name>: an aggregate the operator defined for every tenant of a shared table
	SysWebhooks      = "whk/"      // <tenant:16><id>: tenant has webhook subscription id
	SysBackupsOpen   = "bkp/"      // <namespace><backup id>: a backup being written
	SysRestoresOpen  = "rst/"      // <table:8>: a table being restored
	SysRewinds       = "rwd/"      // <namespace>: the namespace's in-place restore (running or last)
	// SysOperatorBootstrap marks that the first operator credential was
	// stored (its access key id); written with it, conditionally, so one
	// of several gateways starting at once creates it.
	SysOperatorBootstrap = "opboot"
	// SysServerKeyCheck holds auth.ServerKey.Check of the key the control
	// plane of a DynamoDB-API engine is sealed under: every gateway of
	// the fleet must start with that key.
	SysServerKeyCheck = "skcheck"
	// A server key rotation of a fleet (package fleetkey): the rotation
	// in progress (with the new key sealed under the old one, deleted at
	// its end), how far each gateway followed it (<gateway id>), and the
	// keys rotations retired (<check>), to say so to a gateway started
	// with one.
	SysServerKeyRotation = "skrot"
	SysServerKeyAdopted  = "skgw/"
	SysServerKeyRetired  = "skold/"
	// SysKEKRetired marks, by kek id, the tenant-key encryption key a
	// server key rotation retired (derived from the old server key). It
	// and SysServerKeyRetired are written when the rotation starts to
	// re-seal: from then on a write of anything sealed under the old key
	// is refused (RetiredServerKey, RetiredKEK), so nothing escapes the
	// re-sealing.
	SysKEKRetired = "skoldkek/"
	// SysStreamSecret holds, sealed under the server key, the secret a
	// fleet seals tenants' shard iterators with (package fleetkey), so
	// that it outlives server key rotations.
	SysStreamSecret = "skstr"
	// SysWebhookSecret holds, sealed under the server key, the key that
	// seals webhook subscriptions' signing secrets at rest (package
	// fleetkey), so that it outlives server key rotations.
	SysWebhookSecret = "skwhk"
	// SysTenantKeys holds tenants' wrapped data keys on a DynamoDB-API
	// engine: <tenant:16> (tenantkey.Options.Store).
	SysTenantKeys = "tkey/"
	// SysTenantKeyRotations marks, beside a tenant's key record and
	// written with it, that its rotation is in progress: <tenant:16>, so
	// that gateways find the rotations to resume without reading every
	// key (tenantkey.Keyring.Rotations).
	SysTenantKeyRotations = "tkrot/"
	SysPlacements         = "plc/" // <tenant:16><table:8>: where a tenant's data of a table lives, when moved
	SysMoves              = "mov/" // <tenant:16><table:8>: a move of a tenant's data of a table in progress
	SysTierMoves          = "mvt/" // <tenant:16>: a move of all of a tenant's shared tables that then sets its tier
	SysMoveLog            = "mvh/" // <tenant:16><finished:8><table:8>: a tenant's finished moves (bounded)
	SysTransfers          = "xfr/" // <tenant:16><env>0x00<kind><id>: an export or import of a gateway fleet in progress
)
