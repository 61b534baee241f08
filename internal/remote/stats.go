package remote

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// maxStatItems bounds the items DescribeTable reads to count a table:
// beyond it the counts it reports are lower bounds (DynamoDB's own are
// refreshed only every six hours; see DESIGN.md).
const maxStatItems = 100_000

// stats counts the items and bytes of the Target's own collection of
// table tg (and of each index: index no -> {items, bytes}), by reading
// it. The operator, which holds no data, gets zeros without a read.
func (b *Backend) stats(ctx context.Context, p place) (map[uint16][2]int64, error) {
	st := map[uint16][2]int64{}
	if p.tg.Namespace == nil {
		return st, nil
	}
	read := 0
	for _, pk := range p.shardPKs() {
		in := &dynamodb.QueryInput{
			TableName:                 &b.table,
			KeyConditionExpression:    aws.String("#p = :p"),
			ExpressionAttributeNames:  map[string]string{"#p": attrPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: pk}},
		}
		if err := b.count(ctx, p, in, st, &read); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// count adds the items of the collection in reads to st.
func (b *Backend) count(ctx context.Context, p place, in *dynamodb.QueryInput, st map[uint16][2]int64, read *int) error {
	t := p.tg.Table
	for *read < maxStatItems {
		out, err := b.db.Query(ctx, in)
		if err != nil {
			return engineErr(err, strip)
		}
		for _, raw := range out.Items {
			it := strip(raw)
			*read++
			c := st[0]
			st[0] = [2]int64{c[0] + 1, c[1] + int64(attr.ItemSize(it))}
			for _, ix := range t.Indexes {
				if !indexed(ix, it) {
					continue
				}
				proj := attr.Item{}
				for n, v := range it {
					if t.Projects(ix, n) {
						proj[n] = v
					}
				}
				c := st[ix.No]
				st[ix.No] = [2]int64{c[0] + 1, c[1] + int64(attr.ItemSize(proj))}
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	return nil
}

// indexed reports whether item it has an entry in index ix.
func indexed(ix *schema.Index, it attr.Item) bool {
	if _, ok := it[ix.Hash.Name]; !ok {
		return false
	}
	if ix.Range.Name != "" {
		if _, ok := it[ix.Range.Name]; !ok {
			return false
		}
	}
	return true
}
