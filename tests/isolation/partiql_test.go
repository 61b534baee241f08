package isolation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// partiqlAttacks repeats the item API's attacks as PartiQL statements:
// A's statements never see or change B's items in the namespace, silo
// and tenant-owned tables; on the leading-keys table every partition key
// a statement names must carry A's prefix; a NextToken of one tenant is
// refused to the other.
func (w *world) partiqlAttacks(t *testing.T) {
	A, B := w.A, w.B
	ctx := w.ctx
	exec := func(c *dynamodb.Client, stmt string, params ...types.AttributeValue) (*dynamodb.ExecuteStatementOutput, error) {
		in := &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt)}
		if len(params) > 0 {
			in.Parameters = params
		}
		return c.ExecuteStatement(ctx, in)
	}
	// all pages every page of a SELECT.
	all := func(t *testing.T, c *dynamodb.Client, stmt string, params ...types.AttributeValue) []map[string]types.AttributeValue {
		t.Helper()
		in := &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt), Limit: aws.Int32(3)}
		if len(params) > 0 {
			in.Parameters = params
		}
		var its []map[string]types.AttributeValue
		for range 1000 {
			out, err := c.ExecuteStatement(ctx, in)
			if err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
			its = append(its, out.Items...)
			if out.NextToken == nil {
				return its
			}
			in.NextToken = out.NextToken
		}
		t.Fatalf("%s: no end of pages", stmt)
		return nil
	}

	for _, table := range dataTables {
		q := `"` + table + `"`
		bKey := w.bOnlyKey(table)
		aKeys := ownKeys(A, table)
		if len(aKeys) == 0 {
			t.Fatalf("A has no items in %s", table)
		}
		w.attack(t, table+"/select-scan", func(t *testing.T) {
			got := onlyOwn(t, A, "SELECT scan", all(t, A.App, `SELECT * FROM `+q))
			if !slices.Equal(got, aKeys) {
				t.Errorf("SELECT * FROM %s: got %v, want A's %v", table, got, aKeys)
			}
			onlyOwn(t, A, "SELECT scan with filter", all(t, A.App, `SELECT * FROM `+q+` WHERE begins_with(secret, ?)`, S("")))
			onlyOwn(t, A, "SELECT gsi scan", all(t, A.App, `SELECT * FROM `+q+`."gsi"`))
		})
		w.attack(t, table+"/select-b-key", func(t *testing.T) {
			out, err := exec(A.App, `SELECT * FROM `+q+` WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"])
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Items) != 0 {
				t.Errorf("LEAK: SELECT of B's key returned %s", describeItem(out.Items[0]))
			}
			onlyOwn(t, A, "SELECT partition", all(t, A.App, `SELECT * FROM `+q+` WHERE pk = ?`, bKey["pk"]))
			onlyOwn(t, A, "SELECT partitions IN", all(t, A.App, `SELECT * FROM `+q+` WHERE pk IN [?, 'P0', 'P1']`, bKey["pk"]))
			onlyOwn(t, A, "SELECT gsi partition", all(t, A.App, `SELECT * FROM `+q+`."gsi" WHERE gpk = ?`, S(gpkv(B, table, 0))))
		})
		w.attack(t, table+"/write-b-key", func(t *testing.T) {
			before := w.getB(t, table, bKey)
			_, err := exec(A.App, `UPDATE `+q+` SET secret = 'pwned' WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"])
			if code(err) != "ConditionalCheckFailedException" {
				t.Errorf("UPDATE of B's key: %v, want ConditionalCheckFailedException", err)
			}
			if _, err := exec(A.App, `DELETE FROM `+q+` WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"]); err != nil {
				t.Fatalf("DELETE of B's key: %v", err)
			}
			// INSERT at B's key creates A's own item, never B's.
			if _, err := exec(A.App, `INSERT INTO `+q+` VALUE {'pk': ?, 'sk': ?, 'owner': 'A'}`, bKey["pk"], bKey["sk"]); err != nil {
				t.Fatalf("INSERT at B's key: %v", err)
			}
			if _, err := exec(A.App, `DELETE FROM `+q+` WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"]); err != nil {
				t.Fatalf("cleanup: %v", err)
			}
			if after := w.getB(t, table, bKey); fmt.Sprint(describeItem(after)) != fmt.Sprint(describeItem(before)) || after == nil {
				t.Errorf("LEAK: A's statements changed B's item: %s -> %s", describeItem(before), describeItem(after))
			}
			// A colliding key that both have: A's INSERT sees only its own.
			shared := w.sharedKey(table)
			_, err = exec(A.App, `INSERT INTO `+q+` VALUE {'pk': ?, 'sk': ?}`, shared["pk"], shared["sk"])
			if code(err) != "DuplicateItemException" {
				t.Errorf("INSERT at A's own colliding key: %v, want DuplicateItemException", err)
			}
		})
		w.attack(t, table+"/batch-and-transaction", func(t *testing.T) {
			before := w.getB(t, table, bKey)
			sel := `SELECT * FROM ` + q + ` WHERE pk = ? AND sk = ?`
			r, err := A.App.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
				{Statement: aws.String(sel), Parameters: []types.AttributeValue{bKey["pk"], bKey["sk"]}, ConsistentRead: aws.Bool(true)},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if it := r.Responses[0].Item; it != nil {
				t.Errorf("LEAK: batch SELECT of B's key returned %s", describeItem(it))
			}
			tr, err := A.App.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
				{Statement: aws.String(sel), Parameters: []types.AttributeValue{bKey["pk"], bKey["sk"]}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			if it := tr.Responses[0].Item; it != nil {
				t.Errorf("LEAK: transaction SELECT of B's key returned %s", describeItem(it))
			}
			_, err = A.App.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
				{Statement: aws.String(`UPDATE ` + q + ` SET secret = 'pwned' WHERE pk = ? AND sk = ?`), Parameters: []types.AttributeValue{bKey["pk"], bKey["sk"]},
					ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld},
			}})
			if code(err) != "TransactionCanceledException" || strings.Contains(message(err), B.secret) {
				t.Errorf("transaction UPDATE of B's key: %v, want TransactionCanceledException", err)
			}
			if after := w.getB(t, table, bKey); describeItem(after) != describeItem(before) {
				t.Errorf("LEAK: A's statements changed B's item")
			}
		})
		w.attack(t, table+"/next-token", func(t *testing.T) {
			stmt := `SELECT * FROM ` + q
			for _, pair := range [][2]*tenant{{A, B}, {B, A}} {
				out, err := pair[0].App.ExecuteStatement(ctx, &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt), Limit: aws.Int32(1)})
				if err != nil || out.NextToken == nil {
					t.Fatalf("%s's first page: %v (token %v)", pair[0].label, err, out)
				}
				_, err = pair[1].App.ExecuteStatement(ctx, &dynamodb.ExecuteStatementInput{Statement: aws.String(stmt), NextToken: out.NextToken})
				if code(err) != "ValidationException" {
					t.Errorf("%s's NextToken used by %s: %v, want ValidationException", pair[0].label, pair[1].label, err)
				}
			}
		})
	}

	// The leading-keys table: every partition key a statement names is
	// checked, as for the item API, and refusals are audited.
	table := tblLK
	q := `"` + table + `"`
	bKey := w.keyAt(B, table, 0, "S0")
	aKey := w.keyAt(A, table, 0, "S0")
	deny := func(t *testing.T, stmt string, params ...types.AttributeValue) {
		t.Helper()
		var err error
		w.denied(t, A.id, A.app.AccessKeyID, "dynamodb:ExecuteStatement", func() error { _, err = exec(A.App, stmt, params...); return err })
		if m := message(err); strings.Contains(m, B.id) {
			t.Errorf("LEAK: the AccessDenied message names B's tenant: %s", m)
		}
	}
	w.attack(t, table+"/leading-keys", func(t *testing.T) {
		if out, err := exec(A.App, `SELECT * FROM `+q+` WHERE pk = ? AND sk = ?`, aKey["pk"], aKey["sk"]); err != nil || len(out.Items) != 1 {
			t.Fatalf("A's own key: %v %v", err, out)
		}
		before := w.getB(t, table, bKey)
		deny(t, `SELECT * FROM `+q+` WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"])
		deny(t, `SELECT * FROM `+q+` WHERE pk = ?`, bKey["pk"])
		deny(t, `SELECT * FROM `+q+` WHERE pk IN [?, ?]`, aKey["pk"], bKey["pk"])
		deny(t, `SELECT * FROM `+q+`."gsi" WHERE gpk = ?`, S(gpkv(B, table, 0)))
		deny(t, `INSERT INTO `+q+` VALUE {'pk': ?, 'sk': 'new'}`, bKey["pk"])
		deny(t, `INSERT INTO `+q+` VALUE {'pk': ?, 'sk': 'new', 'gpk': ?}`, aKey["pk"], S(gpkv(B, table, 0)))
		deny(t, `UPDATE `+q+` SET secret = 'pwned' WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"])
		deny(t, `UPDATE `+q+` SET gpk = ? WHERE pk = ? AND sk = ?`, S(gpkv(B, table, 0)), aKey["pk"], aKey["sk"])
		deny(t, `DELETE FROM `+q+` WHERE pk = ? AND sk = ?`, bKey["pk"], bKey["sk"])
		if after := w.getB(t, table, bKey); describeItem(after) != describeItem(before) {
			t.Errorf("LEAK: refused statements changed B's item")
		}
		onlyOwn(t, A, "SELECT scan of the leading-keys table", all(t, A.App, `SELECT * FROM `+q))

		// A transaction naming B's partition is refused whole, and audited.
		w.denied(t, A.id, A.app.AccessKeyID, "dynamodb:ExecuteTransaction", func() error {
			_, err := A.App.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
				{Statement: aws.String(`INSERT INTO ` + q + ` VALUE {'pk': ?, 'sk': 'tx'}`), Parameters: []types.AttributeValue{aKey["pk"]}},
				{Statement: aws.String(`DELETE FROM ` + q + ` WHERE pk = ? AND sk = ?`), Parameters: []types.AttributeValue{bKey["pk"], bKey["sk"]}},
			}})
			return err
		})
		w.denied(t, A.id, A.app.AccessKeyID, "dynamodb:ExecuteTransaction", func() error {
			_, err := A.App.ExecuteTransaction(ctx, &dynamodb.ExecuteTransactionInput{TransactStatements: []types.ParameterizedStatement{
				{Statement: aws.String(`SELECT * FROM ` + q + ` WHERE pk = ? AND sk = ?`), Parameters: []types.AttributeValue{bKey["pk"], bKey["sk"]}},
			}})
			return err
		})
		// A batch refuses the statement naming B's partition, alone, and
		// the refusal is audited.
		since := w.auditTail(t, A.id)
		r, err := A.App.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: []types.BatchStatementRequest{
			{Statement: aws.String(`UPDATE ` + q + ` SET secret = 'pwned' WHERE pk = ? AND sk = ?`), Parameters: []types.AttributeValue{bKey["pk"], bKey["sk"]}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if e := r.Responses[0].Error; e == nil || e.Code != types.BatchStatementErrorCodeEnumAccessDenied || strings.Contains(aws.ToString(e.Message), B.id) {
			t.Errorf("batch UPDATE of B's partition: %+v, want AccessDenied", e)
		}
		w.wantAudited(t, A.id, since, A.app.AccessKeyID, "dynamodb:BatchExecuteStatement")
		if out, _ := exec(A.App, `SELECT * FROM `+q+` WHERE pk = ? AND sk = 'tx'`, aKey["pk"]); out == nil || len(out.Items) != 0 {
			t.Errorf("a refused transaction wrote A's item: %v", out)
		}
		if after := w.getB(t, table, bKey); describeItem(after) != describeItem(before) {
			t.Errorf("LEAK: refused statements changed B's item")
		}
	})
}
