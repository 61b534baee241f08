package isolation

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/admin"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// writeOps and ddlOps are every write and DDL action, run with client c
// on the shared namespace table (or, for DDL, A's own table).
func (w *world) writeOps() []namedOp {
	ctx := w.ctx
	tn := aws.String(tblNS)
	key := map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0")}
	return []namedOp{
		{"PutItem", func(c *dynamodb.Client) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0")}})
			return err
		}},
		{"UpdateItem", func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key, UpdateExpression: aws.String("ADD n :o"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":o": N("1")}})
			return err
		}},
		{"DeleteItem", func(c *dynamodb.Client) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: key})
			return err
		}},
		{"BatchWriteItem", func(c *dynamodb.Client) error {
			_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tblNS: {{DeleteRequest: &types.DeleteRequest{Key: key}}}}})
			return err
		}},
		{"TransactWriteItems", func(c *dynamodb.Client) error {
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Delete: &types.Delete{TableName: tn, Key: key}}}})
			return err
		}},
	}
}

func (w *world) readOps(table string) []namedOp {
	ctx := w.ctx
	tn := aws.String(table)
	key := map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0")}
	return []namedOp{
		{"GetItem", func(c *dynamodb.Client) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: key})
			return err
		}},
		{"Query", func(c *dynamodb.Client) error {
			_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S("P0")}})
			return err
		}},
		{"Scan", func(c *dynamodb.Client) error {
			_, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: tn})
			return err
		}},
		{"BatchGetItem", func(c *dynamodb.Client) error {
			_, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: {Keys: []map[string]types.AttributeValue{key}}}})
			return err
		}},
		{"TransactGetItems", func(c *dynamodb.Client) error {
			_, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{{Get: &types.Get{TableName: tn, Key: key}}}})
			return err
		}},
	}
}

func (w *world) ddlOps(table string) []namedOp {
	ctx := w.ctx
	return []namedOp{
		{"CreateTable", func(c *dynamodb.Client) error { return w.tryCreate(c, "iso_denied_"+randHex(3), nil) }},
		{"UpdateTable", func(c *dynamodb.Client) error {
			_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(table), BillingMode: types.BillingModeProvisioned,
				ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}})
			return err
		}},
		{"DeleteTable", func(c *dynamodb.Client) error {
			_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)})
			return err
		}},
		{"UpdateTimeToLive", func(c *dynamodb.Client) error {
			_, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(table),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("exp"), Enabled: aws.Bool(true)}})
			return err
		}},
		{"TagResource", func(c *dynamodb.Client) error {
			_, err := c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(w.arn(table)), Tags: []types.Tag{{Key: aws.String("x"), Value: aws.String("y")}}})
			return err
		}},
		{"UntagResource", func(c *dynamodb.Client) error {
			_, err := c.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: aws.String(w.arn(table)), TagKeys: []string{"owner"}})
			return err
		}},
	}
}

type namedOp struct {
	name string
	run  func(c *dynamodb.Client) error
}

// arn returns the ARN of a table as the server writes it.
func (w *world) arn(table string) string {
	out, err := w.A.Read.DescribeTable(w.ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tblNS)})
	if err != nil {
		return "arn:aws:dynamodb:" + harness.Region + ":000000000000:table/" + table
	}
	return strings.Replace(aws.ToString(out.Table.TableArn), "table/"+tblNS, "table/"+table, 1)
}

// credentialAttacks attacks with the wrong role, the operator, narrowed
// temporary credentials, and expired, revoked, forged and suspended
// credentials.
func (w *world) credentialAttacks(t *testing.T) {
	A, B := w.A, w.B
	ctx := w.ctx

	w.attack(t, "read-key-writes", func(t *testing.T) {
		if _, err := A.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: w.sharedKey(tblNS)}); err != nil {
			t.Fatalf("read key reading: %v", err)
		}
		for _, o := range append(w.writeOps(), w.ddlOps(tblOwn)...) {
			w.denied(t, A.id, A.read.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(A.Read) })
		}
		w.aViewIntact(t)
	})

	w.attack(t, "app-key-DDL", func(t *testing.T) {
		for _, o := range w.ddlOps(tblOwn) {
			w.denied(t, A.id, A.app.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(A.App) })
		}
		if _, err := A.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tblOwn)}); err != nil {
			t.Errorf("A's own table after refused DDL: %v", err)
		}
	})

	w.attack(t, "operator-reads-and-writes-items", func(t *testing.T) {
		for _, table := range []string{tblNS, tblSilo, tblLK} {
			for _, o := range append(w.readOps(table), w.writeOps()...) {
				w.denied(t, "", w.srv.Operator.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(w.Op) })
			}
		}
		w.aViewIntact(t)
	})

	w.attack(t, "session-narrowed-to-one-table", func(t *testing.T) {
		s := w.session(t, A, admin.SessionRequest{Role: "app", Tables: []string{tblNS}})
		c := w.client(harness.Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
		if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: w.sharedKey(tblNS)}); err != nil {
			t.Fatalf("narrowed session on its table: %v", err)
		}
		for _, other := range []string{tblSilo, tblOwn} {
			for _, o := range w.readOps(other) {
				w.denied(t, A.id, s.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(c) })
			}
		}
		key := map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0")}
		w.denied(t, A.id, s.AccessKeyID, "dynamodb:PutItem", func() error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tblSilo), Item: key})
			return err
		})
		w.denied(t, A.id, s.AccessKeyID, "dynamodb:BatchGetItem", func() error {
			_, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				tblNS: {Keys: []map[string]types.AttributeValue{key}}, tblSilo: {Keys: []map[string]types.AttributeValue{key}}}})
			return err
		})
		w.denied(t, A.id, s.AccessKeyID, "dynamodb:BatchWriteItem", func() error {
			_, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				tblNS:   {{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": S("P0"), "sk": S("narrowed")}}}},
				tblSilo: {{DeleteRequest: &types.DeleteRequest{Key: key}}}}})
			return err
		})
		w.denied(t, A.id, s.AccessKeyID, "dynamodb:TransactWriteItems", func() error {
			_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{Put: &types.Put{TableName: aws.String(tblNS), Item: map[string]types.AttributeValue{"pk": S("P0"), "sk": S("narrowed")}}},
				{ConditionCheck: &types.ConditionCheck{TableName: aws.String(tblSilo), Key: key, ConditionExpression: aws.String("attribute_exists(pk)")}}}})
			return err
		})
		got, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: map[string]types.AttributeValue{"pk": S("P0"), "sk": S("narrowed")}})
		if err != nil || got.Item != nil {
			t.Errorf("a refused batch or transaction of the narrowed session wrote: %v %v", err, got.Item)
		}
		lt, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(lt.TableNames, []string{tblNS}) {
			t.Errorf("narrowed session's ListTables: %v, want [%s]", lt.TableNames, tblNS)
		}
	})

	// Metadata of tables outside a narrowed session's policy: ListTables
	// hides them, so DescribeTable (ItemCount, TableSizeBytes),
	// DescribeTimeToLive and ListTagsOfResource must refuse them too (as
	// IAM does for a policy naming one table).
	w.attack(t, "session-narrowed-metadata-outside-policy", func(t *testing.T) {
		s := w.session(t, A, admin.SessionRequest{Role: "app", Tables: []string{tblNS}})
		c := w.client(harness.Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
		for _, o := range []namedOp{
			{"DescribeTable", func(c *dynamodb.Client) error {
				_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tblSilo)})
				return err
			}},
			{"DescribeTimeToLive", func(c *dynamodb.Client) error {
				_, err := c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(tblSilo)})
				return err
			}},
			{"ListTagsOfResource", func(c *dynamodb.Client) error {
				_, err := c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(w.arn(tblSilo))})
				return err
			}},
		} {
			w.denied(t, A.id, s.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(c) })
		}
	})

	// A narrowed admin session may manage only the tables of its policy.
	w.attack(t, "session-narrowed-admin-DDL-outside-policy", func(t *testing.T) {
		const scratch = "iso_scratch"
		w.createTable(t, A.Admin, scratch, nil)
		s := w.session(t, A, admin.SessionRequest{Role: "admin", Tables: []string{tblNS}})
		c := w.client(harness.Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
		for _, o := range w.ddlOps(scratch)[1:] { // UpdateTable, DeleteTable, UpdateTimeToLive, TagResource, UntagResource
			w.denied(t, A.id, s.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(c) })
		}
		if _, err := A.Admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(scratch)}); err != nil {
			t.Errorf("A's own scratch table after the narrowed session's attempts: %v", err)
		}
	})

	w.attack(t, "session-narrowed-actions-and-role", func(t *testing.T) {
		s := w.session(t, A, admin.SessionRequest{Role: "app", Actions: []string{"GetItem", "Query"}})
		c := w.client(harness.Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
		for _, o := range append(w.writeOps(), w.readOps(tblNS)[2:]...) { // writes, Scan, BatchGetItem, TransactGetItems
			w.denied(t, A.id, s.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(c) })
		}
		r := w.session(t, A, admin.SessionRequest{Role: "read"})
		rc := w.client(harness.Credential{AccessKeyID: r.AccessKeyID, SecretAccessKey: r.SecretAccessKey}, r.SessionToken, A.rec)
		for _, o := range w.writeOps() {
			w.denied(t, A.id, r.AccessKeyID, "dynamodb:"+o.name, func() error { return o.run(rc) })
		}
		w.aViewIntact(t)
	})

	// PartiQL is authorized by the statement's IAM action, under which the
	// session's tables are checked too.
	w.attack(t, "session-narrowed-partiql", func(t *testing.T) {
		key := w.keyAt(A, tblNS, 0, "S0")
		exec := func(c *dynamodb.Client, stmt string) error {
			_, err := c.ExecuteStatement(ctx, &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt),
				Parameters: []types.AttributeValue{key["pk"], key["sk"]}})
			return err
		}
		sel := `SELECT * FROM "` + tblNS + `" WHERE pk = ? AND sk = ?`
		s := w.session(t, A, admin.SessionRequest{Role: "app", Tables: []string{tblNS}, Actions: []string{"dynamodb:PartiQLSelect"}})
		c := w.client(harness.Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec)
		if err := exec(c, sel); err != nil {
			t.Fatalf("SELECT with PartiQLSelect: %v", err)
		}
		w.denied(t, A.id, s.AccessKeyID, "dynamodb:ExecuteStatement", func() error {
			return exec(c, `DELETE FROM "`+tblNS+`" WHERE pk = ? AND sk = ?`)
		})
		w.denied(t, A.id, s.AccessKeyID, "dynamodb:ExecuteStatement", func() error {
			return exec(c, `SELECT * FROM "`+tblLK+`" WHERE pk = ? AND sk = ?`)
		})
		g := w.session(t, A, admin.SessionRequest{Role: "app", Actions: []string{"GetItem", "DeleteItem"}})
		gc := w.client(harness.Credential{AccessKeyID: g.AccessKeyID, SecretAccessKey: g.SecretAccessKey}, g.SessionToken, A.rec)
		w.denied(t, A.id, g.AccessKeyID, "dynamodb:ExecuteStatement", func() error { return exec(gc, sel) })
		w.aViewIntact(t)
	})

	w.attack(t, "session-token-swapped", func(t *testing.T) {
		since := w.auditTail(t, A.id)
		defer func() { w.probeAudited(t, A.id, since, "", "swapped session tokens") }()
		s1 := w.session(t, A, admin.SessionRequest{Role: "read"})
		s2 := w.session(t, A, admin.SessionRequest{Role: "admin"})
		sb := w.sessionAsOperator(t, B, admin.SessionRequest{Role: "admin"})
		for _, c := range []harness.Credential{
			{AccessKeyID: s1.AccessKeyID, SecretAccessKey: s1.SecretAccessKey},
			{AccessKeyID: s1.AccessKeyID, SecretAccessKey: s2.SecretAccessKey},
		} {
			for _, tok := range []string{s2.SessionToken, sb.SessionToken, ""} {
				_, err := w.client(c, tok, A.rec).ListTables(ctx, &dynamodb.ListTablesInput{})
				if code(err) != "UnrecognizedClientException" && code(err) != "InvalidSignatureException" {
					t.Errorf("session key with another session's token: %v", err)
				}
			}
		}
		// B's session secret with A's key id.
		_, err := w.client(harness.Credential{AccessKeyID: A.app.AccessKeyID, SecretAccessKey: sb.SecretAccessKey}, sb.SessionToken, A.rec).
			ListTables(ctx, &dynamodb.ListTablesInput{})
		if err == nil {
			t.Errorf("A's key id with B's session token was accepted")
		}
	})

	w.attack(t, "expired-key", func(t *testing.T) {
		exp := time.Now().Add(2 * time.Second)
		k := w.newKey(t, A.id, "admin", "live", &exp)
		c := w.client(k, "", A.rec)
		if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
			w.note("expired-key: the key failed before its expiry (slow machine?): %v", err)
		}
		time.Sleep(time.Until(exp) + 200*time.Millisecond)
		since := w.auditTail(t, A.id)
		_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: w.sharedKey(tblNS)})
		wantCode(t, err, "ExpiredTokenException")
		w.wantAudited(t, A.id, since, k.AccessKeyID, "auth:sigv4")
		since = w.auditTail(t, A.id)
		_, err = (&client.Client{Endpoint: w.srv.Endpoint, Key: k.Key}).Keys(ctx, A.id)
		w.wantAdminStatus(t, err, http.StatusUnauthorized)
		w.wantAudited(t, A.id, since, k.AccessKeyID, "auth:bearer")
	})

	w.attack(t, "revoked-and-rotated-key", func(t *testing.T) {
		k := w.newKey(t, A.id, "app", "live", nil)
		c := w.client(k, "", A.rec)
		if _, err := c.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.admin.RevokeKey(ctx, A.id, k.AccessKeyID); err != nil {
			t.Fatal(err)
		}
		since := w.auditTail(t, A.id)
		_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: w.sharedKey(tblNS)})
		wantCode(t, err, "UnrecognizedClientException")
		w.wantAudited(t, A.id, since, k.AccessKeyID, "auth:sigv4")

		k2 := w.newKey(t, A.id, "admin", "live", nil)
		nk, err := w.admin.RotateKey(ctx, A.id, k2.AccessKeyID, 0)
		if err != nil {
			t.Fatal(err)
		}
		since = w.auditTail(t, A.id)
		_, err = w.client(k2, "", A.rec).ListTables(ctx, &dynamodb.ListTablesInput{})
		wantCode(t, err, "UnrecognizedClientException")
		w.wantAudited(t, A.id, since, k2.AccessKeyID, "auth:sigv4")
		since = w.auditTail(t, A.id)
		_, err = (&client.Client{Endpoint: w.srv.Endpoint, Key: k2.Key}).Keys(ctx, A.id)
		w.wantAdminStatus(t, err, http.StatusUnauthorized)
		w.wantAudited(t, A.id, since, k2.AccessKeyID, "auth:bearer")
		if _, err := w.client(harness.Credential{AccessKeyID: nk.AccessKeyID, SecretAccessKey: nk.SecretAccessKey}, "", A.rec).
			ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
			t.Errorf("the rotated key: %v", err)
		}
	})

	w.attack(t, "bad-signature", func(t *testing.T) {
		for _, victim := range []*tenant{A, B} {
			since := w.auditTail(t, victim.id)
			bad := harness.Credential{AccessKeyID: victim.app.AccessKeyID, SecretAccessKey: strings.Repeat("x", 40)}
			_, err := w.client(bad, "", A.rec).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: w.sharedKey(tblNS)})
			wantCode(t, err, "InvalidSignatureException")
			w.wantAudited(t, victim.id, since, victim.app.AccessKeyID, "auth:sigv4")
		}
	})

	w.attack(t, "bad-signature-flood-bounded-audit", func(t *testing.T) {
		// B knows A's key id and floods bad signatures in A's name: A's
		// log must account for every attempt without growing by one
		// record per attempt, stay verifiable, and keep A's own actions;
		// B's log is untouched.
		const flood = 600
		sinceA, sinceB := w.auditTail(t, A.id), w.auditTail(t, B.id)
		bad := harness.Credential{AccessKeyID: A.app.AccessKeyID, SecretAccessKey: strings.Repeat("y", 40)}
		c := w.client(bad, "", B.rec)
		start := time.Now()
		for i := range flood {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: w.sharedKey(tblNS)})
			wantCode(t, err, "InvalidSignatureException")
			if i == flood/2 {
				if _, err := w.admin.Keys(ctx, A.id); err != nil { // an operator action mid-flood
					t.Fatal(err)
				}
				if _, err := (&client.Client{Endpoint: w.srv.Endpoint, Key: A.admin.Key}).CreateKey(ctx, A.id, admin.CreateKeyRequest{Role: "read"}); err != nil {
					t.Fatal(err)
				}
			}
		}
		elapsed := time.Since(start)
		var recs, attempts, denials, summaries, others int64
		ownAction := false
		after := sinceA
		for {
			page, err := w.admin.Audit(ctx, A.id, client.AuditQuery{After: after, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Records {
				recs++
				switch {
				case r.Actor == A.app.AccessKeyID && r.Action == "auth:sigv4" && r.Outcome == audit.OutcomeDenied:
					denials++
				case r.Actor == A.app.AccessKeyID && r.Action == "auth:sigv4" && r.Outcome == audit.OutcomeDeniedCoalesced:
					summaries++
				default:
					others++
				}
				if r.Actor == A.app.AccessKeyID && r.Action == "auth:sigv4" {
					attempts += audit.DeniedAttempts(audit.Record(r))
				}
				if r.Action == "key.create" && r.Outcome == "ok" {
					ownAction = true
				}
			}
			if page.NextAfter == 0 || len(page.Records) == 0 {
				break
			}
			after = page.NextAfter
		}
		if attempts != flood {
			t.Errorf("A's log accounts for %d of %d denied attempts", attempts, flood)
		}
		// The rule (internal/audit, denials.go and fleetdenials.go): a
		// tenant's log takes denial records from one bucket, 100 at once
		// and 20 a second after that, fleet-wide (not per gateway); the
		// attempts over it are counted by each server (each gateway of a
		// fleet) and summarized one record per window of 1 s from its
		// first count, plus one when the log is read.
		const burst, rate, window = 100, 20, time.Second
		servers := int64(1)
		if gws, err := w.admin.Gateways(ctx); err == nil {
			servers = max(1, int64(len(gws.Gateways)))
		}
		if limit := int64(burst + rate*elapsed.Seconds()); denials > limit {
			t.Errorf("A's log recorded %d of %d attempts in %v one by one, want at most %d (%d at once, %d a second, across %d servers)", denials, flood, elapsed, limit, burst, rate, servers)
		}
		if limit := servers * (int64(elapsed/window) + 2); summaries > limit {
			t.Errorf("A's log got %d summaries of the rest in %v, want at most %d (one a window of %v, and one on reading, per each of %d servers)", summaries, elapsed, limit, window, servers)
		}
		if others > 2 {
			t.Errorf("A's log got %d records besides the flood's, want A's own two (the key's creation, and at most one more)", others)
		}
		if !ownAction {
			t.Errorf("A's own key creation during the flood is not in its log")
		}
		if v, err := w.admin.VerifyAudit(ctx, A.id); err != nil || !v.OK {
			t.Errorf("A's log does not verify after the flood: %+v %v", v, err)
		}
		// B's log gets nothing of the flood (B's own background work, such
		// as a TTL sync finishing, may still append its records).
		pageB, err := w.admin.Audit(ctx, B.id, client.AuditQuery{After: sinceB, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range pageB.Records {
			if r.Actor == A.app.AccessKeyID || strings.HasPrefix(r.Action, "auth:") {
				t.Errorf("B's log got a record of B's flood in A's name: %+v", r)
			}
		}
		t.Logf("%d attempts in %v over %d servers: %d records in A's log (%d denials, %d summaries, %d others)", flood, elapsed.Round(time.Millisecond), servers, recs, denials, summaries, others)
	})

	w.attack(t, "forged-key-ids-no-tenant-oracle", func(t *testing.T) {
		// A key id naming B's tenant (with A's key part, or another env)
		// must be refused exactly like one naming a tenant that does not
		// exist: no oracle for tenant ids or environments.
		parts := strings.Split(A.app.AccessKeyID, "_") // sk, env, tenant, id
		nobody := randHex(16)
		cases := [][2]string{
			{"sk_live_" + B.id + "_" + parts[3], "sk_live_" + nobody + "_" + parts[3]},
			{"sk_test_" + B.id + "_" + parts[3], "sk_test_" + nobody + "_" + parts[3]},
			{"sk_test_" + A.id + "_" + parts[3], "sk_test_" + nobody + "_" + parts[3]},
			{"tk_live_" + B.id + "_" + parts[3], "tk_live_" + nobody + "_" + parts[3]},
			{"sk_op_" + B.id + "_" + parts[3], "sk_op_" + nobody + "_" + parts[3]},
		}
		sinceA, sinceB := w.auditTail(t, A.id), w.auditTail(t, B.id)
		defer func() {
			w.probeAudited(t, A.id, sinceA, "", "forged key ids, in A's log")
			w.probeAudited(t, B.id, sinceB, "", "forged key ids naming B, in B's log")
		}()
		for _, cs := range cases {
			var shapes [2]string
			for i, akid := range cs {
				_, err := w.client(harness.Credential{AccessKeyID: akid, SecretAccessKey: A.app.SecretAccessKey}, "", A.rec).
					ListTables(ctx, &dynamodb.ListTablesInput{})
				if err == nil {
					t.Errorf("forged key id %s accepted", akid)
				}
				shapes[i] = shape(err, B.id, nobody)
			}
			if shapes[0] != shapes[1] {
				t.Errorf("LEAK: key id naming B's tenant answers %q, a non-existent tenant %q", shapes[0], shapes[1])
			}
		}
	})

	w.attack(t, "suspended-tenant", func(t *testing.T) {
		sAdmin := w.srv.NewTenant(t, "iso-suspended", "admin")
		sApp := w.newKey(t, sAdmin.TenantID, "app", "live", nil)
		c := w.client(sApp, "", A.rec)
		it := map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0"), "v": S("kept")}
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tblNS), Item: it}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.admin.SuspendTenant(ctx, sAdmin.TenantID); err != nil {
			t.Fatal(err)
		}
		since := w.auditTail(t, sAdmin.TenantID)
		for _, o := range append(w.readOps(tblNS), w.writeOps()...) {
			if err := o.run(c); code(err) != "TenantSuspendedException" {
				t.Errorf("%s by a suspended tenant: %v, want TenantSuspendedException", o.name, err)
			}
		}
		w.wantAudited(t, sAdmin.TenantID, since, sApp.AccessKeyID, "auth:sigv4")
		since = w.auditTail(t, sAdmin.TenantID)
		_, err := (&client.Client{Endpoint: w.srv.Endpoint, Key: sAdmin.Key}).Keys(ctx, sAdmin.TenantID)
		var ae *client.Error
		if !errors.As(err, &ae) || ae.Status < 400 {
			t.Errorf("admin API for a suspended tenant: %v", err)
		}
		w.wantAudited(t, sAdmin.TenantID, since, sAdmin.AccessKeyID, "auth:bearer")
		// A session minted for a suspended tenant does not work either.
		if s, err := w.admin.CreateSession(ctx, sAdmin.TenantID, admin.SessionRequest{Role: "app"}); err == nil {
			_, err := w.client(harness.Credential{AccessKeyID: s.AccessKeyID, SecretAccessKey: s.SecretAccessKey}, s.SessionToken, A.rec).
				GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: keyOf(it)})
			if code(err) != "TenantSuspendedException" {
				t.Errorf("a session of a suspended tenant: %v, want TenantSuspendedException", err)
			}
		}
		if _, err := w.admin.ResumeTenant(ctx, sAdmin.TenantID); err != nil {
			t.Fatal(err)
		}
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: keyOf(it)})
		if err != nil || out.Item == nil || str(out.Item["v"]) != "kept" {
			t.Errorf("after resume: %v %v", err, out)
		}
	})
}

// session mints temporary credentials for tn with tn's own admin key.
func (w *world) session(t *testing.T, tn *tenant, req admin.SessionRequest) admin.Session {
	t.Helper()
	s, err := (&client.Client{Endpoint: w.srv.Endpoint, Key: tn.admin.Key}).CreateSession(w.ctx, tn.id, req)
	if err != nil {
		t.Fatalf("session for %s: %v", tn.label, err)
	}
	return s
}

func (w *world) sessionAsOperator(t *testing.T, tn *tenant, req admin.SessionRequest) admin.Session {
	t.Helper()
	s, err := w.admin.CreateSession(w.ctx, tn.id, req)
	if err != nil {
		t.Fatalf("operator session for %s: %v", tn.label, err)
	}
	return s
}

func (w *world) wantAdminStatus(t *testing.T, err error, want int) {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != want {
		t.Errorf("admin API: %v, want HTTP %d", err, want)
	}
}

// aViewIntact checks that A's items in the shared namespace table are as
// A wrote them.
func (w *world) aViewIntact(t *testing.T) {
	t.Helper()
	got := onlyOwn(t, w.A, "A's view", w.scanAll(t, w.A.App, tblNS, ""))
	if !slices.Equal(got, ownKeys(w.A, tblNS)) {
		t.Errorf("A's items changed: %v", got)
	}
	for k, it := range w.A.items[tblNS] {
		out, err := w.A.App.GetItem(w.ctx, &dynamodb.GetItemInput{TableName: aws.String(tblNS), Key: keyOf(it)})
		if err != nil || !sameItem(out.Item, it) {
			t.Errorf("A's item %s changed: %v %s", k, err, describeItem(out.Item))
		}
	}
}
