// Package dynexport reads and writes the file layout of DynamoDB's export
// to S3 in its DYNAMODB_JSON format, on a local directory standing for the
// bucket:
//
//	<bucket>/<prefix>/AWSDynamoDB/<ExportId>/_started
//	<bucket>/<prefix>/AWSDynamoDB/<ExportId>/manifest-summary.json (+ .checksum)
//	<bucket>/<prefix>/AWSDynamoDB/<ExportId>/manifest-files.json   (+ .checksum)
//	<bucket>/<prefix>/AWSDynamoDB/<ExportId>/data/<name>.json.gz
//
// Data files are gzip-compressed JSON lines, one {"Item": {...}} object of
// DynamoDB-JSON attribute values per line. manifest-files.json lists each
// data file with its item count, the base64 MD5 of its bytes and its S3
// ETag; manifest-summary.json counts the items and bytes of the export.
// tenantdb adds one file of its own beside the manifests,
// tenantdb-table.json (Definition: keys, indexes, TTL, stream settings,
// isolation), which other readers ignore.
//
// The package knows nothing of attribute values: an item is the raw JSON
// of the "Item" member, which the caller parses (and validates). Reading
// is streaming, in memory bounded by the longest line (MaxLine).
package dynexport

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"time"
)

// The layout's names and constants.
const (
	Version            = "2020-06-30"
	FormatDynamoDBJSON = "DYNAMODB_JSON"
	ExportsDir         = "AWSDynamoDB"
	SummaryFile        = "manifest-summary.json"
	FilesFile          = "manifest-files.json"
	StartedFile        = "_started"
	DataDir            = "data"
	DefinitionFile     = "tenantdb-table.json"
	checksumExt        = ".checksum"
	dataExt            = ".json.gz"
)

// MaxLine bounds one line of a data file (an item of at most 400 KB as
// DynamoDB JSON, with base64 and escapes, stays well below it).
const MaxLine = 4 << 20

// TimeFormat is how the manifests write times (millisecond precision, UTC).
const TimeFormat = "2006-01-02T15:04:05.000Z"

// Summary is manifest-summary.json, with AWS's member names.
type Summary struct {
	Version            string  `json:"version"`
	ExportArn          string  `json:"exportArn"`
	StartTime          string  `json:"startTime"`
	EndTime            string  `json:"endTime"`
	TableArn           string  `json:"tableArn"`
	TableID            string  `json:"tableId"`
	ExportTime         string  `json:"exportTime"`
	S3Bucket           string  `json:"s3Bucket"`
	S3Prefix           *string `json:"s3Prefix"`
	S3SseAlgorithm     *string `json:"s3SseAlgorithm"` // null: the files are not encrypted
	S3SseKmsKeyID      *string `json:"s3SseKmsKeyId"`
	ManifestFilesS3Key string  `json:"manifestFilesS3Key"`
	BilledSizeBytes    int64   `json:"billedSizeBytes"`
	ItemCount          int64   `json:"itemCount"`
	OutputFormat       string  `json:"outputFormat"`
}

// FileEntry is one line of manifest-files.json.
type FileEntry struct {
	ItemCount     int64  `json:"itemCount"`
	MD5Checksum   string `json:"md5Checksum"`
	ETag          string `json:"etag"`
	DataFileS3Key string `json:"dataFileS3Key"`
}

// Definition is tenantdb-table.json: what is needed to create the table
// again, in the shapes of DynamoDB's CreateTable and UpdateTimeToLive.
type Definition struct {
	TableName              string                `json:"TableName"`
	AttributeDefinitions   []AttributeDefinition `json:"AttributeDefinitions"`
	KeySchema              []KeySchemaElement    `json:"KeySchema"`
	GlobalSecondaryIndexes []SecondaryIndex      `json:"GlobalSecondaryIndexes,omitempty"`
	LocalSecondaryIndexes  []SecondaryIndex      `json:"LocalSecondaryIndexes,omitempty"`
	BillingMode            string                `json:"BillingMode,omitempty"`
	StreamSpecification    *StreamSpecification  `json:"StreamSpecification,omitempty"`
	TimeToLive             *TimeToLive           `json:"TimeToLiveSpecification,omitempty"`
	Tags                   []Tag                 `json:"Tags,omitempty"`
}

// AttributeDefinition is DynamoDB's AttributeDefinition.
type AttributeDefinition struct {
	AttributeName string `json:"AttributeName"`
	AttributeType string `json:"AttributeType"`
}

// KeySchemaElement is DynamoDB's KeySchemaElement.
type KeySchemaElement struct {
	AttributeName string `json:"AttributeName"`
	KeyType       string `json:"KeyType"`
}

// SecondaryIndex is a GSI or LSI as CreateTable takes it.
type SecondaryIndex struct {
	IndexName  string             `json:"IndexName"`
	KeySchema  []KeySchemaElement `json:"KeySchema"`
	Projection Projection         `json:"Projection"`
}

// Projection is DynamoDB's Projection.
type Projection struct {
	ProjectionType   string   `json:"ProjectionType"`
	NonKeyAttributes []string `json:"NonKeyAttributes,omitempty"`
}

// StreamSpecification is DynamoDB's StreamSpecification.
type StreamSpecification struct {
	StreamEnabled  bool   `json:"StreamEnabled"`
	StreamViewType string `json:"StreamViewType,omitempty"`
}

// TimeToLive is DynamoDB's TimeToLiveSpecification.
type TimeToLive struct {
	AttributeName string `json:"AttributeName"`
	Enabled       bool   `json:"Enabled"`
}

// Tag is a table tag (tenantdb:isolation and friends among them).
type Tag struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
}

// MD5Checksum returns the manifest's md5Checksum of a file's MD5 sum:
// base64, as S3's Content-MD5.
func MD5Checksum(sum [md5.Size]byte) string { return base64.StdEncoding.EncodeToString(sum[:]) }

// ETag returns the S3 ETag AWS writes for a data file uploaded in one part
// of a multipart upload: the hex MD5 of the part's MD5, then "-1".
func ETag(sum [md5.Size]byte) string {
	outer := md5.Sum(sum[:])
	return hex.EncodeToString(outer[:]) + "-1"
}

// FormatTime formats t as the manifests do.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }
