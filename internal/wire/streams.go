package wire

// The DynamoDB Streams operations (X-Amz-Target DynamoDBStreams_20120810.*),
// served on the same endpoint as DynamoDB's.

// ListStreamsInput is ListStreams' request.
type ListStreamsInput struct {
	TableName               string `json:",omitempty"`
	Limit                   *int64 `json:",omitempty"`
	ExclusiveStartStreamArn string `json:",omitempty"`
}

// StreamSummary is one stream in ListStreams' answer.
type StreamSummary struct {
	StreamArn   string
	StreamLabel string
	TableName   string
}

// ListStreamsOutput is ListStreams' response.
type ListStreamsOutput struct {
	Metered
	Streams                []StreamSummary
	LastEvaluatedStreamArn string `json:",omitempty"`
}

// DescribeStreamInput is DescribeStream's request.
type DescribeStreamInput struct {
	StreamArn             string
	Limit                 *int64 `json:",omitempty"`
	ExclusiveStartShardId string `json:",omitempty"`
}

// SequenceNumberRange is the range of sequence numbers of a shard; the
// ending one is absent while the shard is open.
type SequenceNumberRange struct {
	StartingSequenceNumber string `json:",omitempty"`
	EndingSequenceNumber   string `json:",omitempty"`
}

// Shard is one shard of a stream.
type Shard struct {
	ShardId             string
	ParentShardId       string `json:",omitempty"`
	SequenceNumberRange SequenceNumberRange
}

// StreamDescription is DescribeStream's description of a stream.
type StreamDescription struct {
	StreamArn               string
	StreamLabel             string
	StreamStatus            string // ENABLING, ENABLED, DISABLING, DISABLED
	StreamViewType          string
	CreationRequestDateTime float64 // epoch seconds
	TableName               string
	KeySchema               []KeySchemaElement
	Shards                  []Shard
	LastEvaluatedShardId    string `json:",omitempty"`
}

// DescribeStreamOutput is DescribeStream's response.
type DescribeStreamOutput struct {
	Metered
	StreamDescription StreamDescription
}

// GetShardIteratorInput is GetShardIterator's request.
type GetShardIteratorInput struct {
	StreamArn         string
	ShardId           string
	ShardIteratorType string // TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER
	SequenceNumber    string `json:",omitempty"`
}

// GetShardIteratorOutput is GetShardIterator's response.
type GetShardIteratorOutput struct {
	Metered
	ShardIterator string `json:",omitempty"`
}

// GetRecordsInput is GetRecords' request.
type GetRecordsInput struct {
	ShardIterator string
	Limit         *int64 `json:",omitempty"`
}

// StreamRecord is the DynamoDB part of a stream record.
type StreamRecord struct {
	ApproximateCreationDateTime float64 // epoch seconds
	Keys                        Item
	NewImage                    Item `json:",omitempty"`
	OldImage                    Item `json:",omitempty"`
	SequenceNumber              string
	SizeBytes                   int64
	StreamViewType              string
}

// Identity is the user that made a change; only TTL deletions carry one
// (Type "Service", PrincipalId "dynamodb.amazonaws.com").
type Identity struct {
	PrincipalId string
	Type        string
}

// Record is one stream record. NB: its members are lower camel case, as
// DynamoDB Streams sends them; the members of StreamRecord are not.
type Record struct {
	AwsRegion    string       `json:"awsRegion"`
	Dynamodb     StreamRecord `json:"dynamodb"`
	EventID      string       `json:"eventID"`
	EventName    string       `json:"eventName"`
	EventSource  string       `json:"eventSource"`
	EventVersion string       `json:"eventVersion"`
	UserIdentity *Identity    `json:"userIdentity,omitempty"`
}

// GetRecordsOutput is GetRecords' response. NextShardIterator is null
// once a closed shard has been read to its end.
type GetRecordsOutput struct {
	Metered
	Records           []Record
	NextShardIterator *string
}
