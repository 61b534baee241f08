package verify

// The data-plane families: A attacks B through the DynamoDB API.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

// errorOf returns the code and message of an API error ("", "" for
// none).
func errorOf(err error) (code, msg string) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode(), ae.ErrorMessage()
	}
	if err != nil {
		return "error", err.Error()
	}
	return "", ""
}

// refused is the finding of an attack that must be refused.
func refused(err error) string {
	if err == nil {
		return "succeeded; it must be refused"
	}
	return ""
}

// notFound is the finding of an attack on a table that is not the
// attacker's: it must look exactly like a table that does not exist.
func notFound(err error) string {
	if err == nil {
		return "succeeded; the table must not exist for the attacker"
	}
	if !isCode(err, "ResourceNotFoundException") {
		code, _ := errorOf(err)
		return "answered " + code + ", not ResourceNotFoundException: the table's existence shows"
	}
	return ""
}

// ownOnly is the finding of a read that must return only a's own items.
func ownOnly(a *actor, items []map[string]types.AttributeValue) string {
	for _, it := range items {
		if s := str(it["secret"]); s != "" && s != a.secret {
			return "returned another tenant environment's item"
		}
	}
	return ""
}

func (r *run) tbl(k string) *string { return aws.String(r.tables[k]) }

func (r *run) counts(ctx context.Context) {
	A := r.A
	for _, k := range dataKinds {
		r.try(ctx, A.rec, "Scan COUNT "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), Select: types.SelectCount})
			if err == nil && int(out.Count) != r.aItems[k] {
				return fmt.Sprintf("counted %d items, the tenant has %d", out.Count, r.aItems[k])
			}
			return ""
		})
		r.try(ctx, A.rec, "Query COUNT "+k, func(ctx context.Context) string {
			out, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(k), Select: types.SelectCount,
				KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(pkv(A, k, 0))}})
			if err == nil && out.Count != 2 {
				return fmt.Sprintf("counted %d items in a partition where the tenant has 2", out.Count)
			}
			return ""
		})
		r.try(ctx, A.rec, "Scan ScannedCount "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k)})
			if err == nil && int(out.ScannedCount) != r.aItems[k] {
				return fmt.Sprintf("scanned %d items, the tenant has %d", out.ScannedCount, r.aItems[k])
			}
			return ""
		})
		r.try(ctx, A.rec, "parallel Scan "+k, func(ctx context.Context) string {
			n := 0
			for seg := range int32(4) {
				out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), Segment: aws.Int32(seg), TotalSegments: aws.Int32(4)})
				if err != nil {
					return ""
				}
				if f := ownOnly(A, out.Items); f != "" {
					return f
				}
				n += len(out.Items)
			}
			if n != r.aItems[k] {
				return fmt.Sprintf("the segments held %d items, the tenant has %d", n, r.aItems[k])
			}
			return ""
		})
		r.try(ctx, A.rec, "Query of a partition only the victim has "+k, func(ctx context.Context) string {
			out, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(k),
				KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(pkv(A, k, 2))}})
			if err == nil && (out.Count != 0 || out.ScannedCount != 0 || len(out.Items) != 0 || out.LastEvaluatedKey != nil) {
				return fmt.Sprintf("Count %d, ScannedCount %d, %d items, a page token: %v", out.Count, out.ScannedCount, len(out.Items), out.LastEvaluatedKey != nil)
			}
			return ""
		})
		r.try(ctx, A.rec, "GSI Scan COUNT "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), IndexName: aws.String("gsi"), Select: types.SelectCount})
			if err == nil && int(out.Count) != r.aItems[k] {
				return fmt.Sprintf("counted %d index entries, the tenant has %d", out.Count, r.aItems[k])
			}
			return ""
		})
		r.try(ctx, A.rec, "DescribeTable ItemCount "+k, func(ctx context.Context) string {
			out, err := A.Read.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: r.tbl(k)})
			if err == nil && out.Table.ItemCount != nil && int(*out.Table.ItemCount) > r.aItems[k] {
				return fmt.Sprintf("ItemCount %d, the tenant has %d items", *out.Table.ItemCount, r.aItems[k])
			}
			return ""
		})
	}
}

func (r *run) indexes(ctx context.Context) {
	A := r.A
	for _, k := range dataKinds {
		for g := range 2 {
			r.try(ctx, A.rec, fmt.Sprintf("Query gsi G%d %s", g, k), func(ctx context.Context) string {
				out, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(k), IndexName: aws.String("gsi"),
					KeyConditionExpression: aws.String("gpk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S(gpkv(A, k, g))}})
				if err != nil {
					return ""
				}
				if f := ownOnly(A, out.Items); f != "" {
					return f
				}
				if len(out.Items) != 2 {
					return fmt.Sprintf("returned %d entries, the tenant has 2", len(out.Items))
				}
				return ""
			})
		}
		r.try(ctx, A.rec, "Query lsi "+k, func(ctx context.Context) string {
			out, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(k), IndexName: aws.String("lsi"),
				KeyConditionExpression:    aws.String("pk = :p AND lsk >= :l"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(pkv(A, k, 1)), ":l": S("L")}})
			if err != nil {
				return ""
			}
			return ownOnly(A, out.Items)
		})
		r.try(ctx, A.rec, "Scan gsi "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), IndexName: aws.String("gsi")})
			if err != nil {
				return ""
			}
			return ownOnly(A, out.Items)
		})
	}
	// The victim's GSI partition on the leading-keys table.
	r.try(ctx, A.rec, "Query gsi with the victim's leading key", func(ctx context.Context) string {
		_, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(kLK), IndexName: aws.String("gsi"),
			KeyConditionExpression: aws.String("gpk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S(gpkv(r.B, kLK, 0))}})
		return refused(err)
	})
	r.try(ctx, A.rec, "Query lsi with the victim's leading key", func(ctx context.Context) string {
		_, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(kLK), IndexName: aws.String("lsi"),
			KeyConditionExpression: aws.String("pk = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(pkv(r.B, kLK, 0))}})
		return refused(err)
	})
}

func (r *run) pageTokens(ctx context.Context) {
	A := r.A
	for _, k := range dataKinds {
		scanTok, gsiTok := r.lekB[k+"/scan"], r.lekB[k+"/gsi"]
		r.try(ctx, A.rec, "Scan from the victim's page token "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), ExclusiveStartKey: scanTok})
			if err != nil {
				return ""
			}
			if k == kLK {
				return "succeeded with a page token under another tenant's leading key"
			}
			return ownOnly(A, out.Items)
		})
		r.try(ctx, A.rec, "Scan from a forged page token on a victim-only key "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), ExclusiveStartKey: keyOf(r.bItems[k][8])})
			if err != nil {
				return ""
			}
			return ownOnly(A, out.Items)
		})
		r.try(ctx, A.rec, "Query gsi from the victim's page token "+k, func(ctx context.Context) string {
			out, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(k), IndexName: aws.String("gsi"), ExclusiveStartKey: gsiTok,
				KeyConditionExpression: aws.String("gpk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S(gpkv(A, k, 0))}})
			if err != nil {
				return ""
			}
			return ownOnly(A, out.Items)
		})
		r.try(ctx, A.rec, "Scan gsi from the victim's page token "+k, func(ctx context.Context) string {
			out, err := A.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), IndexName: aws.String("gsi"), ExclusiveStartKey: gsiTok})
			if err != nil {
				return ""
			}
			if k == kLK {
				return "succeeded with a page token under another tenant's leading key"
			}
			return ownOnly(A, out.Items)
		})
	}
}

// sameError compares the answers to the same request on a victim's thing
// and on one that never existed, with the names swapped.
func sameError(victim, never error, vName, nName string) string {
	vc, vm := errorOf(victim)
	nc, nm := errorOf(never)
	if vc == "" {
		return "succeeded; it must be refused"
	}
	if vc != nc || strings.ReplaceAll(vm, vName, nName) != nm {
		return fmt.Sprintf("answered %s %q, but %s %q for one that does not exist", vc, vm, nc, nm)
	}
	return ""
}

func (r *run) errorMessages(ctx context.Context) {
	A := r.A
	never := "tdbverify_" + r.id + "_never"
	bonly := r.tables[kBOnly]
	key := map[string]types.AttributeValue{"pk": S("P0"), "sk": S("S0")}
	ops := []struct {
		name string
		do   func(ctx context.Context, table string) error
	}{
		{"GetItem", func(ctx context.Context, t string) error {
			_, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(t), Key: key})
			return err
		}},
		{"PutItem", func(ctx context.Context, t string) error {
			_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(t), Item: key})
			return err
		}},
		{"Query", func(ctx context.Context, t string) error {
			_, err := A.App.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(t), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S("P0")}})
			return err
		}},
		{"DescribeTable", func(ctx context.Context, t string) error {
			_, err := A.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t)})
			return err
		}},
		{"DeleteTable", func(ctx context.Context, t string) error {
			_, err := A.Admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
			return err
		}},
		{"UpdateTable", func(ctx context.Context, t string) error {
			_, err := A.Admin.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String(t), BillingMode: types.BillingModePayPerRequest})
			return err
		}},
	}
	for _, op := range ops {
		r.try(ctx, A.rec, op.name+" on the victim's table", func(ctx context.Context) string {
			return sameError(op.do(ctx, bonly), op.do(ctx, never), bonly, never)
		})
	}
	// Creating a table of the victim's table's name is creating one's own.
	r.try(ctx, A.rec, "CreateTable of the victim's table name", func(ctx context.Context) string {
		err := r.createTable(ctx, A.Admin, bonly, nil)
		if isCode(err, "ResourceInUseException") {
			return "refused as in use: another tenant's table shows"
		}
		if err == nil {
			// Gone again before the next attacks on the victim's table.
			A.Admin.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(bonly)})
			for range 600 {
				if _, err := A.Admin.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(bonly)}); err != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		return ""
	})
	// A guessed leading key of the victim and of nobody.
	nobody := randHex(16)
	r.try(ctx, A.rec, "GetItem under the victim's leading key", func(ctx context.Context) string {
		get := func(id string) error {
			_, err := A.App.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kLK), Key: map[string]types.AttributeValue{"pk": S(lkPrefix(id) + "P0"), "sk": S("S0")}})
			return err
		}
		return sameError(get(r.B.id), get(nobody), r.B.id, nobody)
	})
	// A failed condition says nothing of the victim's item.
	r.try(ctx, A.rec, "conditional PutItem on a colliding key", func(ctx context.Context) string {
		_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kNS), Item: item(A, kNS, 2, 3),
			ConditionExpression: aws.String("attribute_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		if err == nil {
			return "the condition held on another tenant's item"
		}
		return ""
	})
	// The admin API's 404s.
	r.try(ctx, A.rec, "admin GET of the victim tenant", func(ctx context.Context) string {
		var out any
		errB := A.API.Do(ctx, "GET", "/v1/tenants/"+r.B.id, nil, &out)
		errN := A.API.Do(ctx, "GET", "/v1/tenants/"+nobody, nil, &out)
		return sameAdminError(errB, errN, r.B.id, nobody)
	})
}

// intact checks that B's items are exactly as B wrote them.
func (r *run) intact(ctx context.Context) {
	r.try(ctx, r.B.rec, "the victim's items are intact", func(ctx context.Context) string {
		for _, k := range append(dataKinds, kBOnly) {
			for _, it := range r.bItems[k] {
				out, err := r.B.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(k), Key: keyOf(it), ConsistentRead: aws.Bool(true)})
				if err != nil {
					return "" // not a leak; the run's own errors show elsewhere
				}
				if out.Item == nil || str(out.Item["secret"]) != r.B.secret || str(out.Item["n"]) != "1" {
					return fmt.Sprintf("item %s/%s of %s was changed or deleted by another tenant", str(it["pk"]), str(it["sk"]), r.tables[k])
				}
			}
			out, err := r.B.Read.Scan(ctx, &dynamodb.ScanInput{TableName: r.tbl(k), Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
			if err == nil && int(out.Count) != len(r.bItems[k]) {
				return fmt.Sprintf("%s holds %d items for the victim, which wrote %d", r.tables[k], out.Count, len(r.bItems[k]))
			}
		}
		return ""
	})
}

func (r *run) keys(ctx context.Context) {
	A := r.A
	for _, k := range []string{kNS, kSilo, kOwn} {
		for _, it := range r.bItems[k] {
			r.try(ctx, A.rec, "GetItem "+str(it["pk"])+"/"+str(it["sk"])+" "+k, func(ctx context.Context) string {
				out, err := A.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(k), Key: keyOf(it), ConsistentRead: aws.Bool(true)})
				if err != nil || out.Item == nil {
					return ""
				}
				return ownOnly(A, []map[string]types.AttributeValue{out.Item})
			})
		}
		// Writes on keys only the victim has: they create A's own items.
		r.try(ctx, A.rec, "UpdateItem ALL_OLD on a victim-only key "+k, func(ctx context.Context) string {
			out, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: r.tbl(k), Key: keyOf(item(r.B, k, 2, 1)),
				UpdateExpression: aws.String("SET n = n + :one, secret = :s"), ReturnValues: types.ReturnValueAllOld,
				ExpressionAttributeValues: map[string]types.AttributeValue{":one": N("1"), ":s": S(A.secret)}})
			if err == nil && len(out.Attributes) > 0 {
				return "returned another tenant's item as the old value"
			}
			return ""
		})
		r.try(ctx, A.rec, "PutItem ALL_OLD on a victim-only key "+k, func(ctx context.Context) string {
			out, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(k), Item: item(A, k, 2, 2), ReturnValues: types.ReturnValueAllOld})
			if err == nil && len(out.Attributes) > 0 {
				return "returned another tenant's item as the old value"
			}
			return ""
		})
		r.try(ctx, A.rec, "DeleteItem ALL_OLD on a victim-only key "+k, func(ctx context.Context) string {
			for _, s := range []int{2, 3} {
				out, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: r.tbl(k), Key: keyOf(item(r.B, k, 2, s)), ReturnValues: types.ReturnValueAllOld})
				if err == nil && len(out.Attributes) > 0 && str(out.Attributes["secret"]) != A.secret {
					return "deleted another tenant's item"
				}
			}
			return ""
		})
	}
	B := r.B
	for _, c := range []struct {
		name string
		do   func(ctx context.Context) error
	}{
		{"GetItem under the victim's leading key", func(ctx context.Context) error {
			_, err := A.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kLK), Key: keyOf(r.bItems[kLK][0])})
			return err
		}},
		{"PutItem under the victim's leading key", func(ctx context.Context) error {
			it := item(A, kLK, 0, 0)
			it["pk"] = S(pkv(B, kLK, 0))
			_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kLK), Item: it})
			return err
		}},
		{"PutItem with the victim's leading key on the GSI", func(ctx context.Context) error {
			it := item(A, kLK, 0, 0)
			it["gpk"] = S(gpkv(B, kLK, 0))
			_, err := A.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: r.tbl(kLK), Item: it})
			return err
		}},
		{"UpdateItem under the victim's leading key", func(ctx context.Context) error {
			_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: r.tbl(kLK), Key: keyOf(r.bItems[kLK][1]),
				UpdateExpression: aws.String("SET n = :z"), ExpressionAttributeValues: map[string]types.AttributeValue{":z": N("0")}})
			return err
		}},
		{"UpdateItem moving its GSI key under the victim's leading key", func(ctx context.Context) error {
			_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: r.tbl(kLK), Key: keyOf(item(A, kLK, 0, 0)),
				UpdateExpression: aws.String("SET gpk = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S(gpkv(B, kLK, 0))}})
			return err
		}},
		{"DeleteItem under the victim's leading key", func(ctx context.Context) error {
			_, err := A.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: r.tbl(kLK), Key: keyOf(r.bItems[kLK][2])})
			return err
		}},
		{"Query under the victim's leading key", func(ctx context.Context) error {
			_, err := A.Read.Query(ctx, &dynamodb.QueryInput{TableName: r.tbl(kLK), KeyConditionExpression: aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(pkv(B, kLK, 0))}})
			return err
		}},
		{"GetItem of the victim-only table", func(ctx context.Context) error {
			_, err := A.Read.GetItem(ctx, &dynamodb.GetItemInput{TableName: r.tbl(kBOnly), Key: keyOf(r.bItems[kBOnly][0])})
			if err == nil {
				return nil
			}
			if f := notFound(err); f != "" {
				return errors.New(f)
			}
			return err
		}},
	} {
		r.try(ctx, A.rec, c.name, func(ctx context.Context) string {
			err := c.do(ctx)
			if f := refused(err); f != "" {
				return f
			}
			if code, msg := errorOf(err); code == "error" {
				return msg
			}
			return ""
		})
	}
	r.intact(ctx)
}

func (r *run) batches(ctx context.Context) {
	A := r.A
	for _, k := range []string{kNS, kSilo, kOwn} {
		r.try(ctx, A.rec, "BatchGetItem of the victim's keys "+k, func(ctx context.Context) string {
			var keys []map[string]types.AttributeValue
			for _, it := range r.bItems[k] {
				keys = append(keys, keyOf(it))
			}
			out, err := A.Read.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{r.tables[k]: {Keys: keys}}})
			if err != nil {
				return ""
			}
			return ownOnly(A, out.Responses[r.tables[k]])
		})
		r.try(ctx, A.rec, "BatchWriteItem over the victim's keys "+k, func(ctx context.Context) string {
			var reqs []types.WriteRequest
			for p := range 3 {
				for s := range 4 {
					it := item(A, k, p, s)
					if p == 2 && s < 2 {
						reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(it)}})
						continue
					}
					reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
				}
			}
			A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{r.tables[k]: reqs}})
			return ""
		})
	}
	r.try(ctx, A.rec, "BatchGetItem with the victim-only table", func(ctx context.Context) string {
		_, err := A.Read.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			r.tables[kNS]:    {Keys: []map[string]types.AttributeValue{keyOf(item(A, kNS, 0, 0))}},
			r.tables[kBOnly]: {Keys: []map[string]types.AttributeValue{keyOf(r.bItems[kBOnly][0])}},
		}})
		return notFound(err)
	})
	r.try(ctx, A.rec, "BatchWriteItem into the victim-only table", func(ctx context.Context) string {
		_, err := A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			r.tables[kBOnly]: {{DeleteRequest: &types.DeleteRequest{Key: keyOf(r.bItems[kBOnly][0])}}},
		}})
		return notFound(err)
	})
	r.try(ctx, A.rec, "BatchGetItem under the victim's leading key", func(ctx context.Context) string {
		_, err := A.Read.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
			r.tables[kLK]: {Keys: []map[string]types.AttributeValue{keyOf(item(A, kLK, 0, 0)), keyOf(r.bItems[kLK][0])}},
		}})
		return refused(err)
	})
	r.try(ctx, A.rec, "BatchWriteItem under the victim's leading key", func(ctx context.Context) string {
		_, err := A.App.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
			r.tables[kLK]: {{DeleteRequest: &types.DeleteRequest{Key: keyOf(r.bItems[kLK][0])}}},
		}})
		return refused(err)
	})
	r.intact(ctx)
}

func (r *run) transactions(ctx context.Context) {
	A := r.A
	for _, k := range []string{kNS, kSilo, kOwn} {
		r.try(ctx, A.rec, "TransactGetItems of the victim's keys "+k, func(ctx context.Context) string {
			var gets []types.TransactGetItem
			for _, it := range r.bItems[k][:8] {
				gets = append(gets, types.TransactGetItem{Get: &types.Get{TableName: r.tbl(k), Key: keyOf(it)}})
			}
			out, err := A.Read.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: gets})
			if err != nil {
				return ""
			}
			var items []map[string]types.AttributeValue
			for _, rsp := range out.Responses {
				items = append(items, rsp.Item)
			}
			return ownOnly(A, items)
		})
		// A condition on the victim's secret must never hold: it would
		// confirm a guess at another tenant's data.
		r.try(ctx, A.rec, "ConditionCheck on the victim's secret "+k, func(ctx context.Context) string {
			_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{ConditionCheck: &types.ConditionCheck{TableName: r.tbl(k), Key: keyOf(item(r.B, k, 2, 3)),
					ConditionExpression: aws.String("secret = :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":s": S(r.B.secret)}}},
				{Put: &types.Put{TableName: r.tbl(k), Item: item(A, k, 1, 3)}},
			}})
			if err == nil {
				return "a condition on another tenant's item held"
			}
			return ""
		})
		r.try(ctx, A.rec, "conditional UpdateItem on the victim's secret "+k, func(ctx context.Context) string {
			_, err := A.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: r.tbl(k), Key: keyOf(item(r.B, k, 0, 3)),
				UpdateExpression: aws.String("SET n = :z"), ConditionExpression: aws.String("secret = :s"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": S(r.B.secret), ":z": N("0")}})
			if err == nil {
				return "a condition on another tenant's item held"
			}
			return ""
		})
		r.try(ctx, A.rec, "TransactWriteItems over the victim's keys "+k, func(ctx context.Context) string {
			var w []types.TransactWriteItem
			for _, it := range r.bItems[k][:6] {
				w = append(w, types.TransactWriteItem{Update: &types.Update{TableName: r.tbl(k), Key: keyOf(it),
					UpdateExpression: aws.String("SET n = :z"), ExpressionAttributeValues: map[string]types.AttributeValue{":z": N("0")}}})
			}
			A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: w})
			return ""
		})
	}
	r.try(ctx, A.rec, "TransactWriteItems reusing the victim's ClientRequestToken", func(ctx context.Context) string {
		token := "tdbverify-" + r.id + "-" + randHex(4)
		if _, err := r.B.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: r.tbl(kNS), Item: r.bItems[kNS][0]}}}}); err != nil {
			return ""
		}
		_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String(token),
			TransactItems: []types.TransactWriteItem{{Put: &types.Put{TableName: r.tbl(kNS), Item: item(A, kNS, 0, 0)}}}})
		if isCode(err, "IdempotentParameterMismatchException") {
			return "refused as a reuse of the token: another tenant's transaction shows"
		}
		return ""
	})
	r.try(ctx, A.rec, "TransactWriteItems into the victim-only table", func(ctx context.Context) string {
		_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: r.tbl(kBOnly), Key: keyOf(r.bItems[kBOnly][0])}},
		}})
		return refused(err)
	})
	r.try(ctx, A.rec, "TransactGetItems under the victim's leading key", func(ctx context.Context) string {
		_, err := A.Read.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
			{Get: &types.Get{TableName: r.tbl(kLK), Key: keyOf(r.bItems[kLK][0])}},
		}})
		return refused(err)
	})
	r.try(ctx, A.rec, "TransactWriteItems under the victim's leading key", func(ctx context.Context) string {
		_, err := A.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Delete: &types.Delete{TableName: r.tbl(kLK), Key: keyOf(r.bItems[kLK][0])}},
		}})
		return refused(err)
	})
	r.intact(ctx)
}

func (r *run) ttl(ctx context.Context) {
	A := r.A
	spec := &types.TimeToLiveSpecification{AttributeName: aws.String("n"), Enabled: aws.Bool(true)}
	r.try(ctx, A.rec, "UpdateTimeToLive on a shared table", func(ctx context.Context) string {
		_, err := A.Admin.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: r.tbl(kNS), TimeToLiveSpecification: spec})
		return refused(err)
	})
	r.try(ctx, A.rec, "UpdateTimeToLive on the victim-only table", func(ctx context.Context) string {
		_, err := A.Admin.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: r.tbl(kBOnly), TimeToLiveSpecification: spec})
		return notFound(err)
	})
	r.try(ctx, A.rec, "DescribeTimeToLive on the victim-only table", func(ctx context.Context) string {
		_, err := A.Admin.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: r.tbl(kBOnly)})
		return notFound(err)
	})
	// TTL on A's own table of the name the victim uses too: it must
	// expire only A's items (n = 1 is long past).
	r.try(ctx, A.rec, "UpdateTimeToLive on its own table of a shared name", func(ctx context.Context) string {
		A.Admin.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: r.tbl(kOwn), TimeToLiveSpecification: spec})
		out, err := r.B.Admin.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: r.tbl(kOwn)})
		if err == nil && out.TimeToLiveDescription != nil && out.TimeToLiveDescription.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
			return "enabled TTL on another tenant's table"
		}
		return ""
	})
}

func (r *run) tags(ctx context.Context) {
	A := r.A
	bonly, shared, own := r.arn+r.tables[kBOnly], r.arn+r.tables[kNS], r.arn+r.tables[kOwn]
	r.try(ctx, A.rec, "ListTagsOfResource of the victim-only table", func(ctx context.Context) string {
		_, err := A.Admin.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(bonly)})
		return refused(err)
	})
	r.try(ctx, A.rec, "TagResource of the victim-only table", func(ctx context.Context) string {
		_, err := A.Admin.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(bonly), Tags: []types.Tag{tag("x", "y")}})
		return refused(err)
	})
	r.try(ctx, A.rec, "UntagResource of the victim-only table", func(ctx context.Context) string {
		_, err := A.Admin.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: aws.String(bonly), TagKeys: []string{"owner"}})
		return refused(err)
	})
	r.try(ctx, A.rec, "TagResource of a shared table", func(ctx context.Context) string {
		_, err := A.Admin.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: aws.String(shared), Tags: []types.Tag{tag("x", "y")}})
		return refused(err)
	})
	r.try(ctx, A.rec, "UntagResource of a shared table's isolation", func(ctx context.Context) string {
		_, err := A.Admin.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: aws.String(r.arn + r.tables[kSilo]), TagKeys: []string{"tenantdb:isolation"}})
		return refused(err)
	})
	r.try(ctx, A.rec, "ListTagsOfResource of its own table of a shared name", func(ctx context.Context) string {
		A.Admin.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(own)})
		return ""
	})
	r.try(ctx, A.rec, "ListTables", func(ctx context.Context) string {
		out, err := A.Read.ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			return ""
		}
		for _, n := range out.TableNames {
			if n == r.tables[kBOnly] {
				return "lists another tenant's table"
			}
		}
		return ""
	})
}
