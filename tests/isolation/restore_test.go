package isolation

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// Attacks on in-place tenant restores (POST and GET
// /v1/tenants/{id}/restore). A's admin cannot restore or watch B (the
// answers are those for a tenant that does not exist, and A's attempt is
// audited in A's log); A's app and read keys cannot restore A; A's
// restore of its view of a shared table leaves B's items of the same keys
// alone, counts only A's changes (no size oracle), is refused without
// A's own point-in-time recovery even when B keeps the table's log (no
// inference of B's settings); B learns nothing of A's restore; A's test
// environment restores only its test items.

func restoreTimeNow(t *testing.T) time.Time {
	t.Helper()
	time.Sleep(5 * time.Millisecond)
	at := time.Now()
	time.Sleep(5 * time.Millisecond)
	return at
}

func waitRestore(t *testing.T, c *client.Client, tenant string) client.TenantRestore {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		r, err := c.Restore(context.Background(), tenant)
		if err != nil {
			t.Fatal(err)
		}
		if r.State == "done" {
			return r
		}
		if r.Error != "" || time.Now().After(deadline) {
			t.Fatalf("restore did not finish: %+v", r)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scanPairs(t *testing.T, c *dynamodb.Client, table string) []string {
	t.Helper()
	out, err := c.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range out.Items {
		got = append(got, it["pk"].(*types.AttributeValueMemberS).Value+"="+it["v"].(*types.AttributeValueMemberS).Value)
	}
	slices.Sort(got)
	return got
}

func TestRestoreIsolation(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	ctx := context.Background()
	op := srv.Client(srv.Operator)
	if _, err := op.CreateTable(ctx, isoTable("rst_shared")); err != nil {
		t.Fatal(err)
	}
	a, b := srv.NewTenant(t, "rstA", "admin"), srv.NewTenant(t, "rstB", "admin")
	da, db := srv.Client(a), srv.Client(b)
	ca, cb := client.New(srv.Endpoint, a.Key), client.New(srv.Endpoint, b.Key)
	// Only B keeps the shared table's log at first.
	enablePITRIso(t, db, "rst_shared")
	time.Sleep(1100 * time.Millisecond)
	put(t, da, "rst_shared", "same-key", "A-then")
	put(t, db, "rst_shared", "same-key", "B-then")
	at := restoreTimeNow(t)
	put(t, da, "rst_shared", "same-key", "A-now")
	for i := range 300 { // B's changes since: many, to show they are not counted
		put(t, db, "rst_shared", fmt.Sprintf("b%03d", i), "B-now")
	}

	// Without A's own point-in-time recovery: refused, naming the table
	// as lacking it for A although B keeps its log.
	_, err := ca.StartRestore(ctx, a.TenantID, client.RestoreRequest{ToTime: at})
	if err == nil || !strings.Contains(err.Error(), "PointInTimeRecoveryUnavailable") || !strings.Contains(err.Error(), "rst_shared") {
		t.Fatalf("restore without A's recovery: %v", err)
	}

	// A's admin naming B, and a tenant that does not exist: the same
	// refusal, audited in A's log; B's state unchanged.
	nobody := randHex(16)
	attempt := func(method, tenant string) (int, string) {
		var body any
		if method == "POST" {
			body = client.RestoreRequest{ToTime: at}
		}
		err := ca.Do(ctx, method, "/v1/tenants/"+tenant+"/restore", body, nil)
		var ce *client.Error
		if !errors.As(err, &ce) {
			t.Fatalf("%s restore of %s: %v", method, tenant, err)
		}
		return ce.Status, strings.ReplaceAll(ce.Message, tenant, "<T>")
	}
	tail := auditTailOf(t, srv, a.TenantID)
	for _, m := range []string{"POST", "GET"} {
		s1, m1 := attempt(m, b.TenantID)
		s2, m2 := attempt(m, nobody)
		if s1 != http.StatusNotFound || s1 != s2 || m1 != m2 {
			t.Errorf("%s: B's answer %d %q, nobody's %d %q", m, s1, m1, s2, m2)
		}
	}
	if n := deniedSince(t, srv, a.TenantID, tail, "restore"); n < 4 {
		t.Errorf("A's attempts on other tenants' restores: %d denials audited in A's log, want 4", n)
	}
	if _, err := cb.Restore(ctx, b.TenantID); err == nil || !strings.Contains(err.Error(), "not been restored") {
		t.Errorf("B's restore status after A's attempts: %v", err)
	}

	// A's app and read keys cannot restore A.
	for _, role := range []string{"app", "read"} {
		k := srv.NewKey(t, a.TenantID, role)
		_, err := client.New(srv.Endpoint, k.Key).StartRestore(ctx, a.TenantID, client.RestoreRequest{ToTime: at})
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusForbidden {
			t.Errorf("A's %s key starting a restore: %v", role, err)
		}
	}

	// With A's own recovery on (after `at`, so a new history), A restores
	// its view: B's item of the same key and B's later items stay, and
	// the counts are A's changes only.
	enablePITRIso(t, da, "rst_shared")
	time.Sleep(1100 * time.Millisecond)
	put(t, da, "rst_shared", "same-key", "A-then2")
	at2 := restoreTimeNow(t)
	put(t, da, "rst_shared", "same-key", "A-now2")
	put(t, da, "rst_shared", "a-late", "A-now2")
	put(t, db, "rst_shared", "same-key", "B-now2")
	bBefore := scanPairs(t, db, "rst_shared")
	if _, err := ca.StartRestore(ctx, a.TenantID, client.RestoreRequest{ToTime: at2}); err != nil {
		t.Fatal(err)
	}
	put(t, db, "rst_shared", "during", "B") // B is not fenced
	r := waitRestore(t, ca, a.TenantID)
	if got := scanPairs(t, da, "rst_shared"); !slices.Equal(got, []string{"same-key=A-then2"}) {
		t.Errorf("A after its restore: %v", got)
	}
	if got, want := scanPairs(t, db, "rst_shared"), append(slices.Clone(bBefore), "during=B"); !slices.Equal(got, sorted(want)) {
		t.Errorf("B after A's restore: %d items, want %d", len(got), len(want))
	}
	if len(r.Tables) != 1 || r.Tables[0].Keys != 2 || r.Tables[0].Changed != 2 {
		t.Errorf("A's restore counts %+v; want A's 2 changed keys only", r.Tables)
	}
	if strings.Contains(fmt.Sprint(r), b.TenantID) {
		t.Errorf("A's restore names B: %+v", r)
	}
	if _, err := cb.Restore(ctx, b.TenantID); err == nil {
		t.Error("B sees a restore: A's")
	}
	page, err := srv.Admin().Audit(ctx, b.TenantID, client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range page.Records {
		if strings.HasPrefix(rec.Action, "tenant.restore") || strings.Contains(rec.Target, a.TenantID) {
			t.Errorf("B's audit log holds A's restore: %+v", rec)
		}
	}

	// A's test environment: its restore rewinds only its test items.
	tk, err := srv.Admin().CreateKey(ctx, a.TenantID, client.CreateKeyRequest{Role: "admin", Env: "test"})
	if err != nil {
		t.Fatal(err)
	}
	ta := harness.Credential{TenantID: a.TenantID, AccessKeyID: tk.AccessKeyID, SecretAccessKey: tk.SecretAccessKey, Key: tk.Key}
	dta := srv.Client(ta)
	enablePITRIso(t, dta, "rst_shared")
	time.Sleep(1100 * time.Millisecond)
	at3 := restoreTimeNow(t)
	put(t, dta, "rst_shared", "test-late", "T")
	liveBefore := scanPairs(t, da, "rst_shared")
	put(t, da, "rst_shared", "live-late", "L")
	if _, err := client.New(srv.Endpoint, ta.Key).StartRestore(ctx, a.TenantID, client.RestoreRequest{ToTime: at3}); err != nil {
		t.Fatal(err)
	}
	waitRestore(t, client.New(srv.Endpoint, ta.Key), a.TenantID)
	if got := scanPairs(t, dta, "rst_shared"); len(got) != 0 {
		t.Errorf("A's test environment after its restore: %v", got)
	}
	if got := scanPairs(t, da, "rst_shared"); !slices.Equal(got, sorted(append(liveBefore, "live-late=L"))) {
		t.Errorf("A's live environment after the test restore: %v", got)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func enablePITRIso(t *testing.T, c *dynamodb.Client, table string) {
	t.Helper()
	if _, err := c.UpdateContinuousBackups(context.Background(), &dynamodb.UpdateContinuousBackupsInput{TableName: aws.String(table),
		PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
		t.Fatal(err)
	}
}

// auditTailOf returns the last seq of a tenant's audit log.
func auditTailOf(t *testing.T, srv *harness.Server, tenant string) uint64 {
	t.Helper()
	var last uint64
	for after := uint64(0); ; {
		page, err := srv.Admin().Audit(context.Background(), tenant, client.AuditQuery{After: after, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			last = r.Seq
		}
		if page.NextAfter == 0 {
			return last
		}
		after = page.NextAfter
	}
}

// deniedSince counts the denied records of tenant's log after seq whose
// action mentions what.
func deniedSince(t *testing.T, srv *harness.Server, tenant string, seq uint64, what string) int {
	t.Helper()
	page, err := srv.Admin().Audit(context.Background(), tenant, client.AuditQuery{After: seq, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range page.Records {
		if strings.HasPrefix(r.Outcome, "denied") && strings.Contains(r.Action, what) {
			n++
		}
	}
	return n
}
