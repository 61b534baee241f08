// Package wire holds DynamoDB's JSON 1.0 protocol: the request and response
// types of every operation (member names exactly as DynamoDB spells them),
// strict decoding, encoding, and THE table that maps apierr kinds to the
// wire's __type and HTTP status.
package wire

import (
	"bytes"
	"encoding/json"
	"reflect"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// Item is an attribute map: an item, a key, or a page token.
type Item = attr.Item

// AttributeDefinition declares the type of a key attribute.
type AttributeDefinition struct {
	AttributeName string
	AttributeType string

	// nameNull records an AttributeName absent from a decoded request;
	// false for one built in Go.
	nameNull bool
}

// UnmarshalJSON decodes an AttributeDefinition, noting an absent name.
func (d *AttributeDefinition) UnmarshalJSON(b []byte) error {
	var v struct {
		AttributeName *string
		AttributeType string
	}
	if err := unmarshalObject(b, &v, reflect.TypeOf(*d)); err != nil {
		return err
	}
	*d = AttributeDefinition{AttributeType: v.AttributeType, nameNull: v.AttributeName == nil}
	if v.AttributeName != nil {
		d.AttributeName = *v.AttributeName
	}
	return nil
}

// NameNull reports whether a decoded AttributeDefinition had no
// AttributeName (DynamoDB's "Value null"), as opposed to an empty one.
func (d AttributeDefinition) NameNull() bool { return d.nameNull }

// KeySchemaElement names a HASH or RANGE key attribute.
type KeySchemaElement struct {
	AttributeName string
	KeyType       string

	// nameNull records an AttributeName absent from a decoded request;
	// false for one built in Go.
	nameNull bool
}

// UnmarshalJSON decodes a KeySchemaElement, noting an absent name.
func (k *KeySchemaElement) UnmarshalJSON(b []byte) error {
	var v struct {
		AttributeName *string
		KeyType       string
	}
	if err := unmarshalObject(b, &v, reflect.TypeOf(*k)); err != nil {
		return err
	}
	*k = KeySchemaElement{KeyType: v.KeyType, nameNull: v.AttributeName == nil}
	if v.AttributeName != nil {
		k.AttributeName = *v.AttributeName
	}
	return nil
}

// NameNull reports whether a decoded KeySchemaElement had no
// AttributeName (DynamoDB's "Value null"), as opposed to an empty one.
func (k KeySchemaElement) NameNull() bool { return k.nameNull }

// Projection says which attributes an index copies.
type Projection struct {
	ProjectionType   string   `json:",omitempty"`
	NonKeyAttributes []string `json:",omitempty"`
}

// ProvisionedThroughput is requested capacity.
type ProvisionedThroughput struct {
	ReadCapacityUnits  *int64 `json:",omitempty"`
	WriteCapacityUnits *int64 `json:",omitempty"`
}

// ProvisionedThroughputDescription is reported capacity.
type ProvisionedThroughputDescription struct {
	LastIncreaseDateTime   float64 `json:",omitempty"`
	LastDecreaseDateTime   float64 `json:",omitempty"`
	NumberOfDecreasesToday int64
	ReadCapacityUnits      int64
	WriteCapacityUnits     int64
}

// GlobalSecondaryIndex is a GSI in CreateTable.
type GlobalSecondaryIndex struct {
	IndexName             string
	KeySchema             []KeySchemaElement
	Projection            *Projection
	ProvisionedThroughput *ProvisionedThroughput `json:",omitempty"`
	OnDemandThroughput    json.RawMessage        `json:",omitempty"`
	WarmThroughput        json.RawMessage        `json:",omitempty"`
}

// LocalSecondaryIndex is an LSI in CreateTable.
type LocalSecondaryIndex struct {
	IndexName  string
	KeySchema  []KeySchemaElement
	Projection *Projection
}

// StreamSpecification enables a table's change stream.
type StreamSpecification struct {
	StreamEnabled  *bool  `json:",omitempty"`
	StreamViewType string `json:",omitempty"`
}

// Tag is a resource tag.
type Tag struct {
	Key   string
	Value string

	// keyNull and valueNull record a member absent from a decoded
	// request (both are required); zero for a Tag built in Go.
	keyNull, valueNull bool
}

// UnmarshalJSON decodes a Tag, noting absent members.
func (t *Tag) UnmarshalJSON(b []byte) error {
	var v struct{ Key, Value *string }
	if err := unmarshalObject(b, &v, reflect.TypeOf(*t)); err != nil {
		return err
	}
	*t = Tag{keyNull: v.Key == nil, valueNull: v.Value == nil}
	if v.Key != nil {
		t.Key = *v.Key
	}
	if v.Value != nil {
		t.Value = *v.Value
	}
	return nil
}

// unmarshalObject decodes the JSON object b into the shadow structure v of
// a type t with its own UnmarshalJSON, reporting a value that is not an
// object as a mismatch of t (not of the shadow) so that the error names
// the API's shape.
func unmarshalObject(b []byte, v any, t reflect.Type) error {
	if kind := jsonValueKind(b); kind != "object" && kind != "null" {
		return &json.UnmarshalTypeError{Value: kind, Type: t}
	}
	return json.Unmarshal(b, v)
}

// jsonValueKind names the kind of the JSON value b as encoding/json's
// UnmarshalTypeError does.
func jsonValueKind(b []byte) string {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return ""
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// String formats t as {Key Value}.
func (t Tag) String() string { return "{" + t.Key + " " + t.Value + "}" }

// KeyNull reports whether a decoded Tag had no Key.
func (t Tag) KeyNull() bool { return t.keyNull }

// ValueNull reports whether a decoded Tag had no Value.
func (t Tag) ValueNull() bool { return t.valueNull }

// BillingModeSummary reports the billing mode.
type BillingModeSummary struct {
	BillingMode                       string
	LastUpdateToPayPerRequestDateTime float64 `json:",omitempty"`
}

// GlobalSecondaryIndexDescription describes a GSI.
type GlobalSecondaryIndexDescription struct {
	IndexName             string
	KeySchema             []KeySchemaElement
	Projection            *Projection
	IndexStatus           string
	Backfilling           *bool `json:",omitempty"`
	ProvisionedThroughput *ProvisionedThroughputDescription
	IndexSizeBytes        int64
	ItemCount             int64
	IndexArn              string
}

// LocalSecondaryIndexDescription describes an LSI.
type LocalSecondaryIndexDescription struct {
	IndexName      string
	KeySchema      []KeySchemaElement
	Projection     *Projection
	IndexSizeBytes int64
	ItemCount      int64
	IndexArn       string
}

// TableDescription describes a table.
//
// NB: the members a table always has are omitted when empty only for
// DeleteTable's answer, which leaves them out.
type TableDescription struct {
	AttributeDefinitions      []AttributeDefinition `json:",omitempty"`
	TableName                 string
	KeySchema                 []KeySchemaElement `json:",omitempty"`
	TableStatus               string
	CreationDateTime          float64 `json:",omitempty"`
	ProvisionedThroughput     *ProvisionedThroughputDescription
	TableSizeBytes            int64
	ItemCount                 int64
	TableArn                  string
	TableId                   string
	BillingModeSummary        *BillingModeSummary               `json:",omitempty"`
	LocalSecondaryIndexes     []LocalSecondaryIndexDescription  `json:",omitempty"`
	GlobalSecondaryIndexes    []GlobalSecondaryIndexDescription `json:",omitempty"`
	StreamSpecification       *StreamSpecification              `json:",omitempty"`
	LatestStreamLabel         string                            `json:",omitempty"`
	LatestStreamArn           string                            `json:",omitempty"`
	DeletionProtectionEnabled bool
	TableClassSummary         *TableClassSummary `json:",omitempty"`
	RestoreSummary            *RestoreSummary    `json:",omitempty"`
	SSEDescription            *SSEDescription    `json:",omitempty"`
}

// SSEDescription describes a table's encryption at rest.
type SSEDescription struct {
	Status          string // ENABLED
	SSEType         string `json:",omitempty"` // AES256 or KMS
	KMSMasterKeyArn string `json:",omitempty"`
}

// Deleting returns the part of d that DeleteTable answers, with status
// DELETING: the table's name, ARN, id, statistics, throughput and billing,
// and its stream, but not its key schema, attribute definitions, indexes
// or creation time.
//
// NB: DynamoDB's API reference shows this shape without saying which
// members it keeps; the list is our reading of DynamoDB's answers, pinned
// by tests/conformance (TestDeleteTableDescription).
func (d *TableDescription) Deleting() *TableDescription {
	return &TableDescription{
		TableName:             d.TableName,
		TableStatus:           "DELETING",
		ProvisionedThroughput: d.ProvisionedThroughput,
		TableSizeBytes:        d.TableSizeBytes,
		ItemCount:             d.ItemCount,
		TableArn:              d.TableArn,
		TableId:               d.TableId,
		BillingModeSummary:    d.BillingModeSummary,
		StreamSpecification:   d.StreamSpecification,
		LatestStreamLabel:     d.LatestStreamLabel,
		LatestStreamArn:       d.LatestStreamArn,
	}
}

// TableClassSummary reports the table class.
type TableClassSummary struct {
	TableClass string
}

// Capacity is consumed capacity of one table or index.
type Capacity struct {
	CapacityUnits      float64
	ReadCapacityUnits  *float64 `json:",omitempty"`
	WriteCapacityUnits *float64 `json:",omitempty"`
}

// ConsumedCapacity is returned with ReturnConsumedCapacity TOTAL or INDEXES.
type ConsumedCapacity struct {
	TableName              string
	CapacityUnits          float64
	ReadCapacityUnits      *float64            `json:",omitempty"`
	WriteCapacityUnits     *float64            `json:",omitempty"`
	Table                  *Capacity           `json:",omitempty"`
	LocalSecondaryIndexes  map[string]Capacity `json:",omitempty"`
	GlobalSecondaryIndexes map[string]Capacity `json:",omitempty"`
}

// ItemCollectionMetrics is returned for tables with LSIs when requested.
type ItemCollectionMetrics struct {
	ItemCollectionKey   Item
	SizeEstimateRangeGB []float64
}

// Usage is what an operation consumed, always computed whatever
// ReturnConsumedCapacity says; quotas and metering read it. It never goes on
// the wire.
type Usage struct {
	ReadUnits  float64
	WriteUnits float64
	// Table is the table charged: the only one, or the first one of a
	// multi-table operation (whose split is in PerTable).
	Table string
	// PerTable splits the units of a multi-table operation (BatchGetItem,
	// BatchWriteItem, TransactGetItems, TransactWriteItems touching more
	// than one table) by table, in the operation's class (reads or
	// writes); nil when one table (Table) was charged everything.
	PerTable []TableUnits
	// Committed says that the backend wrote this usage to the store in
	// the batch that committed the operation's items (the engine's
	// Meter), so that metering must not write it again.
	Committed bool
}

// TableUnits is one table's share of a multi-table operation's units.
type TableUnits struct {
	Table string
	Units float64
}

// EachTable calls fn with each table charged and its read and write units:
// Table with all units, or each entry of PerTable. Units charged without a
// table (a failed conditional write) are not reported.
func (u Usage) EachTable(fn func(table string, read, write float64)) {
	if len(u.PerTable) == 0 {
		if u.Table != "" {
			fn(u.Table, u.ReadUnits, u.WriteUnits)
		}
		return
	}
	write := u.WriteUnits != 0
	for _, tu := range u.PerTable {
		if write {
			fn(tu.Table, 0, tu.Units)
		} else {
			fn(tu.Table, tu.Units, 0)
		}
	}
}

// Output is implemented by every operation's output.
type Output interface {
	// Consumed returns the usage the engine recorded.
	Consumed() Usage
}

// Metered is embedded in outputs to carry Usage.
type Metered struct {
	U Usage `json:"-"`
}

// Consumed implements Output.
func (m *Metered) Consumed() Usage { return m.U }

// ExpectedAttributeValue is the legacy Expected condition.
type ExpectedAttributeValue struct {
	Value              *attr.Value  `json:",omitempty"`
	Exists             *bool        `json:",omitempty"`
	ComparisonOperator string       `json:",omitempty"`
	AttributeValueList []attr.Value `json:",omitempty"`
}

// Condition is the legacy KeyConditions/QueryFilter/ScanFilter condition.
type Condition struct {
	AttributeValueList []attr.Value `json:",omitempty"`
	ComparisonOperator string
}

// AttributeValueUpdate is the legacy AttributeUpdates action.
type AttributeValueUpdate struct {
	Value  *attr.Value `json:",omitempty"`
	Action string      `json:",omitempty"`
}

// CreateTableInput is CreateTable's request.
type CreateTableInput struct {
	TableName                 string
	AttributeDefinitions      []AttributeDefinition
	KeySchema                 []KeySchemaElement
	GlobalSecondaryIndexes    []GlobalSecondaryIndex
	LocalSecondaryIndexes     []LocalSecondaryIndex
	BillingMode               string
	ProvisionedThroughput     *ProvisionedThroughput
	StreamSpecification       *StreamSpecification
	SSESpecification          json.RawMessage
	Tags                      []Tag
	TableClass                string
	DeletionProtectionEnabled *bool
	OnDemandThroughput        json.RawMessage
	WarmThroughput            json.RawMessage
	ResourcePolicy            string
}

// CreateTableOutput is CreateTable's response.
type CreateTableOutput struct {
	Metered
	TableDescription *TableDescription
}

// DescribeTableInput is DescribeTable's request.
type DescribeTableInput struct{ TableName string }

// DescribeTableOutput is DescribeTable's response.
type DescribeTableOutput struct {
	Metered
	Table *TableDescription
}

// ListTablesInput is ListTables' request.
type ListTablesInput struct {
	ExclusiveStartTableName string
	Limit                   *int
}

// ListTablesOutput is ListTables' response.
type ListTablesOutput struct {
	Metered
	TableNames             []string
	LastEvaluatedTableName string `json:",omitempty"`
}

// DeleteTableInput is DeleteTable's request.
type DeleteTableInput struct{ TableName string }

// DeleteTableOutput is DeleteTable's response.
type DeleteTableOutput struct {
	Metered
	TableDescription *TableDescription
}

// GlobalSecondaryIndexUpdate is one action of UpdateTable.
type GlobalSecondaryIndexUpdate struct {
	Create *CreateGlobalSecondaryIndexAction `json:",omitempty"`
	Update *UpdateGlobalSecondaryIndexAction `json:",omitempty"`
	Delete *DeleteGlobalSecondaryIndexAction `json:",omitempty"`
}

// CreateGlobalSecondaryIndexAction adds a GSI.
type CreateGlobalSecondaryIndexAction struct {
	IndexName             string
	KeySchema             []KeySchemaElement
	Projection            *Projection
	ProvisionedThroughput *ProvisionedThroughput
	OnDemandThroughput    json.RawMessage
	WarmThroughput        json.RawMessage
}

// UpdateGlobalSecondaryIndexAction changes a GSI's throughput.
type UpdateGlobalSecondaryIndexAction struct {
	IndexName             string
	ProvisionedThroughput *ProvisionedThroughput
	OnDemandThroughput    json.RawMessage
	WarmThroughput        json.RawMessage
}

// DeleteGlobalSecondaryIndexAction removes a GSI.
type DeleteGlobalSecondaryIndexAction struct{ IndexName string }

// UpdateTableInput is UpdateTable's request.
type UpdateTableInput struct {
	TableName                   string
	AttributeDefinitions        []AttributeDefinition
	BillingMode                 string
	ProvisionedThroughput       *ProvisionedThroughput
	GlobalSecondaryIndexUpdates []GlobalSecondaryIndexUpdate
	StreamSpecification         *StreamSpecification
	SSESpecification            json.RawMessage
	ReplicaUpdates              json.RawMessage
	TableClass                  string
	DeletionProtectionEnabled   *bool
	OnDemandThroughput          json.RawMessage
	WarmThroughput              json.RawMessage
	MultiRegionConsistency      string
}

// UpdateTableOutput is UpdateTable's response.
type UpdateTableOutput struct {
	Metered
	TableDescription *TableDescription
}

// PutItemInput is PutItem's request.
type PutItemInput struct {
	TableName                           string
	Item                                Item
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValues                        string
	ReturnConsumedCapacity              string
	ReturnItemCollectionMetrics         string
	ReturnValuesOnConditionCheckFailure string
	Expected                            map[string]ExpectedAttributeValue
	ConditionalOperator                 string
}

// PutItemOutput is PutItem's response.
type PutItemOutput struct {
	Metered
	Attributes            Item                   `json:",omitempty"`
	ConsumedCapacity      *ConsumedCapacity      `json:",omitempty"`
	ItemCollectionMetrics *ItemCollectionMetrics `json:",omitempty"`
}

// GetItemInput is GetItem's request.
type GetItemInput struct {
	TableName                string
	Key                      Item
	AttributesToGet          []string
	ConsistentRead           *bool
	ProjectionExpression     *string
	ExpressionAttributeNames map[string]string
	ReturnConsumedCapacity   string
}

// GetItemOutput is GetItem's response.
type GetItemOutput struct {
	Metered
	Item             Item              `json:",omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:",omitempty"`
}

// UpdateItemInput is UpdateItem's request.
type UpdateItemInput struct {
	TableName                           string
	Key                                 Item
	UpdateExpression                    *string
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValues                        string
	ReturnConsumedCapacity              string
	ReturnItemCollectionMetrics         string
	ReturnValuesOnConditionCheckFailure string
	AttributeUpdates                    map[string]AttributeValueUpdate
	Expected                            map[string]ExpectedAttributeValue
	ConditionalOperator                 string
}

// UpdateItemOutput is UpdateItem's response.
type UpdateItemOutput struct {
	Metered
	Attributes            Item                   `json:",omitempty"`
	ConsumedCapacity      *ConsumedCapacity      `json:",omitempty"`
	ItemCollectionMetrics *ItemCollectionMetrics `json:",omitempty"`
}

// DeleteItemInput is DeleteItem's request.
type DeleteItemInput struct {
	TableName                           string
	Key                                 Item
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValues                        string
	ReturnConsumedCapacity              string
	ReturnItemCollectionMetrics         string
	ReturnValuesOnConditionCheckFailure string
	Expected                            map[string]ExpectedAttributeValue
	ConditionalOperator                 string
}

// DeleteItemOutput is DeleteItem's response.
type DeleteItemOutput struct {
	Metered
	Attributes            Item                   `json:",omitempty"`
	ConsumedCapacity      *ConsumedCapacity      `json:",omitempty"`
	ItemCollectionMetrics *ItemCollectionMetrics `json:",omitempty"`
}

// QueryInput is Query's request.
type QueryInput struct {
	TableName                 string
	IndexName                 *string
	Select                    string
	AttributesToGet           []string
	Limit                     *int32
	ConsistentRead            *bool
	KeyConditions             map[string]Condition
	QueryFilter               map[string]Condition
	ConditionalOperator       string
	ScanIndexForward          *bool
	ExclusiveStartKey         Item
	ReturnConsumedCapacity    string
	ProjectionExpression      *string
	FilterExpression          *string
	KeyConditionExpression    *string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]attr.Value
}

// QueryOutput is Query's response.
type QueryOutput struct {
	Metered
	Items            []Item            `json:",omitempty"`
	Count            int               `json:"Count"`
	ScannedCount     int               `json:"ScannedCount"`
	LastEvaluatedKey Item              `json:",omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:",omitempty"`
}

// ScanInput is Scan's request.
type ScanInput struct {
	TableName                 string
	IndexName                 *string
	AttributesToGet           []string
	Limit                     *int32
	Select                    string
	ScanFilter                map[string]Condition
	ConditionalOperator       string
	ExclusiveStartKey         Item
	ReturnConsumedCapacity    string
	TotalSegments             *int32
	Segment                   *int32
	ProjectionExpression      *string
	FilterExpression          *string
	ExpressionAttributeNames  map[string]string
	ExpressionAttributeValues map[string]attr.Value
	ConsistentRead            *bool
}

// ScanOutput is Scan's response.
type ScanOutput = QueryOutput

// KeysAndAttributes is one table's part of BatchGetItem.
type KeysAndAttributes struct {
	Keys                     []Item
	AttributesToGet          []string          `json:",omitempty"`
	ConsistentRead           *bool             `json:",omitempty"`
	ProjectionExpression     *string           `json:",omitempty"`
	ExpressionAttributeNames map[string]string `json:",omitempty"`
}

// BatchGetItemInput is BatchGetItem's request.
type BatchGetItemInput struct {
	RequestItems           map[string]KeysAndAttributes
	ReturnConsumedCapacity string
}

// BatchGetItemOutput is BatchGetItem's response.
type BatchGetItemOutput struct {
	Metered
	Responses        map[string][]Item
	UnprocessedKeys  map[string]KeysAndAttributes
	ConsumedCapacity []ConsumedCapacity `json:",omitempty"`
}

// PutRequest is a put in BatchWriteItem.
type PutRequest struct{ Item Item }

// DeleteRequest is a delete in BatchWriteItem.
type DeleteRequest struct{ Key Item }

// WriteRequest is one entry of BatchWriteItem.
type WriteRequest struct {
	PutRequest    *PutRequest    `json:",omitempty"`
	DeleteRequest *DeleteRequest `json:",omitempty"`
}

// BatchWriteItemInput is BatchWriteItem's request.
type BatchWriteItemInput struct {
	RequestItems                map[string][]WriteRequest
	ReturnConsumedCapacity      string
	ReturnItemCollectionMetrics string
}

// BatchWriteItemOutput is BatchWriteItem's response.
type BatchWriteItemOutput struct {
	Metered
	UnprocessedItems      map[string][]WriteRequest
	ItemCollectionMetrics map[string][]ItemCollectionMetrics `json:",omitempty"`
	ConsumedCapacity      []ConsumedCapacity                 `json:",omitempty"`
}

// ConditionCheck is a TransactWriteItems condition-only entry.
type ConditionCheck struct {
	Key                                 Item
	TableName                           string
	ConditionExpression                 string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValuesOnConditionCheckFailure string
}

// TransactPut is a TransactWriteItems put.
type TransactPut struct {
	Item                                Item
	TableName                           string
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValuesOnConditionCheckFailure string
}

// TransactDelete is a TransactWriteItems delete.
type TransactDelete struct {
	Key                                 Item
	TableName                           string
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValuesOnConditionCheckFailure string
}

// TransactUpdate is a TransactWriteItems update.
type TransactUpdate struct {
	Key                                 Item
	UpdateExpression                    string
	TableName                           string
	ConditionExpression                 *string
	ExpressionAttributeNames            map[string]string
	ExpressionAttributeValues           map[string]attr.Value
	ReturnValuesOnConditionCheckFailure string
}

// TransactWriteItem is one entry of TransactWriteItems.
type TransactWriteItem struct {
	ConditionCheck *ConditionCheck `json:",omitempty"`
	Put            *TransactPut    `json:",omitempty"`
	Delete         *TransactDelete `json:",omitempty"`
	Update         *TransactUpdate `json:",omitempty"`
}

// TransactWriteItemsInput is TransactWriteItems' request.
type TransactWriteItemsInput struct {
	TransactItems               []TransactWriteItem
	ReturnConsumedCapacity      string
	ReturnItemCollectionMetrics string
	ClientRequestToken          *string
}

// TransactWriteItemsOutput is TransactWriteItems' response.
type TransactWriteItemsOutput struct {
	Metered
	ConsumedCapacity      []ConsumedCapacity                 `json:",omitempty"`
	ItemCollectionMetrics map[string][]ItemCollectionMetrics `json:",omitempty"`
}

// Get is a TransactGetItems entry's body.
type Get struct {
	Key                      Item
	TableName                string
	ProjectionExpression     *string
	ExpressionAttributeNames map[string]string
}

// TransactGetItem is one entry of TransactGetItems.
type TransactGetItem struct {
	Get *Get
}

// TransactGetItemsInput is TransactGetItems' request.
type TransactGetItemsInput struct {
	TransactItems          []TransactGetItem
	ReturnConsumedCapacity string
}

// ItemResponse is one TransactGetItems result.
type ItemResponse struct {
	Item Item `json:",omitempty"`
}

// TransactGetItemsOutput is TransactGetItems' response.
type TransactGetItemsOutput struct {
	Metered
	Responses        []ItemResponse
	ConsumedCapacity []ConsumedCapacity `json:",omitempty"`
}

// CancellationReason explains one item of a cancelled transaction.
type CancellationReason struct {
	Item    Item   `json:",omitempty"`
	Code    string `json:",omitempty"`
	Message string `json:",omitempty"`
}

// TransactionCanceledDetail is the apierr.Error Detail of a
// TransactionCanceled error.
type TransactionCanceledDetail struct {
	CancellationReasons []CancellationReason
}

// ConditionalCheckFailedDetail is the apierr.Error Detail of a
// ConditionalCheckFailed error with ReturnValuesOnConditionCheckFailure
// ALL_OLD.
type ConditionalCheckFailedDetail struct {
	Item Item
}

// TimeToLiveSpecification enables or disables TTL.
type TimeToLiveSpecification struct {
	Enabled       bool
	AttributeName string
}

// UpdateTimeToLiveInput is UpdateTimeToLive's request.
type UpdateTimeToLiveInput struct {
	TableName               string
	TimeToLiveSpecification TimeToLiveSpecification
}

// UpdateTimeToLiveOutput is UpdateTimeToLive's response.
type UpdateTimeToLiveOutput struct {
	Metered
	TimeToLiveSpecification TimeToLiveSpecification
}

// DescribeTimeToLiveInput is DescribeTimeToLive's request.
type DescribeTimeToLiveInput struct{ TableName string }

// TimeToLiveDescription reports TTL.
type TimeToLiveDescription struct {
	TimeToLiveStatus string
	AttributeName    string `json:",omitempty"`
}

// DescribeTimeToLiveOutput is DescribeTimeToLive's response.
type DescribeTimeToLiveOutput struct {
	Metered
	TimeToLiveDescription TimeToLiveDescription
}

// TagResourceInput is TagResource's request.
type TagResourceInput struct {
	ResourceArn string
	Tags        []Tag
}

// UntagResourceInput is UntagResource's request.
type UntagResourceInput struct {
	ResourceArn string
	TagKeys     []string
}

// ListTagsOfResourceInput is ListTagsOfResource's request.
type ListTagsOfResourceInput struct {
	ResourceArn string
	NextToken   *string
}

// ListTagsOfResourceOutput is ListTagsOfResource's response.
type ListTagsOfResourceOutput struct {
	Metered
	Tags      []Tag
	NextToken *string `json:",omitempty"`
}

// EmptyOutput is the response of operations that return nothing.
type EmptyOutput struct {
	Metered
}

// DescribeEndpointsInput is DescribeEndpoints' request.
type DescribeEndpointsInput struct{}

// Endpoint is one DescribeEndpoints entry.
type Endpoint struct {
	Address              string
	CachePeriodInMinutes int64
}

// DescribeEndpointsOutput is DescribeEndpoints' response.
type DescribeEndpointsOutput struct {
	Metered
	Endpoints []Endpoint
}

// DescribeLimitsInput is DescribeLimits' request.
type DescribeLimitsInput struct{}

// DescribeLimitsOutput is DescribeLimits' response.
type DescribeLimitsOutput struct {
	Metered
	AccountMaxReadCapacityUnits  int64
	AccountMaxWriteCapacityUnits int64
	TableMaxReadCapacityUnits    int64
	TableMaxWriteCapacityUnits   int64
}
