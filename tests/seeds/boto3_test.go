package seeds

import (
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

func needBoto3(t *testing.T) {
	t.Helper()
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		t.Skip("python3 with boto3 is not installed")
	}
}

// boto3 runs testdata/seed004_boto3.py with a tenant's profile.
func (e *awsEnv) boto3(t *testing.T, profile string, args ...string) {
	t.Helper()
	cmd := exec.Command("python3", append([]string{"testdata/seed004_boto3.py", "--endpoint", e.srv.Endpoint, "--profile", profile}, args...)...)
	cmd.Env = e.env
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Errorf("seed004_boto3.py --profile %s %s: %v\n%s", profile, strings.Join(args, " "), err, out)
	}
}

// TestSeed004Boto3 runs seed 004's flow through boto3 (client and resource
// APIs) with tenant keys in a credentials profile, with the same data and
// expectations as the AWS CLI test: on a namespace table as printed
// (TENANT#1) beside another tenant's items under the same keys, and for
// two tenants on one leading-keys table.
func TestSeed004Boto3(t *testing.T) {
	needBoto3(t)
	t.Parallel()

	t.Run("namespace", func(t *testing.T) {
		t.Parallel()
		srv := harness.Start(t)
		createSupportTicket(t, srv)
		one, other := srv.NewTenant(t, "acme", "app"), srv.NewTenant(t, "globex", "app")
		// The other tenant's data under the same keys, with other titles.
		od := loadTickets(t, "TENANT#1")
		for _, it := range od.Items {
			if _, ok := it["title"]; ok {
				it["title"] = map[string]any{"S": "globex: " + s(it, "title")}
			}
		}
		seedTickets(t, rawClient{srv.Endpoint, other}, od.Items)
		e := newAWSEnv(t, srv, map[string]harness.Credential{"tenant-1": one})
		e.boto3(t, "tenant-1", "--prefix", "TENANT#1")
	})

	t.Run("leading-keys", func(t *testing.T) {
		t.Parallel()
		srv := harness.Start(t)
		createSupportTicket(t, srv,
			map[string]string{"Key": "tenantdb:isolation", "Value": "leading-keys"},
			map[string]string{"Key": "tenantdb:leading-key-pattern", "Value": "TENANT#{tenant}|*"})
		a, b := srv.NewTenant(t, "acme", "app"), srv.NewTenant(t, "globex", "app")
		e := newAWSEnv(t, srv, map[string]harness.Credential{"tenant-a": a, "tenant-b": b})
		var wg sync.WaitGroup
		for _, r := range []struct {
			profile string
			me, you harness.Credential
		}{{"tenant-a", a, b}, {"tenant-b", b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.boto3(t, r.profile, "--prefix", "TENANT#"+r.me.TenantID, "--leading-keys", "--other-prefix", "TENANT#"+r.you.TenantID)
			}()
		}
		wg.Wait()
	})
}
