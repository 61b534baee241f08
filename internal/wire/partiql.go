package wire

import "github.com/tenantdb/tenantdb/internal/attr"

// The PartiQL operations: ExecuteStatement, BatchExecuteStatement and
// ExecuteTransaction.

// ExecuteStatementInput is ExecuteStatement's request.
type ExecuteStatementInput struct {
	Statement                           string
	Parameters                          []attr.Value
	ConsistentRead                      *bool
	NextToken                           *string
	Limit                               *int32
	ReturnConsumedCapacity              string
	ReturnValuesOnConditionCheckFailure string
}

// ExecuteStatementOutput is ExecuteStatement's response.
type ExecuteStatementOutput struct {
	Metered
	Items            []Item
	NextToken        string            `json:",omitempty"`
	LastEvaluatedKey Item              `json:",omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:",omitempty"`
}

// BatchStatementRequest is one statement of BatchExecuteStatement.
type BatchStatementRequest struct {
	Statement                           string
	Parameters                          []attr.Value
	ConsistentRead                      *bool
	ReturnValuesOnConditionCheckFailure string
}

// BatchExecuteStatementInput is BatchExecuteStatement's request.
type BatchExecuteStatementInput struct {
	Statements             []BatchStatementRequest
	ReturnConsumedCapacity string
}

// BatchStatementError is the failure of one statement of a batch.
type BatchStatementError struct {
	Code    string
	Message string
	Item    Item `json:",omitempty"`
}

// BatchStatementResponse is the result of one statement of a batch.
type BatchStatementResponse struct {
	Error     *BatchStatementError `json:",omitempty"`
	TableName string               `json:",omitempty"`
	Item      Item                 `json:",omitempty"`
}

// BatchExecuteStatementOutput is BatchExecuteStatement's response.
type BatchExecuteStatementOutput struct {
	Metered
	Responses        []BatchStatementResponse
	ConsumedCapacity []ConsumedCapacity `json:",omitempty"`
	// Denied holds the messages of the statements refused with
	// AccessDenied, for the audit log; it never goes on the wire.
	Denied []string `json:"-"`
}

// Denials returns the messages of the statements refused with
// AccessDenied: the request succeeded, but these are audited as refused.
func (o *BatchExecuteStatementOutput) Denials() []string { return o.Denied }

// ParameterizedStatement is one statement of ExecuteTransaction.
type ParameterizedStatement struct {
	Statement                           string
	Parameters                          []attr.Value
	ReturnValuesOnConditionCheckFailure string
}

// ExecuteTransactionInput is ExecuteTransaction's request.
type ExecuteTransactionInput struct {
	TransactStatements     []ParameterizedStatement
	ClientRequestToken     *string
	ReturnConsumedCapacity string
}

// ExecuteTransactionOutput is ExecuteTransaction's response.
type ExecuteTransactionOutput struct {
	Metered
	Responses        []ItemResponse     `json:",omitempty"`
	ConsumedCapacity []ConsumedCapacity `json:",omitempty"`
}
