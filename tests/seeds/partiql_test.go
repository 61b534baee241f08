package seeds

// The access patterns of seeds 002 and 004 expressed as PartiQL: each
// statement returns exactly the items of the item API's query, as each
// tenant, and the leading-keys table refuses another tenant's prefix.

import (
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

var placeholder = regexp.MustCompile(`:[A-Za-z0-9_]+`)

// asPartiQL turns an access pattern's key condition into the SELECT that
// asks the same: each :name becomes a ?, its value a parameter in order.
func asPartiQL(p accessPattern) (string, []types.AttributeValue) {
	var params []types.AttributeValue
	where := placeholder.ReplaceAllStringFunc(p.kce, func(name string) string {
		params = append(params, &types.AttributeValueMemberS{Value: p.values[name]})
		return "?"
	})
	from := `"app_data"`
	if p.index != "" {
		from += `."` + p.index + `"`
	}
	return "SELECT * FROM " + from + " WHERE " + where, params
}

// checkPartiQL runs every pattern as a statement (following NextToken,
// two items a page) and compares its items with the item API's.
func checkPartiQL(t *testing.T, c *dynamodb.Client, patterns []accessPattern) {
	t.Helper()
	for _, p := range patterns {
		stmt, params := asPartiQL(p)
		in := &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt), Parameters: params, Limit: aws.Int32(2)}
		var got []item
		for {
			out, err := c.ExecuteStatement(ctxT(t), in)
			if err != nil {
				t.Fatalf("%s: %s: %v", p.name, stmt, err)
			}
			got = append(got, out.Items...)
			if out.NextToken == nil {
				break
			}
			in.NextToken = out.NextToken
		}
		if want := query(t, c, p); !reflect.DeepEqual(got, want) {
			var gk, wk []string
			for _, it := range got {
				gk = append(gk, keyString(it))
			}
			for _, it := range want {
				wk = append(wk, keyString(it))
			}
			t.Errorf("%s: %s returned\n\t%s\nthe item API\n\t%s", p.name, stmt, strings.Join(gk, "\n\t"), strings.Join(wk, "\n\t"))
		}
	}
}

// pql runs a statement with string parameters through every page.
func pql(t *testing.T, c rawClient, stmt string, params ...string) []map[string]any {
	t.Helper()
	in := map[string]any{"Statement": stmt}
	if len(params) > 0 {
		var ps []any
		for _, p := range params {
			ps = append(ps, map[string]any{"S": p})
		}
		in["Parameters"] = ps
	}
	var its []map[string]any
	for {
		out := c.call(t, "ExecuteStatement", in)
		its = append(its, items(out)...)
		tok, _ := out["NextToken"].(string)
		if tok == "" {
			return its
		}
		in["NextToken"] = tok
	}
}

// TestSeed004PartiQL runs seed 004's access patterns as PartiQL on a
// namespace table shared by two tenants with the same keys, and on a
// leading-keys table where the other tenant's prefix is refused.
func TestSeed004PartiQL(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, srv *harness.Server, tt *ticketTenant, other *ticketTenant) {
		c := rawClient{srv.Endpoint, tt.cred}
		ex := tt.data.Expect
		p := tt.prefix
		query := func(kce string, index string, vals ...string) []map[string]any {
			in := map[string]any{"TableName": "SupportTicket", "KeyConditionExpression": kce, "ExpressionAttributeValues": map[string]any{}}
			if index != "" {
				in["IndexName"] = index
			}
			for i, v := range vals {
				in["ExpressionAttributeValues"].(map[string]any)[[]string{":v1", ":v2"}[i]] = map[string]any{"S": v}
			}
			return items(c.call(t, "Query", in))
		}
		for _, tc := range []struct {
			name, stmt, kce, index string
			vals                   []string
			gsi                    bool
		}{
			{"ticket", `SELECT * FROM SupportTicket WHERE pk = ?`, "pk = :v1", "", []string{p + "|TICKET#1"}, false},
			{"summary", `SELECT * FROM SupportTicket WHERE pk = ? AND sk = ?`, "pk = :v1 and sk = :v2", "", []string{p + "|TICKET#1", "SUMMARY"}, false},
			{"open", `SELECT * FROM "SupportTicket"."GSI1" WHERE tenant_status = ?`, "tenant_status = :v1", "GSI1", []string{p + "|OPEN"}, true},
			{"open-resolver", `SELECT * FROM "SupportTicket"."GSI1" WHERE tenant_status = ? AND resolver = ?`, "tenant_status = :v1 AND resolver = :v2", "GSI1", []string{p + "|OPEN", "johnd"}, true},
			{"aggregate", `SELECT * FROM SupportTicket WHERE pk = ?`, "pk = :v1", "", []string{p + "|AGGREGATE"}, false},
		} {
			got := pql(t, c, tc.stmt, tc.vals...)
			if want := query(tc.kce, tc.index, tc.vals...); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: PartiQL %s\nitem API %s", tc.name, jsonString(got), jsonString(want))
			}
			tt.checkItems(t, tc.name, got, ex[tc.name], tc.gsi)
		}
		// "change the status of multiple tickets atomically"
		closed := p + "|CLOSED"
		c.call(t, "ExecuteTransaction", map[string]any{"TransactStatements": []any{
			map[string]any{"Statement": `UPDATE SupportTicket SET tenant_status = ? WHERE pk = ? AND sk = 'SUMMARY'`,
				"Parameters": []any{map[string]any{"S": closed}, map[string]any{"S": p + "|TICKET#1"}}},
			map[string]any{"Statement": `UPDATE SupportTicket SET tenant_status = ? WHERE pk = ? AND sk = 'SUMMARY'`,
				"Parameters": []any{map[string]any{"S": closed}, map[string]any{"S": p + "|TICKET#2"}}},
		}})
		tt.setStatus("1", closed)
		tt.setStatus("2", closed)
		tt.checkItems(t, "open after the transaction", pql(t, c, `SELECT * FROM "SupportTicket"."GSI1" WHERE tenant_status = ?`, p+"|OPEN"), ex["open-after-transact"], true)
		tt.checkItems(t, "closed after the transaction", pql(t, c, `SELECT * FROM "SupportTicket"."GSI1" WHERE tenant_status = ?`, closed), ex["closed-after-corrected-transact"], true)
		// The tenant's whole view, as a full-table SELECT, is its own.
		all := pql(t, c, `SELECT * FROM SupportTicket`)
		for _, it := range all {
			if m := tt.byKey[[2]string{s(it, "pk"), s(it, "sk")}]; !reflect.DeepEqual(it, m) {
				t.Errorf("SELECT * returned %s, want %s", jsonString(it), jsonString(m))
			}
		}
		if len(all) != len(tt.byKey) {
			t.Errorf("SELECT * returned %d items, want the tenant's %d", len(all), len(tt.byKey))
		}
		if other != nil && other.prefix != p {
			var e *apiError
			err := c.Call(ctxT(t), "ExecuteStatement", map[string]any{"Statement": `SELECT * FROM SupportTicket WHERE pk = ?`,
				"Parameters": []any{map[string]any{"S": other.prefix + "|TICKET#1"}}}, &map[string]any{})
			if !errors.As(err, &e) || e.code != "AccessDeniedException" {
				t.Errorf("SELECT with the other tenant's prefix: %v, want AccessDeniedException", err)
			}
		}
	}

	t.Run("namespace", func(t *testing.T) {
		t.Parallel()
		srv := harness.Start(t)
		createSupportTicket(t, srv)
		one := newTicketTenant(t, "tenant-1", srv.NewTenant(t, "acme", "app"), "TENANT#1")
		other := newTicketTenant(t, "other", srv.NewTenant(t, "globex", "app"), "TENANT#1")
		seedTickets(t, rawClient{srv.Endpoint, other.cred}, other.data.Items)
		seedTickets(t, rawClient{srv.Endpoint, one.cred}, one.data.Items)
		run(t, srv, one, other)
	})
	t.Run("leading-keys", func(t *testing.T) {
		t.Parallel()
		srv := harness.Start(t)
		createSupportTicket(t, srv,
			map[string]string{"Key": "tenantdb:isolation", "Value": "leading-keys"},
			map[string]string{"Key": "tenantdb:leading-key-pattern", "Value": "TENANT#{tenant}|*"})
		ca, cb := srv.NewTenant(t, "acme", "app"), srv.NewTenant(t, "globex", "app")
		a := newTicketTenant(t, "tenant-a", ca, "TENANT#"+ca.TenantID)
		b := newTicketTenant(t, "tenant-b", cb, "TENANT#"+cb.TenantID)
		seedTickets(t, rawClient{srv.Endpoint, a.cred}, a.data.Items)
		seedTickets(t, rawClient{srv.Endpoint, b.cred}, b.data.Items)
		run(t, srv, a, b)
	})
}
