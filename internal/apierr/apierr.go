// Package apierr is tenantdb's one error type. An *Error carries a DynamoDB
// error kind, a message that is safe to show the caller (it never names
// another tenant's data) and an optional cause for the server log.
//
// The single table that maps a Kind to the wire's __type and HTTP status lives
// in package wire; every Kind declared here must appear in it (a test there
// enforces this). Anything that is not an *Error reaches the client as a
// generic InternalServerError.
package apierr

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Kind is the class of a failure as the client sees it.
type Kind int

// The kinds, named after DynamoDB's error types.
const (
	Internal Kind = iota // InternalServerError (the zero value: untyped failures)
	Validation
	Serialization
	ResourceNotFound
	ResourceInUse
	ConditionalCheckFailed
	TransactionCanceled
	TransactionConflict
	TransactionInProgress
	IdempotentParameterMismatch
	ItemCollectionSizeLimitExceeded
	LimitExceeded
	ProvisionedThroughputExceeded
	Throttling
	RequestLimitExceeded
	AccessDenied
	UnrecognizedClient
	InvalidSignature
	IncompleteSignature
	MissingAuthenticationToken
	ExpiredToken
	UnknownOperation
	RequestTooLarge
	ServiceUnavailable
	TenantSuspended
	NotFound // admin API: unknown REST resource
	Conflict // admin API: resource already exists
	Unauthorized
	MethodNotAllowed
	DuplicateItem     // PartiQL INSERT of an existing key
	ExpiredIterator   // DynamoDB Streams: a shard iterator older than 15 minutes
	TrimmedDataAccess // DynamoDB Streams: a position past the retention period
	ExportNotFound    // DescribeExport of an export the caller has not made
	ImportNotFound    // DescribeImport of an import the caller has not made
	InvalidExportTime // ExportTableToPointInTime at a time the history does not cover
	TableNotFound     // ExportTableToPointInTime of a table the caller does not see
	// Backups and point-in-time recovery.
	BackupNotFound                 // no such backup (for the caller)
	BackupInUse                    // a backup being created or deleted
	TableAlreadyExists             // a restore's target table exists
	InvalidRestoreTime             // outside the point-in-time recovery window
	PointInTimeRecoveryUnavailable // the source table has no point-in-time recovery
	ContinuousBackupsUnavailable   // continuous backups cannot be changed now

	kindCount // NB: keep last; wire's table test ranges up to it.
)

// KindCount is the number of declared kinds, for exhaustiveness tests.
const KindCount = int(kindCount)

// Error is a failure with a client-visible kind and message.
type Error struct {
	Kind    Kind
	Message string
	// Cause is for the server log only; it never reaches the client.
	Cause error
	// Denial marks an error of another kind (ResourceNotFound, say) that
	// answers a cross-tenant attempt: the client sees only the kind and
	// message, and the server audits it as a denial, as it does every
	// AccessDenied.
	Denial bool
	// Detail carries kind-specific payload that the wire layer encodes, such
	// as an item for ConditionalCheckFailed with
	// ReturnValuesOnConditionCheckFailure, or cancellation reasons. Its type
	// is owned by package wire.
	Detail any
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Kind, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// New returns an *Error of kind k with a formatted, client-safe message.
func New(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error of kind k whose cause is err.
func Wrap(k Kind, err error, format string, args ...any) *Error {
	return &Error{Kind: k, Message: fmt.Sprintf(format, args...), Cause: err}
}

// Validationf is shorthand for New(Validation, ...).
func Validationf(format string, args ...any) *Error {
	return New(Validation, format, args...)
}

// KindOf returns the kind of err: the Kind of the first *Error in its chain,
// or Internal.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// Is reports whether err carries kind k.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

var kindNames = [...]string{
	Internal:                        "InternalServerError",
	Validation:                      "ValidationException",
	Serialization:                   "SerializationException",
	ResourceNotFound:                "ResourceNotFoundException",
	ResourceInUse:                   "ResourceInUseException",
	ConditionalCheckFailed:          "ConditionalCheckFailedException",
	TransactionCanceled:             "TransactionCanceledException",
	TransactionConflict:             "TransactionConflictException",
	TransactionInProgress:           "TransactionInProgressException",
	IdempotentParameterMismatch:     "IdempotentParameterMismatchException",
	ItemCollectionSizeLimitExceeded: "ItemCollectionSizeLimitExceededException",
	LimitExceeded:                   "LimitExceededException",
	ProvisionedThroughputExceeded:   "ProvisionedThroughputExceededException",
	Throttling:                      "ThrottlingException",
	RequestLimitExceeded:            "RequestLimitExceeded",
	AccessDenied:                    "AccessDeniedException",
	UnrecognizedClient:              "UnrecognizedClientException",
	InvalidSignature:                "InvalidSignatureException",
	IncompleteSignature:             "IncompleteSignatureException",
	MissingAuthenticationToken:      "MissingAuthenticationTokenException",
	ExpiredToken:                    "ExpiredTokenException",
	UnknownOperation:                "UnknownOperationException",
	RequestTooLarge:                 "RequestEntityTooLarge",
	ServiceUnavailable:              "ServiceUnavailable",
	TenantSuspended:                 "TenantSuspendedException",
	NotFound:                        "NotFound",
	Conflict:                        "Conflict",
	Unauthorized:                    "Unauthorized",
	MethodNotAllowed:                "MethodNotAllowed",
	DuplicateItem:                   "DuplicateItemException",
	ExpiredIterator:                 "ExpiredIteratorException",
	TrimmedDataAccess:               "TrimmedDataAccessException",
	ExportNotFound:                  "ExportNotFoundException",
	ImportNotFound:                  "ImportNotFoundException",
	InvalidExportTime:               "InvalidExportTimeException",
	TableNotFound:                   "TableNotFoundException",
	BackupNotFound:                  "BackupNotFoundException",
	BackupInUse:                     "BackupInUseException",
	TableAlreadyExists:              "TableAlreadyExistsException",
	InvalidRestoreTime:              "InvalidRestoreTimeException",
	PointInTimeRecoveryUnavailable:  "PointInTimeRecoveryUnavailableException",
	ContinuousBackupsUnavailable:    "ContinuousBackupsUnavailableException",
}

// String returns the DynamoDB error type name of k.
func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// InternalMessage is what a client is told of a failure that carries no
// client-safe message.
const InternalMessage = "Internal server error"

// Message returns the message of err that may be shown to a client: the
// Message of the first *Error in its chain, or InternalMessage for an
// untyped error, whose text may name internals (file paths, another
// tenant's keys) and belongs in the server log only.
func Message(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return InternalMessage
}

// maxEcho is how many bytes of a client-supplied string a message echoes.
const maxEcho = 128

// Clip bounds how much of a client-supplied string an error message
// echoes: at most 128 bytes, cut at a character boundary, then "...".
func Clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
