package conformance

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// stmt runs one statement with parameters.
func stmt(t *testing.T, c *dynamodb.Client, s string, params ...types.AttributeValue) (*dynamodb.ExecuteStatementOutput, error) {
	t.Helper()
	in := &dynamodb.ExecuteStatementInput{Statement: aws.String(s)}
	if len(params) > 0 {
		in.Parameters = params
	}
	return c.ExecuteStatement(ctxT(t), in)
}

// mustStmt runs one statement and fails the test on an error.
func mustStmt(t *testing.T, c *dynamodb.Client, s string, params ...types.AttributeValue) *dynamodb.ExecuteStatementOutput {
	t.Helper()
	out, err := stmt(t, c, s, params...)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return out
}

func sks(its []map[string]types.AttributeValue) string {
	var out []string
	for _, it := range its {
		out = append(out, str(it["sk"]))
	}
	return strings.Join(out, ",")
}

// TestPartiQLStatements: ExecuteStatement's SELECT, INSERT, UPDATE and
// DELETE through aws-sdk-go-v2, with DynamoDB's errors.
func TestPartiQLStatements(t *testing.T) {
	t.Parallel()
	srv, c := start(t)
	createTable(t, c, "Orders", keyDef{"pk", "S"}, &keyDef{"sk", "N"},
		map[string][2]*keyDef{"byStatus": {{"status", "S"}, {"created", "N"}}})

	// INSERT, with literals and parameters; an existing key is refused.
	for i, st := range []string{"open", "open", "closed", "open", "open"} {
		mustStmt(t, c, `INSERT INTO "Orders" VALUE {'pk': 'c1', 'sk': ?, 'status': ?, 'created': ?, 'info': {'city': 'Oslo', 'tags': ['a', 'b']}}`,
			N(string(rune('1'+i))), S(st), N(string(rune('1'+i))+"00"))
	}
	mustStmt(t, c, `INSERT INTO Orders VALUE {'pk': 'c2', 'sk': 1, 'status': 'open', 'created': 50}`)
	_, err := stmt(t, c, `INSERT INTO Orders VALUE {'pk': 'c1', 'sk': 1}`)
	wantCode(t, err, "DuplicateItemException")
	if !strings.Contains(err.Error(), "Duplicate primary key exists in table") {
		t.Errorf("duplicate: %v", err)
	}

	// SELECT of one item (a GetItem), with a projection of nested paths.
	out := mustStmt(t, c, `SELECT sk, info.city, info.tags[1] FROM Orders WHERE pk = ? AND sk = ?`, S("c1"), N("2"))
	if len(out.Items) != 1 || str(out.Items[0]["sk"]) != "2" || out.Items[0]["status"] != nil {
		t.Fatalf("get: %v", out.Items)
	}
	info := out.Items[0]["info"].(*types.AttributeValueMemberM).Value
	if str(info["city"]) != "Oslo" || len(info["tags"].(*types.AttributeValueMemberL).Value) != 1 {
		t.Errorf("projection: %v", info)
	}
	if out := mustStmt(t, c, `SELECT * FROM Orders WHERE pk = 'c1' AND sk = 99`); len(out.Items) != 0 {
		t.Errorf("missing item: %v", out.Items)
	}

	// SELECT of a partition (a Query): ORDER BY the sort key, filters,
	// Limit and NextToken.
	in := &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT * FROM Orders WHERE pk = 'c1' AND status = 'open' ORDER BY sk DESC`), Limit: aws.Int32(2)}
	var pages []string
	for {
		out, err := c.ExecuteStatement(ctxT(t), in)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, sks(out.Items))
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if got := strings.Join(pages, "|"); got != "5,4|2|1" {
		t.Errorf("pages = %q, want 5,4|2|1", got)
	}
	out = mustStmt(t, c, `SELECT * FROM Orders WHERE pk = 'c1' AND sk BETWEEN 2 AND 4`)
	if got := sks(out.Items); got != "2,3,4" {
		t.Errorf("range = %s", got)
	}

	// SELECT from an index.
	out = mustStmt(t, c, `SELECT * FROM "Orders"."byStatus" WHERE status = 'open' AND created >= 200`)
	if got := sks(out.Items); got != "2,4,5" {
		t.Errorf("index = %s", got)
	}

	// A SELECT without the partition key is a Scan, with its capacity.
	sc, err := c.ExecuteStatement(ctxT(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT pk FROM Orders WHERE status = 'closed'`),
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Items) != 1 || sc.ConsumedCapacity == nil || aws.ToString(sc.ConsumedCapacity.TableName) != "Orders" || aws.ToFloat64(sc.ConsumedCapacity.CapacityUnits) <= 0 {
		t.Errorf("scan: %v %+v", sc.Items, sc.ConsumedCapacity)
	}
	_, err = stmt(t, c, `SELECT * FROM Orders WHERE status = 'open' ORDER BY sk`)
	wantCode(t, err, "ValidationException")

	// UPDATE with SET and REMOVE, and conditions in WHERE.
	out = mustStmt(t, c, `UPDATE Orders SET qty = 5 SET info.city = 'Bergen' REMOVE created WHERE pk = 'c1' AND sk = 1 RETURNING ALL NEW *`)
	if len(out.Items) != 1 || str(out.Items[0]["qty"]) != "5" || out.Items[0]["created"] != nil {
		t.Errorf("update: %v", out.Items)
	}
	mustStmt(t, c, `UPDATE Orders SET qty = qty + ? WHERE pk = 'c1' AND sk = 1 AND qty = 5`, N("2"))
	_, err = c.ExecuteStatement(ctxT(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`UPDATE Orders SET qty = 0 WHERE pk = 'c1' AND sk = 1 AND qty > 100`),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || str(ccf.Item["qty"]) != "7" {
		t.Errorf("failed condition: %v (item %v)", err, ccf)
	}
	_, err = stmt(t, c, `UPDATE Orders SET qty = 1 WHERE pk = 'nope' AND sk = 1`)
	wantCode(t, err, "ConditionalCheckFailedException")
	_, err = stmt(t, c, `UPDATE Orders SET qty = 1 WHERE pk = 'c1'`)
	wantCode(t, err, "ValidationException")

	// DELETE.
	out = mustStmt(t, c, `DELETE FROM Orders WHERE pk = 'c1' AND sk = 3 RETURNING ALL OLD *`)
	if len(out.Items) != 1 || str(out.Items[0]["status"]) != "closed" {
		t.Errorf("delete returned %v", out.Items)
	}
	if out := mustStmt(t, c, `SELECT * FROM Orders WHERE pk = 'c1'`); sks(out.Items) != "1,2,4,5" {
		t.Errorf("after delete: %s", sks(out.Items))
	}

	// pk IN [...] reads each partition in turn, paged as one read.
	in = &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT pk, sk FROM Orders WHERE pk IN ['c2', ?, 'none']`),
		Parameters: []types.AttributeValue{S("c1")}, Limit: aws.Int32(2)}
	var got []string
	for range 10 {
		out, err := c.ExecuteStatement(ctxT(t), in)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			got = append(got, str(it["pk"])+"/"+str(it["sk"]))
		}
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if g := strings.Join(got, ","); g != "c2/1,c1/1,c1/2,c1/4,c1/5" {
		t.Errorf("IN = %s", g)
	}

	// pk = a OR pk = b reads the partitions it names (each once), not the
	// table: two eventually consistent queries of 0.5 units each.
	or, err := c.ExecuteStatement(ctxT(t), &dynamodb.ExecuteStatementInput{Statement: aws.String(`SELECT pk, sk FROM Orders WHERE pk = 'c2' OR pk = ? OR pk = 'c2'`),
		Parameters: []types.AttributeValue{S("none")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatal(err)
	}
	if len(or.Items) != 1 || str(or.Items[0]["pk"]) != "c2" || or.ConsumedCapacity == nil || aws.ToFloat64(or.ConsumedCapacity.CapacityUnits) != 1 {
		t.Errorf("OR of partitions: %v, capacity %v, want 1 item and 1 unit", or.Items, aws.ToFloat64(or.ConsumedCapacity.CapacityUnits))
	}

	// Errors as DynamoDB words them.
	for _, tc := range []struct{ stmt, code, msg string }{
		{`SELEC * FROM Orders`, "ValidationException", "Statement wasn't well formed, can't be processed: Expected data manipulation"},
		{`SELECT * FROM Orders WHERE`, "ValidationException", "Statement wasn't well formed, can't be processed"},
		{`SELECT * FROM Orders WHERE pk = ?`, "ValidationException", "Number of parameters in request and statement don't match."},
		{`SELECT * FROM Nope WHERE pk = 'a'`, "ResourceNotFoundException", ""},
		{`SELECT * FROM "Orders"."nope" WHERE pk = 'a'`, "ValidationException", "The table does not have the specified index: nope"},
	} {
		_, err := stmt(t, c, tc.stmt)
		if code(err) != tc.code || !strings.Contains(errMsg(err), tc.msg) {
			t.Errorf("%s: %v, want %s %q", tc.stmt, err, tc.code, tc.msg)
		}
	}

	// A read-only key may SELECT, not write.
	ro := srv.Client(srv.NewKey(t, srv.Default.TenantID, "read"))
	if out := mustStmt(t, ro, `SELECT * FROM Orders WHERE pk = 'c2' AND sk = 1`); len(out.Items) != 1 {
		t.Errorf("read key select: %v", out.Items)
	}
	for _, s := range []string{
		`INSERT INTO Orders VALUE {'pk': 'ro', 'sk': 1}`,
		`UPDATE Orders SET x = 1 WHERE pk = 'c2' AND sk = 1`,
		`DELETE FROM Orders WHERE pk = 'c2' AND sk = 1`,
	} {
		_, err := stmt(t, ro, s)
		wantCode(t, err, "AccessDeniedException")
	}
}

func errMsg(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAWSCLIPartiQL: `aws dynamodb execute-statement` works unchanged.
func TestAWSCLIPartiQL(t *testing.T) {
	needAWSCLI(t)
	t.Parallel()
	srv := harness.Start(t)
	c := srv.Default
	createTable(t, srv.Client(c), "Music", keyDef{"Artist", "S"}, &keyDef{"SongTitle", "S"}, nil)

	awsCLI(t, srv, c, "execute-statement", "--statement",
		`INSERT INTO Music VALUE {'Artist': 'Acme Band', 'SongTitle': 'Happy Day', 'Year': 2021}`)
	awsCLI(t, srv, c, "execute-statement", "--statement", `INSERT INTO Music VALUE {'Artist': ?, 'SongTitle': ?}`,
		"--parameters", `[{"S": "Acme Band"}, {"S": "PartiQL Rocks"}]`)
	out := awsCLI(t, srv, c, "execute-statement", "--statement",
		`SELECT * FROM Music WHERE Artist = ? ORDER BY SongTitle DESC`, "--parameters", `[{"S": "Acme Band"}]`)
	if its := items(t, out); len(its) != 2 || attrS(its[0], "SongTitle") != "PartiQL Rocks" {
		t.Errorf("select: %v", out)
	}
	awsCLI(t, srv, c, "execute-statement", "--statement",
		`UPDATE Music SET AwardsWon = 1 WHERE Artist = 'Acme Band' AND SongTitle = 'Happy Day'`)
	out = awsCLI(t, srv, c, "execute-statement", "--statement",
		`SELECT AwardsWon FROM Music WHERE Artist = 'Acme Band' AND SongTitle = 'Happy Day'`, "--consistent-read")
	if its := items(t, out); len(its) != 1 || its[0]["AwardsWon"] == nil {
		t.Errorf("after update: %v", out)
	}
	awsCLI(t, srv, c, "execute-statement", "--statement",
		`DELETE FROM Music WHERE Artist = 'Acme Band' AND SongTitle = 'Happy Day'`)
	out = awsCLI(t, srv, c, "execute-statement", "--statement", `SELECT * FROM Music`, "--return-consumed-capacity", "TOTAL")
	if its := items(t, out); len(its) != 1 {
		t.Errorf("after delete: %v", out)
	}
	if cc, _ := out["ConsumedCapacity"].(map[string]any); cc == nil || cc["TableName"] != "Music" {
		t.Errorf("ConsumedCapacity = %v", out["ConsumedCapacity"])
	}

	out = awsCLI(t, srv, c, "batch-execute-statement", "--statements",
		`[{"Statement": "INSERT INTO Music VALUE {'Artist': 'B', 'SongTitle': 'One'}"}, {"Statement": "INSERT INTO Music VALUE {'Artist': 'Acme Band', 'SongTitle': 'PartiQL Rocks'}"}]`)
	rs, _ := out["Responses"].([]any)
	if len(rs) != 2 || rs[0].(map[string]any)["Error"] != nil || rs[1].(map[string]any)["Error"].(map[string]any)["Code"] != "DuplicateItem" {
		t.Errorf("batch-execute-statement: %v", out)
	}
	awsCLI(t, srv, c, "execute-transaction", "--client-request-token", "t1", "--transact-statements",
		`[{"Statement": "DELETE FROM Music WHERE Artist = 'B' AND SongTitle = 'One'"}, {"Statement": "UPDATE Music SET Plays = 1 WHERE Artist = ? AND SongTitle = ?", "Parameters": [{"S": "Acme Band"}, {"S": "PartiQL Rocks"}]}]`)
	out = awsCLI(t, srv, c, "execute-transaction", "--transact-statements",
		`[{"Statement": "SELECT Plays FROM Music WHERE Artist = 'Acme Band' AND SongTitle = 'PartiQL Rocks'"}, {"Statement": "SELECT * FROM Music WHERE Artist = 'B' AND SongTitle = 'One'"}]`)
	if rs, _ := out["Responses"].([]any); len(rs) != 2 || rs[0].(map[string]any)["Item"] == nil || rs[1].(map[string]any)["Item"] != nil {
		t.Errorf("execute-transaction: %v", out)
	}
}

// TestPartiQLBatch: BatchExecuteStatement runs up to 25 statements, each
// failing alone with its error in its response.
func TestPartiQLBatch(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	createTable(t, c, "Books", keyDef{"id", "S"}, nil, nil)
	ctx := ctxT(t)
	mustStmt(t, c, `INSERT INTO Books VALUE {'id': 'b0', 'n': 1}`)

	w, err := c.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`INSERT INTO Books VALUE {'id': 'b1', 'n': 1}`)},
		{Statement: aws.String(`INSERT INTO Books VALUE {'id': 'b0'}`)},
		{Statement: aws.String(`UPDATE Books SET n = n + 1 WHERE id = ?`), Parameters: []types.AttributeValue{S("b0")}},
		{Statement: aws.String(`UPDATE Books SET n = 9 WHERE id = 'b0' AND n = 100`), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld},
		{Statement: aws.String(`INSERT INTO Books VALUES`)},
		{Statement: aws.String(`DELETE FROM Nope WHERE id = 'x'`)},
	}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range w.Responses {
		if r.Error != nil {
			got = append(got, string(r.Error.Code))
		} else {
			got = append(got, "ok:"+aws.ToString(r.TableName))
		}
	}
	if want := "ok:Books DuplicateItem ok:Books ConditionalCheckFailed ValidationError ResourceNotFound"; strings.Join(got, " ") != want {
		t.Errorf("responses = %v", got)
	}
	if r := w.Responses[3].Error; r == nil || str(r.Item["n"]) != "2" {
		t.Errorf("failed condition's item: %+v", r)
	}
	if len(w.ConsumedCapacity) != 1 || aws.ToFloat64(w.ConsumedCapacity[0].CapacityUnits) < 2 {
		t.Errorf("ConsumedCapacity = %+v", w.ConsumedCapacity)
	}

	r, err := c.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`SELECT * FROM Books WHERE id = 'b0'`), ConsistentRead: aws.Bool(true)},
		{Statement: aws.String(`SELECT n FROM Books WHERE id = 'b1'`)},
		{Statement: aws.String(`SELECT * FROM Books WHERE id = 'none'`)},
		{Statement: aws.String(`SELECT * FROM Books WHERE n = 1`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if str(r.Responses[0].Item["n"]) != "2" || str(r.Responses[1].Item["n"]) != "1" || r.Responses[1].Item["id"] != nil ||
		r.Responses[2].Item != nil || r.Responses[2].Error != nil || r.Responses[3].Error == nil || r.Responses[3].Error.Code != "ValidationError" {
		t.Errorf("reads = %+v", r.Responses)
	}

	// Reads and writes do not mix; at most 25 statements.
	_, err = c.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`SELECT * FROM Books WHERE id = 'b0'`)},
		{Statement: aws.String(`DELETE FROM Books WHERE id = 'b1'`)},
	}})
	wantCode(t, err, "ValidationException")
	many := make([]types.BatchStatementRequest, 26)
	for i := range many {
		many[i].Statement = aws.String(`SELECT * FROM Books WHERE id = 'b0'`)
	}
	_, err = c.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: many})
	wantCode(t, err, "ValidationException")
}

// TestPartiQLTransaction: ExecuteTransaction applies up to 100 statements
// together or not at all, with DynamoDB's cancellation reasons and
// ClientRequestToken idempotency.
func TestPartiQLTransaction(t *testing.T) {
	t.Parallel()
	_, c := start(t)
	createTable(t, c, "Accounts", keyDef{"id", "S"}, nil, nil)
	ctx := ctxT(t)
	mustStmt(t, c, `INSERT INTO Accounts VALUE {'id': 'a', 'bal': 10}`)
	mustStmt(t, c, `INSERT INTO Accounts VALUE {'id': 'b', 'bal': 0}`)

	transfer := []types.ParameterizedStatement{
		{Statement: aws.String(`UPDATE Accounts SET bal = bal - ? WHERE id = 'a' AND bal >= ?`), Parameters: []types.AttributeValue{N("4"), N("4")}},
		{Statement: aws.String(`UPDATE Accounts SET bal = bal + 4 WHERE id = 'b'`)},
		{Statement: aws.String(`INSERT INTO Accounts VALUE {'id': 'log1'}`)},
	}
	if _, err := c.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: transfer, ClientRequestToken: aws.String("tok-1")}); err != nil {
		t.Fatal(err)
	}
	// The same token again is a no-op, not a DuplicateItem.
	if _, err := c.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: transfer, ClientRequestToken: aws.String("tok-1")}); err != nil {
		t.Fatalf("idempotent retry: %v", err)
	}
	r, err := c.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
		{Statement: aws.String(`SELECT bal FROM Accounts WHERE id = 'a'`)},
		{Statement: aws.String(`SELECT * FROM Accounts WHERE id = 'b'`)},
	}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Responses) != 2 || str(r.Responses[0].Item["bal"]) != "6" || str(r.Responses[1].Item["bal"]) != "4" || len(r.ConsumedCapacity) == 0 {
		t.Errorf("balances = %+v, capacity %+v", r.Responses, r.ConsumedCapacity)
	}

	// A failing transaction changes nothing and says why, per statement.
	_, err = c.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
		{Statement: aws.String(`UPDATE Accounts SET bal = bal - 100 WHERE id = 'a' AND bal >= 100`), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld},
		{Statement: aws.String(`INSERT INTO Accounts VALUE {'id': 'b'}`)},
		{Statement: aws.String(`EXISTS(SELECT * FROM Accounts WHERE id = 'log1')`)},
		{Statement: aws.String(`INSERT INTO Accounts VALUE {'id': 'log2'}`)},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		t.Fatalf("got %v, want TransactionCanceledException", err)
	}
	var codes []string
	for _, r := range tce.CancellationReasons {
		codes = append(codes, aws.ToString(r.Code))
	}
	if got := strings.Join(codes, ","); got != "ConditionalCheckFailed,DuplicateItem,None,None" {
		t.Errorf("reasons = %s", got)
	}
	if str(tce.CancellationReasons[0].Item["bal"]) != "6" {
		t.Errorf("reason item = %v", tce.CancellationReasons[0].Item)
	}
	if out := mustStmt(t, c, `SELECT * FROM Accounts WHERE id = 'log2'`); len(out.Items) != 0 {
		t.Error("a cancelled transaction inserted an item")
	}

	// Reads and writes do not mix; at most 100 statements; a read names a
	// full key.
	for _, sts := range [][]types.ParameterizedStatement{
		{{Statement: aws.String(`SELECT * FROM Accounts WHERE id = 'a'`)}, {Statement: aws.String(`DELETE FROM Accounts WHERE id = 'b'`)}},
		{{Statement: aws.String(`SELECT * FROM Accounts`)}},
		make([]types.ParameterizedStatement, 101),
	} {
		for i := range sts {
			if sts[i].Statement == nil {
				sts[i].Statement = aws.String(`UPDATE Accounts SET x = 1 WHERE id = 'a'`)
			}
		}
		_, err := c.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: sts})
		wantCode(t, err, "ValidationException")
	}
}

// TestPartiQLMetering: the write units of statements are metered once,
// exactly as their item writes (1 WCU per small item, 2 in a transaction).
func TestPartiQLMetering(t *testing.T) {
	t.Parallel()
	srv, c := start(t)
	createTable(t, c, "Meter", keyDef{"id", "S"}, nil, nil)
	ctx := ctxT(t)
	from := time.Now().Add(-time.Minute)
	mustStmt(t, c, `INSERT INTO Meter VALUE {'id': 'a'}`)
	if _, err := c.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
		{Statement: aws.String(`INSERT INTO Meter VALUE {'id': 'b'}`)},
		{Statement: aws.String(`UPDATE Meter SET n = 1 WHERE id = 'a'`)},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
		{Statement: aws.String(`INSERT INTO Meter VALUE {'id': 'c'}`)},
		{Statement: aws.String(`DELETE FROM Meter WHERE id = 'b'`)},
	}}); err != nil {
		t.Fatal(err)
	}
	// NB: over a fleet of gateways each flushes its counters into the
	// engine every second; the report reads them there.
	settled(t, srv, func() string {
		var rep struct {
			ByOperation map[string]struct {
				ConsumedWriteUnits float64 `json:"consumed_write_units"`
			} `json:"by_operation"`
		}
		q := url.Values{"from": {from.UTC().Format(time.RFC3339)}, "to": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}
		if err := srv.Admin().Do(ctx, "GET", "/v1/tenants/"+srv.Default.TenantID+"/usage?"+q.Encode(), nil, &rep); err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, u := range rep.ByOperation {
			total += u.ConsumedWriteUnits
		}
		switch {
		case total > 1+2+4:
			t.Fatalf("write units metered: %v (%+v), more than 7", total, rep.ByOperation)
		case total != 1+2+4:
			return fmt.Sprintf("write units metered: %v (%+v), want 7", total, rep.ByOperation)
		}
		return ""
	})
}
