package isolation

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// byteSweep runs every read API, with every parameter combination below,
// as attacker x against the keys, partitions, index keys and page tokens
// of the victims; the recorder of x then fails the attack if any response
// byte holds a victim's secret value or tenant id. Errors are expected
// (most reads of the leading-keys table are refused) and only their bytes
// matter.
func (w *world) byteSweep(t *testing.T, x *tenant, victims ...*tenant) {
	ctx := w.ctx
	tables := []string{tblNS, tblSilo, tblLK, tblOwn, tblBOnly, w.never}
	names := map[string]string{"#s": "secret", "#b": "blob", "#o": "owner", "#t": "tags"}
	proj := "#s, #b, #o, #t, pk, sk, gpk"
	clients := map[string]*dynamodb.Client{"admin": x.Admin, "app": x.App, "read": x.Read}

	// The victims' keys and index key values per table.
	type vk struct {
		keys           []map[string]types.AttributeValue
		pks, gpks, g2s []string
		leks           []lekSet
	}
	vks := map[string]*vk{}
	for _, table := range tables {
		v := &vk{}
		seen := map[string]bool{}
		for _, vt := range victims {
			var ks []string
			for k := range vt.items[table] {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			for _, k := range ks {
				it := vt.items[table][k]
				if !seen["key"+k] {
					seen["key"+k] = true
					v.keys = append(v.keys, keyOf(it))
				}
				for _, p := range [][2]string{{"pk", str(it["pk"])}, {"gpk", str(it["gpk"])}, {"gpk2", str(it["gpk2"])}} {
					if seen[p[0]+p[1]] {
						continue
					}
					seen[p[0]+p[1]] = true
					switch p[0] {
					case "pk":
						v.pks = append(v.pks, p[1])
					case "gpk":
						v.gpks = append(v.gpks, p[1])
					case "gpk2":
						v.g2s = append(v.g2s, p[1])
					}
				}
			}
			if vt == w.B {
				if l, ok := w.lekB[table]; ok {
					v.leks = append(v.leks, l)
				}
			}
		}
		if len(v.pks) == 0 {
			v.pks, v.gpks, v.g2s = []string{"P0"}, []string{"G0"}, []string{"G0"}
			v.keys = []map[string]types.AttributeValue{{"pk": S("P0"), "sk": S("S0")}}
		}
		v.leks = append(v.leks, lekSet{})
		vks[table] = v
	}

	for _, table := range tables {
		v := vks[table]
		tn := aws.String(table)
		w.attack(t, x.label+"/"+table+"/GetItem", func(t *testing.T) {
			for _, c := range clients {
				for _, k := range v.keys {
					for _, cr := range []*bool{nil, aws.Bool(true)} {
						_, _ = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: k, ConsistentRead: cr, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
						_, _ = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: k, ConsistentRead: cr, ProjectionExpression: aws.String(proj), ExpressionAttributeNames: names})
					}
					_, _ = c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: k, AttributesToGet: []string{"secret", "blob", "owner"}})
				}
			}
		})
		w.attack(t, x.label+"/"+table+"/BatchGetItem-TransactGetItems", func(t *testing.T) {
			for _, c := range clients {
				for i := 0; i < len(v.keys); i += 100 {
					keys := v.keys[i:min(i+100, len(v.keys))]
					for _, p := range []string{"", proj} {
						ka := types.KeysAndAttributes{Keys: keys}
						var tg []types.TransactGetItem
						for _, k := range keys {
							g := &types.Get{TableName: tn, Key: k}
							if p != "" {
								g.ProjectionExpression, g.ExpressionAttributeNames = aws.String(p), names
							}
							tg = append(tg, types.TransactGetItem{Get: g})
						}
						if p != "" {
							ka.ProjectionExpression, ka.ExpressionAttributeNames = aws.String(p), names
						}
						_, _ = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{table: ka},
							ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
						_, _ = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: tg, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes})
					}
				}
			}
		})
		w.attack(t, x.label+"/"+table+"/Query", func(t *testing.T) {
			type q struct {
				index, attr string
				vals        []string
				lek         func(l lekSet) map[string]types.AttributeValue
			}
			qs := []q{
				{"", "pk", v.pks, func(l lekSet) map[string]types.AttributeValue { return l.query }},
				{"lsi", "pk", v.pks, func(l lekSet) map[string]types.AttributeValue { return l.lsi }},
				{"gsi", "gpk", v.gpks, func(l lekSet) map[string]types.AttributeValue { return l.gsi }},
				{"gsik", "gpk2", v.g2s, func(l lekSet) map[string]types.AttributeValue { return l.gsik }},
			}
			for _, q := range qs {
				for _, val := range q.vals {
					for _, sel := range []types.Select{"", types.SelectCount, types.SelectSpecificAttributes, types.SelectAllProjectedAttributes} {
						if sel == types.SelectAllProjectedAttributes && q.index == "" {
							continue
						}
						for _, fwd := range []bool{true, false} {
							for _, limit := range []*int32{nil, aws.Int32(1)} {
								for _, filter := range []string{"", "attribute_exists(#s) OR begins_with(#o, :b)"} {
									for _, l := range v.leks {
										in := &dynamodb.QueryInput{TableName: tn, Select: sel, ScanIndexForward: aws.Bool(fwd), Limit: limit,
											KeyConditionExpression:    aws.String("#k = :v"),
											ExpressionAttributeNames:  map[string]string{"#k": q.attr},
											ExpressionAttributeValues: map[string]types.AttributeValue{":v": S(val)},
											ExclusiveStartKey:         q.lek(l), ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
										if q.index != "" {
											in.IndexName = aws.String(q.index)
										}
										if sel == types.SelectSpecificAttributes {
											in.ProjectionExpression = aws.String("#s, #b, #o, #t")
										}
										if filter != "" {
											in.FilterExpression = aws.String(filter)
											in.ExpressionAttributeValues[":b"] = S("B")
										}
										for k, n := range used(names, aws.ToString(in.ProjectionExpression), filter) {
											in.ExpressionAttributeNames[k] = n
										}
										_, _ = x.App.Query(ctx, in)
									}
								}
							}
						}
					}
					// Legacy parameters.
					in := &dynamodb.QueryInput{TableName: tn, KeyConditions: map[string]types.Condition{
						q.attr: {ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{S(val)}}},
						QueryFilter:     map[string]types.Condition{"secret": {ComparisonOperator: types.ComparisonOperatorNotNull}},
						AttributesToGet: []string{"secret", "blob", "owner", "pk", "sk"}}
					if q.index != "" {
						in.IndexName = aws.String(q.index)
						in.AttributesToGet = nil
					}
					_, _ = x.Read.Query(ctx, in)
				}
			}
		})
		w.attack(t, x.label+"/"+table+"/Scan", func(t *testing.T) {
			for _, index := range []string{"", "gsi", "gsik", "lsi"} {
				for _, seg := range [][2]int32{{-1, 0}, {0, 4}, {1, 4}, {2, 4}, {3, 4}} {
					for _, sel := range []types.Select{"", types.SelectCount, types.SelectSpecificAttributes} {
						for _, limit := range []*int32{nil, aws.Int32(2)} {
							for _, filter := range []string{"", "begins_with(#s, :p) OR contains(#t, :b)"} {
								for _, l := range v.leks {
									in := &dynamodb.ScanInput{TableName: tn, Select: sel, Limit: limit, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}
									if index != "" {
										in.IndexName = aws.String(index)
									}
									switch index {
									case "":
										in.ExclusiveStartKey = l.scan
									case "gsi":
										in.ExclusiveStartKey = l.gsi
									case "gsik":
										in.ExclusiveStartKey = l.gsik
									case "lsi":
										in.ExclusiveStartKey = l.lsi
									}
									if seg[0] >= 0 {
										in.Segment, in.TotalSegments = aws.Int32(seg[0]), aws.Int32(seg[1])
									}
									if sel == types.SelectSpecificAttributes {
										in.ProjectionExpression = aws.String("#s, #b, #o, #t")
									}
									if filter != "" {
										in.FilterExpression = aws.String(filter)
										in.ExpressionAttributeValues = map[string]types.AttributeValue{":p": S("SECRET-"), ":b": S("B")}
									}
									in.ExpressionAttributeNames = used(names, aws.ToString(in.ProjectionExpression), filter)
									for page := 0; page < 10; page++ {
										out, err := x.Read.Scan(ctx, in)
										if err != nil || out.LastEvaluatedKey == nil {
											break
										}
										in.ExclusiveStartKey = out.LastEvaluatedKey
									}
								}
							}
						}
					}
				}
			}
			_, _ = x.Read.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ScanFilter: map[string]types.Condition{
				"secret": {ComparisonOperator: types.ComparisonOperatorBeginsWith, AttributeValueList: []types.AttributeValue{S("SECRET-")}}},
				AttributesToGet: []string{"secret", "blob", "owner"}})
		})
		w.attack(t, x.label+"/"+table+"/metadata", func(t *testing.T) {
			arn := w.arn(table)
			for _, c := range clients {
				_, _ = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tn})
				_, _ = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(arn)})
				_, _ = c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: tn})
				_, _ = c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn)})
				_, _ = c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(arn + "/index/gsi")})
				_, _ = c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: tn})
				_, _ = c.DescribeKinesisStreamingDestination(ctx, &dynamodb.DescribeKinesisStreamingDestinationInput{TableName: tn})
				_, _ = c.ExecuteStatement(ctx, &dynamodb.ExecuteStatementInput{Statement: aws.String(fmt.Sprintf(`SELECT * FROM "%s"`, table))})
			}
		})
		w.attack(t, x.label+"/"+table+"/failing-conditional-writes", func(t *testing.T) {
			// Conditions that fail on every item (the attacker's own
			// included), each asking for the old item back.
			cond := aws.String("attribute_exists(#s) AND #s = :never")
			vals := map[string]types.AttributeValue{":never": S("never")}
			nm := map[string]string{"#s": "secret"}
			all := types.ReturnValuesOnConditionCheckFailureAllOld
			for _, k := range v.keys {
				_, _ = x.App.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: k, ConditionExpression: cond,
					ExpressionAttributeNames: nm, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
				_, _ = x.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: k, UpdateExpression: aws.String("SET z = :never"),
					ConditionExpression: cond, ExpressionAttributeNames: nm, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
				_, _ = x.App.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: k, ConditionExpression: cond,
					ExpressionAttributeNames: nm, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all})
				_, _ = x.App.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
					{ConditionCheck: &types.ConditionCheck{TableName: tn, Key: k, ConditionExpression: cond,
						ExpressionAttributeNames: nm, ExpressionAttributeValues: vals, ReturnValuesOnConditionCheckFailure: all}}}})
				// Invalid updates that name the victim's attributes.
				_, _ = x.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: k, UpdateExpression: aws.String("SET #s = #s + :one"),
					ExpressionAttributeNames: nm, ExpressionAttributeValues: map[string]types.AttributeValue{":one": N("1")}})
				_, _ = x.App.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: k, UpdateExpression: aws.String("SET z = #s[0]"),
					ExpressionAttributeNames: nm, ConditionExpression: aws.String("attribute_exists(pk) AND size(#s) > :z"),
					ExpressionAttributeValues: map[string]types.AttributeValue{":z": N("1000")}})
			}
		})
	}
	w.attack(t, x.label+"/ListTables", func(t *testing.T) {
		for _, c := range clients {
			w.listTables(t, c, nil)
			w.listTables(t, c, aws.String(tblBOnly))
		}
	})
	w.attack(t, x.label+"/admin-reads", func(t *testing.T) {
		for _, p := range []string{"/v1/whoami", "/v1/tenants/" + x.id, "/v1/tenants/" + x.id + "/keys", "/v1/tenants/" + x.id + "/audit/verify",
			"/v1/tenants/" + x.id + "/usage", "/v1/tenants/" + x.id + "/quota", "/v1/platform/tenants"} {
			w.raw(t, x.rec, "GET", p, x.admin.Key, "")
		}
		// x's own audit log records the paths of x's refused attempts,
		// which name the tenants x tried: only the secrets are forbidden
		// there.
		ar := newRecorder(x.label + " (own audit log)")
		for _, f := range x.rec.forbidden {
			if strings.HasPrefix(f, "SECRET-") {
				ar.forbid(f)
			}
		}
		w.raw(t, ar, "GET", "/v1/tenants/"+x.id+"/audit?limit=1000", x.admin.Key, "")
		ar.check(t, 0)
	})
	// Undo the failing writes' side effects, if any.
	w.attack(t, x.label+"/own-view-unchanged", func(t *testing.T) {
		for _, table := range []string{tblNS, tblSilo, tblLK, tblOwn} {
			got := onlyOwn(t, x, x.label+" Scan "+table, w.scanAll(t, x.App, table, ""))
			want := ownKeys(x, table)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s's items in %s changed during the sweep: %v, want %v", x.label, table, got, want)
			}
		}
	})
}

// used returns the members of names whose placeholders occur in exprs
// (nil if none), since DynamoDB refuses unused names.
func used(names map[string]string, exprs ...string) map[string]string {
	var out map[string]string
	for k, v := range names {
		for _, e := range exprs {
			if strings.Contains(e, k) {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = v
			}
		}
	}
	return out
}
