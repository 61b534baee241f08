package tenancy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/verify"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// With one guard check switched off (the leading-keys check, then the
// tenant check of the admin routes), `tenantdb verify` reports the leak
// and fails; with it on again, it passes. This is
// the proof that verify can see a leak, not merely that it finds none.
func TestVerifyFindsInjectedLeak(t *testing.T) {
	if os.Getenv(harness.BinEnv) != "" {
		t.Skip("the leak is injected into the in-process server only")
	}
	srv := harness.Start(t)
	o := verify.Options{Endpoint: srv.Endpoint, Operator: verify.Credential{
		AccessKeyID: srv.Operator.AccessKeyID, SecretAccessKey: srv.Operator.SecretAccessKey, Key: srv.Operator.Key}}
	ctx := context.Background()

	restore := tenancy.InjectLeadingKeysLeak()
	var out bytes.Buffer
	err := verify.Check(ctx, o, &out, true)
	restore()
	if !errors.Is(err, verify.ErrLeaks) {
		t.Fatalf("verify with the leading-keys check off: %v, want ErrLeaks\n%s", err, out.String())
	}
	var rep struct {
		Attempts int `json:"attempts"`
		Leaks    int `json:"leaks"`
		Families []struct {
			Family   string   `json:"family"`
			Leaks    int      `json:"leaks"`
			Findings []string `json:"findings"`
		} `json:"families"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("the --json report: %v\n%s", err, out.String())
	}
	if rep.Leaks < 1 || rep.Attempts <= rep.Leaks {
		t.Fatalf("report: %d leaks in %d attempts", rep.Leaks, rep.Attempts)
	}
	leaky := map[string]bool{}
	for _, f := range rep.Families {
		if f.Leaks > 0 {
			leaky[f.Family] = true
			t.Logf("%s: %d leaks, e.g. %s", f.Family, f.Leaks, f.Findings[0])
		}
	}
	for _, want := range []string{"keys", "indexes", "batches"} {
		if !leaky[want] {
			t.Errorf("family %s found no leak with the leading-keys check off", want)
		}
	}
	for f := range leaky {
		if f == "admin-routes" || f == "suspension" || f == "subscriptions" || f == "console" {
			t.Errorf("family %s leaked, but only the leading-keys check is off", f)
		}
	}
	// A refusal that is not one: the audit family sees it (the attacker's
	// write under the victim's leading key was accepted).
	if !leaky["audit"] {
		t.Errorf("family audit found no leak with the leading-keys check off")
	}

	// With the tenant check of the admin routes off, the families of the
	// admin API's tenant features and the console see it.
	restore = tenancy.InjectCrossTenantAdminLeak()
	out.Reset()
	err = verify.Check(ctx, o, &out, true)
	restore()
	if !errors.Is(err, verify.ErrLeaks) {
		t.Fatalf("verify with the admin tenant check off: %v, want ErrLeaks\n%s", err, out.String())
	}
	rep.Families = nil
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("the --json report: %v\n%s", err, out.String())
	}
	leaky = map[string]bool{}
	for _, f := range rep.Families {
		if f.Leaks > 0 {
			leaky[f.Family] = true
			t.Logf("%s: %d leaks, e.g. %s", f.Family, f.Leaks, f.Findings[0])
		}
	}
	for _, want := range []string{"admin-routes", "subscriptions", "aggregates", "encryption", "console", "audit"} {
		if !leaky[want] {
			t.Errorf("family %s found no leak with the admin tenant check off", want)
		}
	}
	for f := range leaky {
		if f == "keys" || f == "indexes" || f == "batches" {
			t.Errorf("family %s leaked, but only the admin tenant check is off", f)
		}
	}

	out.Reset()
	if err := verify.Check(ctx, o, &out, false); err != nil {
		t.Fatalf("verify with the check on again: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "no leaks") {
		t.Errorf("text report:\n%s", out.String())
	}
}
