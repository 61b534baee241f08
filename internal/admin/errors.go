package admin

import (
	"net/http"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// restStatus is THE mapping of error kinds to the admin API's HTTP
// statuses. (The data plane answers nearly everything with 400 because
// the AWS SDKs expect it; a REST API uses the statuses' meanings.) Kinds
// not listed are client errors, 400. The error code is the data plane's,
// wire.ErrorCode, so that one kind has one name everywhere.
var restStatus = map[apierr.Kind]int{
	apierr.Internal:                      http.StatusInternalServerError,
	apierr.AccessDenied:                  http.StatusForbidden,
	apierr.TenantSuspended:               http.StatusForbidden,
	apierr.Unauthorized:                  http.StatusUnauthorized,
	apierr.UnrecognizedClient:            http.StatusUnauthorized,
	apierr.InvalidSignature:              http.StatusUnauthorized,
	apierr.IncompleteSignature:           http.StatusUnauthorized,
	apierr.MissingAuthenticationToken:    http.StatusUnauthorized,
	apierr.ExpiredToken:                  http.StatusUnauthorized,
	apierr.NotFound:                      http.StatusNotFound,
	apierr.ResourceNotFound:              http.StatusNotFound,
	apierr.Conflict:                      http.StatusConflict,
	apierr.ResourceInUse:                 http.StatusConflict,
	apierr.MethodNotAllowed:              http.StatusMethodNotAllowed,
	apierr.RequestTooLarge:               http.StatusRequestEntityTooLarge,
	apierr.Throttling:                    http.StatusTooManyRequests,
	apierr.ProvisionedThroughputExceeded: http.StatusTooManyRequests,
	apierr.RequestLimitExceeded:          http.StatusTooManyRequests,
	apierr.ServiceUnavailable:            http.StatusServiceUnavailable,
}

// Status returns the HTTP status of kind k in the admin API.
func Status(k apierr.Kind) int {
	if s, ok := restStatus[k]; ok {
		return s
	}
	return http.StatusBadRequest
}

// Code returns the error code of kind k, e.g. "AccessDeniedException".
func Code(k apierr.Kind) string { return wire.ErrorCode(k) }
