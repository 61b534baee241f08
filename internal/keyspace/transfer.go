package keyspace

import "github.com/tenantdb/tenantdb/internal/tenancy"

// Keys of the DynamoDB API's export and import jobs on a gateway fleet
// (package transfer, kvrecords.go). The record is in its tenant's range,
// so the tenant's deletion deletes it; the system registry lets a gateway
// find the jobs in progress without reading every tenant:
//
//	t<tenant> j <env> 0x00 <kind> <id>       the job's record
//	s xfr/ <tenant:16> <env> 0x00 <kind> <id> the job is in progress

func transferTail(env string, kind byte, id string) []byte {
	b := append([]byte(env), envSep, kind)
	return append(b, id...)
}

// TransferJob returns the key of job id of kind ('e' export, 'i' import)
// of tenant t's environment env.
func TransferJob(t tenancy.TenantID, env string, kind byte, id string) []byte {
	return append(append(Tenant(t), subTransfer), transferTail(env, kind, id)...)
}

// TransferJobs returns the range of the jobs of kind of tenant t's
// environment env.
func TransferJobs(t tenancy.TenantID, env string, kind byte) (lo, hi []byte) {
	return prefixRange(TransferJob(t, env, kind, ""))
}

// TenantTransferJobs returns the range of every job record of tenant t.
func TenantTransferJobs(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(Tenant(t), subTransfer))
}

// TransferRunning returns the registry key saying job id of kind of
// tenant t's environment env is in progress.
func TransferRunning(t tenancy.TenantID, env string, kind byte, id string) []byte {
	return append(append(System(SysTransfers), t[:]...), transferTail(env, kind, id)...)
}

// TransfersRunning returns the range of the whole registry.
func TransfersRunning() (lo, hi []byte) { return prefixRange(System(SysTransfers)) }

// TenantTransfersRunning returns the registry range of tenant t.
func TenantTransfersRunning(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(append(System(SysTransfers), t[:]...))
}

// TransferRunningEntry parses a registry key; ok is false for a key of
// another shape.
func TransferRunningEntry(k []byte) (t tenancy.TenantID, env string, kind byte, id string, ok bool) {
	p := System(SysTransfers)
	if len(k) < len(p)+len(t)+2 || string(k[:len(p)]) != string(p) {
		return t, "", 0, "", false
	}
	copy(t[:], k[len(p):])
	rest := k[len(p)+len(t):]
	for i, c := range rest {
		if c == envSep {
			if i+1 >= len(rest) {
				return t, "", 0, "", false
			}
			return t, string(rest[:i]), rest[i+1], string(rest[i+2:]), true
		}
	}
	return t, "", 0, "", false
}
