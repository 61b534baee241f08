package wire

import (
	"errors"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// ErrorShape is how one apierr.Kind appears on the wire.
type ErrorShape struct {
	// Type is the __type member, a Coral shape id. SDKs take the part after
	// '#' as the error code.
	Type string
	// Status is the HTTP status code.
	Status int
}

// Namespaces of the shape ids DynamoDB answers with.
const (
	nsDynamo       = "com.amazonaws.dynamodb.v20120810#"
	nsCoral        = "com.amazon.coral.service#"
	nsValidate     = "com.amazon.coral.validate#"
	nsAvailability = "com.amazon.coral.availability#"
	nsTenantDB     = "com.tenantdb#"
)

// errorTable is THE mapping of error kinds to the wire. Every kind up to
// apierr.KindCount has an entry; TestErrorTableComplete enforces it.
//
// NB: DynamoDB answers every client error with 400, including throttling
// and authentication failures, and the SDKs rely on that (they retry 5xx as
// transient). Only the admin API's REST kinds use other 4xx codes.
var errorTable = [apierr.KindCount]ErrorShape{
	apierr.Internal:                        {nsDynamo + "InternalServerError", 500},
	apierr.Validation:                      {nsValidate + "ValidationException", 400},
	apierr.Serialization:                   {nsCoral + "SerializationException", 400},
	apierr.ResourceNotFound:                {nsDynamo + "ResourceNotFoundException", 400},
	apierr.ResourceInUse:                   {nsDynamo + "ResourceInUseException", 400},
	apierr.ConditionalCheckFailed:          {nsDynamo + "ConditionalCheckFailedException", 400},
	apierr.TransactionCanceled:             {nsDynamo + "TransactionCanceledException", 400},
	apierr.TransactionConflict:             {nsDynamo + "TransactionConflictException", 400},
	apierr.TransactionInProgress:           {nsDynamo + "TransactionInProgressException", 400},
	apierr.IdempotentParameterMismatch:     {nsDynamo + "IdempotentParameterMismatchException", 400},
	apierr.ItemCollectionSizeLimitExceeded: {nsDynamo + "ItemCollectionSizeLimitExceededException", 400},
	apierr.LimitExceeded:                   {nsDynamo + "LimitExceededException", 400},
	apierr.ProvisionedThroughputExceeded:   {nsDynamo + "ProvisionedThroughputExceededException", 400},
	apierr.Throttling:                      {nsAvailability + "ThrottlingException", 400},
	apierr.RequestLimitExceeded:            {nsDynamo + "RequestLimitExceeded", 400},
	apierr.AccessDenied:                    {nsCoral + "AccessDeniedException", 400},
	apierr.UnrecognizedClient:              {nsCoral + "UnrecognizedClientException", 400},
	apierr.InvalidSignature:                {nsCoral + "InvalidSignatureException", 400},
	apierr.IncompleteSignature:             {nsCoral + "IncompleteSignatureException", 400},
	apierr.MissingAuthenticationToken:      {nsCoral + "MissingAuthenticationTokenException", 400},
	apierr.ExpiredToken:                    {nsCoral + "ExpiredTokenException", 400},
	apierr.UnknownOperation:                {nsCoral + "UnknownOperationException", 400},
	apierr.RequestTooLarge:                 {nsCoral + "RequestEntityTooLarge", 413},
	apierr.ServiceUnavailable:              {nsCoral + "ServiceUnavailable", 503},
	apierr.TenantSuspended:                 {nsTenantDB + "TenantSuspendedException", 400},
	apierr.NotFound:                        {nsTenantDB + "NotFound", 404},
	apierr.Conflict:                        {nsTenantDB + "Conflict", 409},
	apierr.Unauthorized:                    {nsTenantDB + "Unauthorized", 401},
	apierr.MethodNotAllowed:                {nsTenantDB + "MethodNotAllowed", 405},
	apierr.DuplicateItem:                   {nsDynamo + "DuplicateItemException", 400},
	apierr.ExpiredIterator:                 {nsDynamo + "ExpiredIteratorException", 400},
	apierr.TrimmedDataAccess:               {nsDynamo + "TrimmedDataAccessException", 400},
	apierr.ExportNotFound:                  {nsDynamo + "ExportNotFoundException", 400},
	apierr.ImportNotFound:                  {nsDynamo + "ImportNotFoundException", 400},
	apierr.InvalidExportTime:               {nsDynamo + "InvalidExportTimeException", 400},
	apierr.TableNotFound:                   {nsDynamo + "TableNotFoundException", 400},
	apierr.BackupNotFound:                  {nsDynamo + "BackupNotFoundException", 400},
	apierr.BackupInUse:                     {nsDynamo + "BackupInUseException", 400},
	apierr.TableAlreadyExists:              {nsDynamo + "TableAlreadyExistsException", 400},
	apierr.InvalidRestoreTime:              {nsDynamo + "InvalidRestoreTimeException", 400},
	apierr.PointInTimeRecoveryUnavailable:  {nsDynamo + "PointInTimeRecoveryUnavailableException", 400},
	apierr.ContinuousBackupsUnavailable:    {nsDynamo + "ContinuousBackupsUnavailableException", 400},
}

// internalMessage is what an untyped error tells the client.
const internalMessage = apierr.InternalMessage

// Shape returns the wire shape of kind k. Unknown kinds are internal errors.
func Shape(k apierr.Kind) ErrorShape {
	if k >= 0 && int(k) < len(errorTable) && errorTable[k].Type != "" {
		return errorTable[k]
	}
	return errorTable[apierr.Internal]
}

// ErrorCode returns the code an SDK reports for kind k: the part of its
// __type after '#'.
func ErrorCode(k apierr.Kind) string {
	t := Shape(k).Type
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] == '#' {
			return t[i+1:]
		}
	}
	return t
}

// AppendError appends err's JSON error body to dst and returns it with the
// HTTP status to send:
//
//	{"__type":"com.amazon.coral.validate#ValidationException","message":"..."}
//
// TransactionCanceled errors also carry "CancellationReasons", and
// ConditionalCheckFailed errors whose Detail holds an item carry "Item".
// An error without an *apierr.Error in its chain becomes a generic
// InternalServerError whose message says nothing about the cause.
func AppendError(dst []byte, err error) ([]byte, int) {
	var e *apierr.Error
	if !errors.As(err, &e) {
		sh := errorTable[apierr.Internal]
		dst = appendErrorHead(dst, sh.Type, internalMessage)
		return append(dst, '}'), sh.Status
	}
	sh := Shape(e.Kind)
	msg := e.Message
	if msg == "" && e.Kind == apierr.Internal {
		msg = internalMessage
	}
	dst = appendErrorHead(dst, sh.Type, msg)
	switch d := e.Detail.(type) {
	case TransactionCanceledDetail:
		dst = appendCancellationReasons(dst, d.CancellationReasons)
	case *TransactionCanceledDetail:
		if d != nil {
			dst = appendCancellationReasons(dst, d.CancellationReasons)
		}
	case ConditionalCheckFailedDetail:
		if d.Item != nil {
			dst = append(dst, `,"Item":`...)
			dst = appendItem(dst, d.Item)
		}
	case *ConditionalCheckFailedDetail:
		if d != nil && d.Item != nil {
			dst = append(dst, `,"Item":`...)
			dst = appendItem(dst, d.Item)
		}
	}
	return append(dst, '}'), sh.Status
}

func appendErrorHead(dst []byte, typ, msg string) []byte {
	dst = append(dst, `{"__type":`...)
	dst = appendString(dst, typ)
	dst = append(dst, `,"message":`...)
	return appendString(dst, msg)
}

func appendCancellationReasons(dst []byte, rs []CancellationReason) []byte {
	dst = append(dst, `,"CancellationReasons":[`...)
	for i, r := range rs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		n := 0
		if r.Item != nil {
			dst = append(dst, `"Item":`...)
			dst = appendItem(dst, r.Item)
			n++
		}
		code := r.Code
		if code == "" {
			code = "None"
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `"Code":`...)
		dst = appendString(dst, code)
		if r.Message != "" {
			dst = append(dst, `,"Message":`...)
			dst = appendString(dst, r.Message)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
