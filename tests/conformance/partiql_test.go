package conformance

import (
	"errors"
	"strings"
	"testing"

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
}
