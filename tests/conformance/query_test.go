package conformance

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// seedOrders writes 3 customers x 10 orders with a GSI on status.
func seedOrders(t *testing.T, c *dynamodb.Client) {
	t.Helper()
	createTable(t, c, "Orders", keyDef{"customer", "S"}, &keyDef{"order", "N"},
		map[string][2]*keyDef{"ByStatus": {{"status", "S"}, {"order", "N"}}})
	ctx := ctxT(t)
	for cu := 0; cu < 3; cu++ {
		for o := 1; o <= 10; o++ {
			it := item("customer", S(fmt.Sprintf("c%d", cu)), "order", N(fmt.Sprint(o)), "total", N(fmt.Sprintf("%d.5", o*10)))
			if o%3 == 0 {
				it["status"] = S("OPEN") // sparse index: only some items have it
			}
			if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Orders"), Item: it}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func orders(items []map[string]types.AttributeValue) []string {
	var out []string
	for _, it := range items {
		out = append(out, str(it["customer"])+"/"+str(it["order"]))
	}
	return out
}

func TestQuery(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	seedOrders(t, c)

	out, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"),
		KeyConditionExpression:    aws.String("customer = :c AND #o BETWEEN :lo AND :hi"),
		FilterExpression:          aws.String("#t > :t"),
		ExpressionAttributeNames:  map[string]string{"#o": "order", "#t": "total"},
		ExpressionAttributeValues: item(":c", S("c1"), ":lo", N("2"), ":hi", N("9"), ":t", N("40.5")),
		ScanIndexForward:          aws.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := orders(out.Items), []string{"c1/9", "c1/8", "c1/7", "c1/6", "c1/5"}; !slices.Equal(got, want) {
		t.Errorf("Query = %v, want %v", got, want)
	}
	if out.Count != 5 || out.ScannedCount != 8 {
		t.Errorf("Count %d ScannedCount %d, want 5 and 8", out.Count, out.ScannedCount)
	}

	// Pages of 3 with LastEvaluatedKey until done.
	var all []string
	p := dynamodb.NewQueryPaginator(c, &dynamodb.QueryInput{TableName: aws.String("Orders"), Limit: aws.Int32(3),
		KeyConditionExpression: aws.String("customer = :c"), ExpressionAttributeValues: item(":c", S("c2"))})
	pages := 0
	for p.HasMorePages() {
		pg, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, orders(pg.Items)...)
		pages++
	}
	if len(all) != 10 || all[0] != "c2/1" || all[9] != "c2/10" || pages < 4 {
		t.Errorf("paged Query (%d pages) = %v", pages, all)
	}

	// Select COUNT.
	cnt, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"), Select: types.SelectCount,
		KeyConditionExpression: aws.String("customer = :c"), ExpressionAttributeValues: item(":c", S("c0"))})
	if err != nil {
		t.Fatal(err)
	}
	if cnt.Count != 10 || cnt.Items != nil {
		t.Errorf("COUNT: Count %d Items %v", cnt.Count, cnt.Items)
	}

	// The sparse GSI holds only items with a status.
	gsi, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("Orders"), IndexName: aws.String("ByStatus"),
		KeyConditionExpression: aws.String("#s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: item(":s", S("OPEN"))})
	if err != nil {
		t.Fatal(err)
	}
	if gsi.Count != 9 {
		t.Errorf("GSI Query: %d items, want 9: %v", gsi.Count, orders(gsi.Items))
	}
}

func TestScanSegments(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	seedOrders(t, c)
	var all []string
	for seg := int32(0); seg < 4; seg++ {
		p := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: aws.String("Orders"),
			Segment: aws.Int32(seg), TotalSegments: aws.Int32(4), Limit: aws.Int32(4)})
		for p.HasMorePages() {
			pg, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, orders(pg.Items)...)
		}
	}
	sort.Strings(all)
	if len(all) != 30 || len(slices.Compact(all)) != 30 {
		t.Errorf("4 segments returned %d items (%d distinct), want 30", len(all), len(slices.Compact(slices.Clone(all))))
	}
}
