package remote

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// The engine's Streams client has attribute value types of its own; the
// gateway maps them onto the DynamoDB client's, whose conversions and
// strip it already has.

func fromStreamItem(m map[string]stypes.AttributeValue) map[string]types.AttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for k, v := range m {
		out[k] = fromStreamAV(v)
	}
	return out
}

func fromStreamAV(av stypes.AttributeValue) types.AttributeValue {
	switch v := av.(type) {
	case *stypes.AttributeValueMemberS:
		return &types.AttributeValueMemberS{Value: v.Value}
	case *stypes.AttributeValueMemberN:
		return &types.AttributeValueMemberN{Value: v.Value}
	case *stypes.AttributeValueMemberB:
		return &types.AttributeValueMemberB{Value: v.Value}
	case *stypes.AttributeValueMemberBOOL:
		return &types.AttributeValueMemberBOOL{Value: v.Value}
	case *stypes.AttributeValueMemberNULL:
		return &types.AttributeValueMemberNULL{Value: v.Value}
	case *stypes.AttributeValueMemberM:
		return &types.AttributeValueMemberM{Value: fromStreamItem(v.Value)}
	case *stypes.AttributeValueMemberL:
		l := make([]types.AttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = fromStreamAV(e)
		}
		return &types.AttributeValueMemberL{Value: l}
	case *stypes.AttributeValueMemberSS:
		return &types.AttributeValueMemberSS{Value: v.Value}
	case *stypes.AttributeValueMemberNS:
		return &types.AttributeValueMemberNS{Value: v.Value}
	case *stypes.AttributeValueMemberBS:
		return &types.AttributeValueMemberBS{Value: v.Value}
	}
	return nil // unknown: fromAV refuses it
}

func equalItems(a, b attr.Item) bool { return attr.EqualItems(a, b) }

func itemSize(it attr.Item) int {
	if it == nil {
		return 0
	}
	return attr.ItemSize(it)
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func parseInt64(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
