package seeds

// Seed 003's migration on seed 004's data: an export of SupportTicket in
// which the application kept two tenants apart with TENANT#1| and
// TENANT#2| key prefixes is loaded with `tenantdb migrate` into two
// tenants of a namespace table; each then runs the seed's queries without
// the prefixes and gets the seed's items.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// writeTicketExport writes seed 004's data set once per prefix, plus an
// item of no tenant, as a DynamoDB export under dir.
func writeTicketExport(t *testing.T, dir string, prefixes ...string) {
	t.Helper()
	now := time.Now()
	w, err := dynexport.Create(dir, dynexport.WriterOptions{ExportID: dynexport.NewExportID(now), Start: now, ExportTime: now,
		TableArn: "arn:aws:dynamodb:us-east-1:123456789012:table/SupportTicket", MaxFileBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range prefixes {
		for _, it := range loadTickets(t, p).Items {
			b, _ := json.Marshal(it)
			if err := w.Add(b, int64(len(b))); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.Add([]byte(`{"pk":{"S":"LEGACY|TICKET#9"},"sk":{"S":"SUMMARY"},"title":{"S":"before tenants"}}`), 50)
	if _, err := w.Close(now); err != nil {
		t.Fatal(err)
	}
}

type migrateOut struct {
	Tenants []struct {
		ID              string `json:"id"`
		Slug            string `json:"slug"`
		TenantID        string `json:"tenant_id"`
		Exists, Created bool
		Items, Bytes    int64
	} `json:"tenants"`
	Unmatched []struct {
		Key json.RawMessage `json:"key"`
	} `json:"unmatched"`
	Isolation string `json:"isolation"`
}

func TestSeed004Migration(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	if srv.Remote {
		t.Skip("imports are not served by the remote backend yet (README, remote backend)")
	}
	bin := tenantdbBinary(t)
	createSupportTicket(t, srv) // a namespace table
	from := t.TempDir()
	writeTicketExport(t, from, "TENANT#1", "TENANT#2")
	slug := fmt.Sprintf("m004-%d-{tenant}", time.Now().UnixNano()%1e9)
	migrate := func(args ...string) migrateOut {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"migrate", "--from", from, "--table", "SupportTicket", "--tenant-from", "pk:TENANT#{tenant}|*",
			"--slug", slug, "--json", "--endpoint", srv.Endpoint, "--key", srv.Operator.Key}, args...)...)
		cmd.Env = append(os.Environ(), "TENANTDB_KEY=", "TENANTDB_PROFILE=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("migrate %v: %v\n%s", args, err, stderr.String())
		}
		var r migrateOut
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("migrate output %s: %v", out, err)
		}
		return r
	}

	// The dry run reports and changes nothing.
	dry := migrate("--dry-run", "--create-tenants")
	if len(dry.Tenants) != 2 || dry.Tenants[0].ID != "1" || dry.Tenants[1].ID != "2" || dry.Tenants[0].Items != 9 || dry.Tenants[1].Items != 9 ||
		dry.Tenants[0].Bytes == 0 || dry.Tenants[0].Exists || dry.Isolation != "namespace" {
		t.Fatalf("dry run: %+v", dry)
	}
	if len(dry.Unmatched) != 1 || !strings.Contains(string(dry.Unmatched[0].Key), "LEGACY|TICKET#9") {
		t.Fatalf("dry run unmatched: %s", jsonString(dry.Unmatched))
	}
	ts, err := srv.Admin().Tenants(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range ts {
		if strings.HasPrefix(tn.Slug, strings.TrimSuffix(slug, "{tenant}")) {
			t.Fatalf("the dry run created tenant %s", tn.Slug)
		}
	}

	got := migrate("--create-tenants")
	if len(got.Tenants) != 2 || !got.Tenants[0].Created || !got.Tenants[1].Created || got.Tenants[0].TenantID == "" {
		t.Fatalf("migration: %+v", got)
	}
	want := loadTickets(t, "TENANT#1")
	strip := func(v string) string { return strings.TrimPrefix(v, "TENANT#1|") }
	model := map[[2]string]map[string]any{}
	for _, it := range want.Items {
		it = stripItem(it, strip)
		model[[2]string{s(it, "pk"), s(it, "sk")}] = it
	}
	for _, mt := range got.Tenants {
		c := rawClient{srv.Endpoint, srv.NewKey(t, mt.TenantID, "app")}
		all := items(c.call(t, "Scan", map[string]any{"TableName": "SupportTicket"}))
		if len(all) != 9 {
			t.Fatalf("tenant %s sees %d items, want its 9", mt.Slug, len(all))
		}
		for name, q := range map[string]map[string]any{
			"ticket":        {"KeyConditionExpression": "pk = :v1", "ExpressionAttributeValues": map[string]any{":v1": map[string]string{"S": "TICKET#1"}}},
			"summary":       {"KeyConditionExpression": "pk = :v1 and sk = :v2", "ExpressionAttributeValues": map[string]any{":v1": map[string]string{"S": "TICKET#1"}, ":v2": map[string]string{"S": "SUMMARY"}}},
			"open":          {"IndexName": "GSI1", "KeyConditionExpression": "tenant_status = :v1", "ExpressionAttributeValues": map[string]any{":v1": map[string]string{"S": "OPEN"}}},
			"open-resolver": {"IndexName": "GSI1", "KeyConditionExpression": "tenant_status = :v1 AND resolver = :v2", "ExpressionAttributeValues": map[string]any{":v1": map[string]string{"S": "OPEN"}, ":v2": map[string]string{"S": "johnd"}}},
			"aggregate":     {"KeyConditionExpression": "pk = :v1", "ExpressionAttributeValues": map[string]any{":v1": map[string]string{"S": "AGGREGATE"}}},
		} {
			q["TableName"] = "SupportTicket"
			res := items(c.call(t, "Query", q))
			var gotKeys, wantKeys []string
			for _, it := range res {
				k := [2]string{s(it, "pk"), s(it, "sk")}
				gotKeys = append(gotKeys, k[0]+" "+k[1])
				if m := model[k]; !reflect.DeepEqual(it, m) {
					t.Errorf("tenant %s, %s: item\n%s\nwant\n%s", mt.Slug, name, jsonString(it), jsonString(m))
				}
			}
			for _, k := range want.Expect[name] {
				wantKeys = append(wantKeys, strip(k[0])+" "+k[1])
			}
			slices.Sort(gotKeys)
			slices.Sort(wantKeys)
			if len(wantKeys) == 0 || !slices.Equal(gotKeys, wantKeys) {
				t.Errorf("tenant %s, %s: keys %v, want %v", mt.Slug, name, gotKeys, wantKeys)
			}
		}
	}
}

// stripItem returns a copy of a DynamoDB-JSON item with f applied to its
// pk and tenant_status strings.
func stripItem(it map[string]any, f func(string) string) map[string]any {
	out := map[string]any{}
	for k, v := range it {
		if m, ok := v.(map[string]any); ok && (k == "pk" || k == "tenant_status") {
			if str, ok := m["S"].(string); ok {
				v = map[string]any{"S": f(str)}
			}
		}
		out[k] = v
	}
	return out
}
