package wire

import "encoding/json"

// The export and import operations (ExportTableToPointInTime,
// DescribeExport, ListExports, ImportTable, DescribeImport, ListImports),
// with DynamoDB's shapes. An S3 bucket is a directory under the server's
// export root (see internal/transfer).

// ExportTableToPointInTimeInput is ExportTableToPointInTime's request.
type ExportTableToPointInTimeInput struct {
	TableArn                       string
	ExportTime                     *float64 `json:",omitempty"` // epoch seconds
	ClientToken                    string   `json:",omitempty"`
	S3Bucket                       string
	S3BucketOwner                  string          `json:",omitempty"`
	S3Prefix                       string          `json:",omitempty"`
	S3SseAlgorithm                 string          `json:",omitempty"`
	S3SseKmsKeyId                  string          `json:",omitempty"`
	ExportFormat                   string          `json:",omitempty"`
	ExportType                     string          `json:",omitempty"`
	IncrementalExportSpecification json.RawMessage `json:",omitempty"`
}

// ExportDescription describes an export.
type ExportDescription struct {
	ExportArn       string
	ExportStatus    string  // IN_PROGRESS, COMPLETED, FAILED
	StartTime       float64 `json:",omitempty"`
	EndTime         float64 `json:",omitempty"`
	ExportManifest  string  `json:",omitempty"`
	TableArn        string
	TableId         string  `json:",omitempty"`
	ExportTime      float64 `json:",omitempty"`
	ClientToken     string  `json:",omitempty"`
	S3Bucket        string
	S3BucketOwner   string `json:",omitempty"`
	S3Prefix        string `json:",omitempty"`
	S3SseAlgorithm  string `json:",omitempty"`
	FailureCode     string `json:",omitempty"`
	FailureMessage  string `json:",omitempty"`
	ExportFormat    string
	BilledSizeBytes int64
	ItemCount       int64
	ExportType      string
}

// ExportTableToPointInTimeOutput is ExportTableToPointInTime's response.
type ExportTableToPointInTimeOutput struct {
	Metered
	ExportDescription *ExportDescription
}

// DescribeExportInput is DescribeExport's request.
type DescribeExportInput struct{ ExportArn string }

// DescribeExportOutput is DescribeExport's response.
type DescribeExportOutput struct {
	Metered
	ExportDescription *ExportDescription
}

// ListExportsInput is ListExports' request.
type ListExportsInput struct {
	TableArn   string `json:",omitempty"`
	MaxResults *int64 `json:",omitempty"`
	NextToken  string `json:",omitempty"`
}

// ExportSummary is one export in ListExports' answer.
type ExportSummary struct {
	ExportArn    string
	ExportStatus string
	ExportType   string
}

// ListExportsOutput is ListExports' response.
type ListExportsOutput struct {
	Metered
	ExportSummaries []ExportSummary
	NextToken       string `json:",omitempty"`
}

// S3BucketSource names where ImportTable reads.
type S3BucketSource struct {
	S3Bucket      string
	S3BucketOwner string `json:",omitempty"`
	S3KeyPrefix   string `json:",omitempty"`
}

// TableCreationParameters is the table ImportTable creates.
type TableCreationParameters struct {
	TableName              string
	AttributeDefinitions   []AttributeDefinition
	KeySchema              []KeySchemaElement
	BillingMode            string                 `json:",omitempty"`
	ProvisionedThroughput  *ProvisionedThroughput `json:",omitempty"`
	SSESpecification       json.RawMessage        `json:",omitempty"`
	GlobalSecondaryIndexes []GlobalSecondaryIndex `json:",omitempty"`
	OnDemandThroughput     json.RawMessage        `json:",omitempty"`
}

// ImportTableInput is ImportTable's request.
type ImportTableInput struct {
	ClientToken             string `json:",omitempty"`
	S3BucketSource          *S3BucketSource
	InputFormat             string
	InputFormatOptions      json.RawMessage `json:",omitempty"`
	InputCompressionType    string          `json:",omitempty"`
	TableCreationParameters *TableCreationParameters
}

// ImportTableDescription describes an import.
type ImportTableDescription struct {
	ImportArn               string
	ImportStatus            string // IN_PROGRESS, COMPLETED, FAILED
	TableArn                string
	TableId                 string `json:",omitempty"`
	ClientToken             string `json:",omitempty"`
	S3BucketSource          *S3BucketSource
	ErrorCount              int64
	InputFormat             string
	InputCompressionType    string `json:",omitempty"`
	TableCreationParameters *TableCreationParameters
	StartTime               float64 `json:",omitempty"`
	EndTime                 float64 `json:",omitempty"`
	ProcessedSizeBytes      int64
	ProcessedItemCount      int64
	ImportedItemCount       int64
	FailureCode             string `json:",omitempty"`
	FailureMessage          string `json:",omitempty"`
}

// ImportTableOutput is ImportTable's response.
type ImportTableOutput struct {
	Metered
	ImportTableDescription *ImportTableDescription
}

// DescribeImportInput is DescribeImport's request.
type DescribeImportInput struct{ ImportArn string }

// DescribeImportOutput is DescribeImport's response.
type DescribeImportOutput struct {
	Metered
	ImportTableDescription *ImportTableDescription
}

// ListImportsInput is ListImports' request.
type ListImportsInput struct {
	TableArn  string `json:",omitempty"`
	PageSize  *int64 `json:",omitempty"`
	NextToken string `json:",omitempty"`
}

// ImportSummary is one import in ListImports' answer.
type ImportSummary struct {
	ImportArn      string
	ImportStatus   string
	TableArn       string
	S3BucketSource *S3BucketSource
	InputFormat    string
	StartTime      float64 `json:",omitempty"`
	EndTime        float64 `json:",omitempty"`
}

// ListImportsOutput is ListImports' response.
type ListImportsOutput struct {
	Metered
	ImportSummaryList []ImportSummary
	NextToken         string `json:",omitempty"`
}
