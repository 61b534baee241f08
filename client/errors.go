package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Error is an error answer of the API: its HTTP status, its code (the
// DynamoDB-style name of the error kind, e.g. "AccessDeniedException") and
// its message. Check it with errors.As, or classify it with IsNotFound and
// its siblings.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.Status)
}

// The classes of error answers, by HTTP status: errors.Is(err,
// ErrNotFound) reports whether err is an *Error of status 404, and so on.
var (
	ErrUnauthorized = errors.New("client: unauthorized")       // 401: a missing, unknown, expired or revoked key
	ErrForbidden    = errors.New("client: forbidden")          // 403: the key may not do this, or its tenant is suspended
	ErrNotFound     = errors.New("client: not found")          // 404: no such tenant, key or route (or not the key's to see)
	ErrConflict     = errors.New("client: conflict")           // 409: it exists already
	ErrThrottled    = errors.New("client: throttled")          // 429: over a quota; retry later
	ErrInvalid      = errors.New("client: invalid request")    // 400: a malformed or invalid request
	ErrServer       = errors.New("client: server unavailable") // 5xx
)

// Is makes errors.Is(err, ErrNotFound) and the like work on an *Error.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrThrottled:
		return e.Status == http.StatusTooManyRequests
	case ErrInvalid:
		return e.Status == http.StatusBadRequest
	case ErrServer:
		return e.Status >= 500
	}
	return false
}

// IsNotFound reports whether err is a 404 answer.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsForbidden reports whether err is a 403 answer.
func IsForbidden(err error) bool { return errors.Is(err, ErrForbidden) }

// IsUnauthorized reports whether err is a 401 answer.
func IsUnauthorized(err error) bool { return errors.Is(err, ErrUnauthorized) }

// IsConflict reports whether err is a 409 answer.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// IsThrottled reports whether err is a 429 answer.
func IsThrottled(err error) bool { return errors.Is(err, ErrThrottled) }

// StatusOf returns the HTTP status of an error answer, or 0 if err is not
// one (nil, or a network error).
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// errorBody is the API's error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func errorOf(status int, data []byte) *Error {
	var eb errorBody
	if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
		return &Error{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	return &Error{Status: status, Code: http.StatusText(status), Message: strings.TrimSpace(string(data))}
}
