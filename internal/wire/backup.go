package wire

import "encoding/json"

// Backups and point-in-time recovery: CreateBackup, DescribeBackup,
// ListBackups, DeleteBackup, RestoreTableFromBackup,
// UpdateContinuousBackups, DescribeContinuousBackups and
// RestoreTableToPointInTime. Times are epoch seconds, as everywhere.

// CreateBackupInput is CreateBackup's request.
type CreateBackupInput struct {
	TableName  string
	BackupName string
}

// BackupDetails describes one backup.
type BackupDetails struct {
	BackupArn              string
	BackupName             string
	BackupSizeBytes        *int64 `json:",omitempty"`
	BackupStatus           string // CREATING, DELETED, AVAILABLE
	BackupType             string // USER, SYSTEM, AWS_BACKUP
	BackupCreationDateTime float64
	BackupExpiryDateTime   float64 `json:",omitempty"`
}

// CreateBackupOutput is CreateBackup's response.
type CreateBackupOutput struct {
	Metered
	BackupDetails *BackupDetails
}

// SourceTableDetails describes the table a backup was taken of, as it was.
type SourceTableDetails struct {
	TableName             string
	TableId               string
	TableArn              string `json:",omitempty"`
	TableSizeBytes        int64
	KeySchema             []KeySchemaElement
	TableCreationDateTime float64
	ProvisionedThroughput *ProvisionedThroughput
	ItemCount             int64
	BillingMode           string `json:",omitempty"`
}

// LocalSecondaryIndexInfo is an LSI of a backed-up table.
type LocalSecondaryIndexInfo struct {
	IndexName  string
	KeySchema  []KeySchemaElement
	Projection *Projection
}

// GlobalSecondaryIndexInfo is a GSI of a backed-up table.
type GlobalSecondaryIndexInfo struct {
	IndexName             string
	KeySchema             []KeySchemaElement
	Projection            *Projection
	ProvisionedThroughput *ProvisionedThroughput `json:",omitempty"`
}

// SourceTableFeatureDetails is what a backup keeps of the table's
// indexes, stream and TTL settings.
type SourceTableFeatureDetails struct {
	LocalSecondaryIndexes  []LocalSecondaryIndexInfo  `json:",omitempty"`
	GlobalSecondaryIndexes []GlobalSecondaryIndexInfo `json:",omitempty"`
	StreamDescription      *StreamSpecification       `json:",omitempty"`
	TimeToLiveDescription  *TimeToLiveDescription     `json:",omitempty"`
}

// BackupDescription is DescribeBackup's (and DeleteBackup's) description.
type BackupDescription struct {
	BackupDetails             *BackupDetails
	SourceTableDetails        *SourceTableDetails
	SourceTableFeatureDetails *SourceTableFeatureDetails
}

// DescribeBackupInput is DescribeBackup's request.
type DescribeBackupInput struct{ BackupArn string }

// DescribeBackupOutput is DescribeBackup's response.
type DescribeBackupOutput struct {
	Metered
	BackupDescription *BackupDescription
}

// DeleteBackupInput is DeleteBackup's request.
type DeleteBackupInput struct{ BackupArn string }

// DeleteBackupOutput is DeleteBackup's response.
type DeleteBackupOutput struct {
	Metered
	BackupDescription *BackupDescription
}

// ListBackupsInput is ListBackups' request.
type ListBackupsInput struct {
	TableName               string   `json:",omitempty"`
	Limit                   *int64   `json:",omitempty"`
	TimeRangeLowerBound     *float64 `json:",omitempty"`
	TimeRangeUpperBound     *float64 `json:",omitempty"`
	ExclusiveStartBackupArn string   `json:",omitempty"`
	BackupType              string   `json:",omitempty"`
}

// BackupSummary is one backup in ListBackups' answer.
type BackupSummary struct {
	TableName              string
	TableId                string
	TableArn               string
	BackupArn              string
	BackupName             string
	BackupCreationDateTime float64
	BackupExpiryDateTime   float64 `json:",omitempty"`
	BackupStatus           string
	BackupType             string
	BackupSizeBytes        int64
}

// ListBackupsOutput is ListBackups' response.
type ListBackupsOutput struct {
	Metered
	BackupSummaries        []BackupSummary
	LastEvaluatedBackupArn string `json:",omitempty"`
}

// RestoreTableFromBackupInput is RestoreTableFromBackup's request.
type RestoreTableFromBackupInput struct {
	TargetTableName               string
	BackupArn                     string
	BillingModeOverride           string                 `json:",omitempty"`
	GlobalSecondaryIndexOverride  []GlobalSecondaryIndex `json:",omitempty"`
	LocalSecondaryIndexOverride   []LocalSecondaryIndex  `json:",omitempty"`
	ProvisionedThroughputOverride *ProvisionedThroughput `json:",omitempty"`
	OnDemandThroughputOverride    json.RawMessage        `json:",omitempty"`
	SSESpecificationOverride      json.RawMessage        `json:",omitempty"`
}

// RestoreTableFromBackupOutput is RestoreTableFromBackup's response.
type RestoreTableFromBackupOutput struct {
	Metered
	TableDescription *TableDescription
}

// RestoreSummary says where a restored table came from.
type RestoreSummary struct {
	SourceBackupArn   string `json:",omitempty"`
	SourceTableArn    string `json:",omitempty"`
	RestoreDateTime   float64
	RestoreInProgress bool
}

// PointInTimeRecoverySpecification turns point-in-time recovery on or off.
type PointInTimeRecoverySpecification struct {
	PointInTimeRecoveryEnabled *bool
	RecoveryPeriodInDays       *int64 `json:",omitempty"`
}

// UpdateContinuousBackupsInput is UpdateContinuousBackups' request.
type UpdateContinuousBackupsInput struct {
	TableName                        string
	PointInTimeRecoverySpecification *PointInTimeRecoverySpecification
}

// PointInTimeRecoveryDescription is a table's point-in-time recovery.
type PointInTimeRecoveryDescription struct {
	PointInTimeRecoveryStatus  string  // ENABLED, DISABLED
	RecoveryPeriodInDays       int64   `json:",omitempty"`
	EarliestRestorableDateTime float64 `json:",omitempty"`
	LatestRestorableDateTime   float64 `json:",omitempty"`
}

// ContinuousBackupsDescription is a table's continuous backups.
type ContinuousBackupsDescription struct {
	ContinuousBackupsStatus        string // ENABLED, DISABLED
	PointInTimeRecoveryDescription *PointInTimeRecoveryDescription
}

// UpdateContinuousBackupsOutput is UpdateContinuousBackups' response.
type UpdateContinuousBackupsOutput struct {
	Metered
	ContinuousBackupsDescription *ContinuousBackupsDescription
}

// DescribeContinuousBackupsInput is DescribeContinuousBackups' request.
type DescribeContinuousBackupsInput struct{ TableName string }

// DescribeContinuousBackupsOutput is DescribeContinuousBackups' response.
type DescribeContinuousBackupsOutput struct {
	Metered
	ContinuousBackupsDescription *ContinuousBackupsDescription
}

// RestoreTableToPointInTimeInput is RestoreTableToPointInTime's request.
type RestoreTableToPointInTimeInput struct {
	SourceTableArn                string `json:",omitempty"`
	SourceTableName               string `json:",omitempty"`
	TargetTableName               string
	UseLatestRestorableTime       *bool                  `json:",omitempty"`
	RestoreDateTime               *float64               `json:",omitempty"`
	BillingModeOverride           string                 `json:",omitempty"`
	GlobalSecondaryIndexOverride  []GlobalSecondaryIndex `json:",omitempty"`
	LocalSecondaryIndexOverride   []LocalSecondaryIndex  `json:",omitempty"`
	ProvisionedThroughputOverride *ProvisionedThroughput `json:",omitempty"`
	OnDemandThroughputOverride    json.RawMessage        `json:",omitempty"`
	SSESpecificationOverride      json.RawMessage        `json:",omitempty"`
}

// RestoreTableToPointInTimeOutput is RestoreTableToPointInTime's response.
type RestoreTableToPointInTimeOutput struct {
	Metered
	TableDescription *TableDescription
}
