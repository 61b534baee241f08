package wire

import "sort"

// TargetPrefix starts the X-Amz-Target header of every DynamoDB request:
// "DynamoDB_20120810.PutItem".
const TargetPrefix = "DynamoDB_20120810."

// inputs maps every operation tenantdb serves to a constructor of its
// request type. The server's dispatch table must list the same names (a
// test there checks it).
var inputs = map[string]func() any{
	"CreateTable":        func() any { return new(CreateTableInput) },
	"DescribeTable":      func() any { return new(DescribeTableInput) },
	"ListTables":         func() any { return new(ListTablesInput) },
	"DeleteTable":        func() any { return new(DeleteTableInput) },
	"UpdateTable":        func() any { return new(UpdateTableInput) },
	"PutItem":            func() any { return new(PutItemInput) },
	"GetItem":            func() any { return new(GetItemInput) },
	"UpdateItem":         func() any { return new(UpdateItemInput) },
	"DeleteItem":         func() any { return new(DeleteItemInput) },
	"Query":              func() any { return new(QueryInput) },
	"Scan":               func() any { return new(ScanInput) },
	"BatchGetItem":       func() any { return new(BatchGetItemInput) },
	"BatchWriteItem":     func() any { return new(BatchWriteItemInput) },
	"TransactWriteItems": func() any { return new(TransactWriteItemsInput) },
	"TransactGetItems":   func() any { return new(TransactGetItemsInput) },
	"UpdateTimeToLive":   func() any { return new(UpdateTimeToLiveInput) },
	"DescribeTimeToLive": func() any { return new(DescribeTimeToLiveInput) },
	"TagResource":        func() any { return new(TagResourceInput) },
	"UntagResource":      func() any { return new(UntagResourceInput) },
	"ListTagsOfResource": func() any { return new(ListTagsOfResourceInput) },
	"DescribeEndpoints":  func() any { return new(DescribeEndpointsInput) },
	"DescribeLimits":     func() any { return new(DescribeLimitsInput) },
}

// Operations returns the names of all operations, sorted.
func Operations() []string {
	names := make([]string, 0, len(inputs))
	for n := range inputs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// IsOperation reports whether op names an operation tenantdb serves.
func IsOperation(op string) bool {
	_, ok := inputs[op]
	return ok
}

// OperationFromTarget returns the operation named by an X-Amz-Target
// header value and whether it is one tenantdb serves.
func OperationFromTarget(target string) (string, bool) {
	if len(target) <= len(TargetPrefix) || target[:len(TargetPrefix)] != TargetPrefix {
		return "", false
	}
	op := target[len(TargetPrefix):]
	return op, IsOperation(op)
}
