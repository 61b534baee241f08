package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// The silo stores' metrics: /metrics has them under these names, one
// series each (no tenant label), and the health page shows them.
func TestSiloStoreHealth(t *testing.T) {
	s := harness.Start(t)
	ctx := context.Background()
	tn, err := s.Admin().CreateTenant(ctx, client.CreateTenantRequest{Name: "Silo Co", Slug: "silo-co", Tier: "silo"})
	if err != nil {
		t.Fatal(err)
	}
	db := s.Client(s.NewKey(t, tn.ID, "admin"))
	if _, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("things"), BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("things"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprint(i)}}}); err != nil {
			t.Fatal(err)
		}
	}

	req, _ := http.NewRequest("GET", s.Endpoint+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.Operator.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metrics := string(body)
	for name, want := range map[string]string{
		"tenantdb_silo_stores_open":                  `[1-9][0-9]*`,
		"tenantdb_silo_stores_in_use":                `[0-9]+`,
		"tenantdb_silo_store_opens_total":            `[1-9][0-9]*`,
		"tenantdb_silo_store_closes_total":           `[0-9]+`,
		"tenantdb_silo_store_evictions_total":        `[0-9]+`,
		"tenantdb_silo_open_stores_disk_usage_bytes": `[0-9.e+]+`,
		"tenantdb_silo_wal_sync_seconds_count":       `[1-9][0-9]*`,
		"tenantdb_silo_wal_sync_seconds_sum":         `[0-9.e+-]+`,
	} {
		// NB: one series, without labels.
		if !regexp.MustCompile(`(?m)^` + name + ` ` + want + `$`).MatchString(metrics) {
			t.Errorf("/metrics has no %s %s:\n%s", name, want, grepLines(metrics, "tenantdb_silo"))
		}
	}
	if strings.Contains(grepLines(metrics, "tenantdb_silo"), tn.ID) {
		t.Errorf("a silo metric names the tenant")
	}

	op := newBrowser(t, s)
	op.signIn(s.Operator.Key)
	st, page := op.get("/console/health")
	want(t, "health", st, page, 200, "Silo stores", `id="silo-open"`, "opened,", "fsyncs of all silo stores", "MiB by the open stores")
}

func grepLines(s, substr string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
