package review

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestMetricsOperatorOnly: /metrics carries per-tenant series (requests,
// capacity, throttles by tenant id), so only the operator may read it; a
// tenant key, even an admin one, gets 401 and no series.
func TestMetricsOperatorOnly(t *testing.T) {
	s := harness.Start(t)
	tenant := s.NewTenant(t, "metrics-probe", "admin")
	get := func(bearer string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.Endpoint+"/metrics", nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for name, bearer := range map[string]string{"none": "", "tenant-admin": tenant.Key, "garbage": "sk_live_x"} {
		status, body := get(bearer)
		if status != 401 || strings.Contains(body, "tenantdb_") {
			t.Errorf("%s: GET /metrics = %d, want 401 with no series", name, status)
		}
	}
	if status, body := get(s.Operator.Key); status != 200 || !strings.Contains(body, "tenantdb_requests_total") {
		t.Errorf("operator: GET /metrics = %d, want 200 with series", status)
	}
}
