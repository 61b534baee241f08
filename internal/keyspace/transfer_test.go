package keyspace

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// FuzzTransferRunningEntry: a registry key parses back into what built
// it (for an environment without the separator), and any other key
// parses without panicking into something whose key is itself.
func FuzzTransferRunningEntry(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), "prod", byte('e'), "01800000000000-0000abcd", []byte("s"))
	f.Add([]byte("0123456789abcdef"), "", byte('i'), "", append(System(SysTransfers), 0))
	f.Fuzz(func(t *testing.T, tb []byte, env string, kind byte, id string, raw []byte) {
		var tn tenancy.TenantID
		copy(tn[:], tb)
		if !strings.ContainsRune(env, envSep) {
			k := TransferRunning(tn, env, kind, id)
			gt, genv, gkind, gid, ok := TransferRunningEntry(k)
			if !ok || gt != tn || genv != env || gkind != kind || gid != id {
				t.Fatalf("%q: %v %q %q %q %v", k, gt, genv, gkind, gid, ok)
			}
			lo, hi := TransfersRunning()
			if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
				t.Fatalf("%q outside the registry's range", k)
			}
			if lo, hi := TenantTransferJobs(tn); bytes.Compare(TransferJob(tn, env, kind, id), lo) < 0 || bytes.Compare(TransferJob(tn, env, kind, id), hi) >= 0 {
				t.Fatalf("the record outside its tenant's range")
			}
		}
		if gt, genv, gkind, gid, ok := TransferRunningEntry(raw); ok {
			if k := TransferRunning(gt, genv, gkind, gid); !bytes.Equal(k, raw) {
				t.Fatalf("%q parsed into %v %q %q %q, which is %q", raw, gt, genv, gkind, gid, k)
			}
		}
	})
}
