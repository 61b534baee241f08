package conformance

import (
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestTableLifecycle(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	createTable(t, c, "Music", keyDef{"Artist", "S"}, &keyDef{"SongTitle", "S"},
		map[string][2]*keyDef{"ByYear": {{"Year", "N"}, {"SongTitle", "S"}}})

	out, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("Music")})
	if err != nil {
		t.Fatal(err)
	}
	d := out.Table
	if aws.ToString(d.TableName) != "Music" || d.TableStatus != types.TableStatusActive || len(d.KeySchema) != 2 {
		t.Errorf("DescribeTable: %+v", d)
	}
	if d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Errorf("billing mode: %+v", d.BillingModeSummary)
	}
	if len(d.GlobalSecondaryIndexes) != 1 || aws.ToString(d.GlobalSecondaryIndexes[0].IndexName) != "ByYear" {
		t.Errorf("GSIs: %+v", d.GlobalSecondaryIndexes)
	}
	if d.TableArn == nil || d.CreationDateTime == nil {
		t.Errorf("TableArn %v, CreationDateTime %v", d.TableArn, d.CreationDateTime)
	}

	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("Music"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("Artist"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("Artist"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	})
	var inUse *types.ResourceInUseException
	if !errors.As(err, &inUse) {
		t.Errorf("second CreateTable: %v, want ResourceInUseException", err)
	}

	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("Nope")})
	var rnf *types.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Errorf("DescribeTable Nope: %v, want ResourceNotFoundException", err)
	}

	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("Music")}); err != nil {
		t.Fatal(err)
	}
	lt, err := c.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(lt.TableNames, "Music") {
		t.Errorf("Music still listed after DeleteTable: %v", lt.TableNames)
	}
}

func TestListTablesPaged(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	want := []string{"tab-a1", "tab-a2", "tab-b1", "tab-b2", "tab-c1"}
	for _, n := range want {
		createTable(t, c, n, keyDef{"pk", "S"}, nil, nil)
	}
	var got []string
	p := dynamodb.NewListTablesPaginator(c, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.TableNames) > 2 {
			t.Errorf("page of %d names with Limit 2", len(out.TableNames))
		}
		got = append(got, out.TableNames...)
		pages++
	}
	if !slices.Equal(got, want) || pages < 3 {
		t.Errorf("ListTables pages=%d names=%v, want %v", pages, got, want)
	}
}

func TestDescribeEndpointsAndLimits(t *testing.T) {
	_, c := start(t)
	ctx := ctxT(t)
	ep, err := c.DescribeEndpoints(ctx, &dynamodb.DescribeEndpointsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Endpoints) != 1 || aws.ToString(ep.Endpoints[0].Address) == "" {
		t.Errorf("DescribeEndpoints: %+v", ep.Endpoints)
	}
	if _, err := c.DescribeLimits(ctx, &dynamodb.DescribeLimitsInput{}); err != nil {
		t.Fatal(err)
	}
}
