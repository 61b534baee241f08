package loadgen

import (
	"context"
	"errors"
	"net"
	"sort"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// throttleCodes are the DynamoDB error codes that mean "slow down". The SDKs
// retry them with backoff; the load generator counts them separately.
var throttleCodes = map[string]bool{
	"ProvisionedThroughputExceededException": true,
	"ThrottlingException":                    true,
	"RequestLimitExceeded":                   true,
	"Throttling":                             true,
	"ThrottledException":                     true,
	"TooManyRequestsException":               true,
	"SlowDown":                               true,
}

// IsThrottle reports whether code is one of DynamoDB's throttling error codes.
func IsThrottle(code string) bool { return throttleCodes[code] }

// ErrorCode classifies err for the report: the service's error code
// (smithy APIError.ErrorCode) when the server answered with one, otherwise a
// short client-side class such as "Timeout" or "ConnectionError".
func ErrorCode(err error) string {
	if errors.Is(err, errMiss) {
		return "ItemNotFound"
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		if c := apiErr.ErrorCode(); c != "" {
			return c
		}
	}
	var maxErr *retry.MaxAttemptsError
	if errors.As(err, &maxErr) && maxErr.Err != nil && maxErr.Err != err {
		return ErrorCode(maxErr.Err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "Timeout"
	}
	if errors.Is(err, context.Canceled) {
		return "Canceled"
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "Timeout"
	}
	var sendErr *smithyhttp.RequestSendError
	if errors.As(err, &sendErr) {
		return "ConnectionError" // e.g. "http: server closed idle connection"
	}
	var respErr *smithyhttp.ResponseError
	if errors.As(err, &respErr) && respErr.HTTPStatusCode() != 0 {
		return "HTTPStatus" + strconv.Itoa(respErr.HTTPStatusCode())
	}
	if errors.As(err, &netErr) {
		return "ConnectionError"
	}
	return "ClientError"
}

// ErrorStat is the number of errors of one code and one example message.
type ErrorStat struct {
	Code     string `json:"code"`
	Count    uint64 `json:"count"`
	Sample   string `json:"sample"`
	Throttle bool   `json:"throttle,omitempty"`
}

// errorTally counts errors by code. It is safe for concurrent use.
type errorTally struct {
	mu    sync.Mutex
	stats map[string]*ErrorStat
}

func (t *errorTally) add(err error) string {
	code := ErrorCode(err)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stats == nil {
		t.stats = make(map[string]*ErrorStat)
	}
	s := t.stats[code]
	if s == nil {
		msg := err.Error()
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		s = &ErrorStat{Code: code, Sample: msg, Throttle: IsThrottle(code)}
		t.stats[code] = s
	}
	s.Count++
	return code
}

// snapshot returns the tallies, most frequent first.
func (t *errorTally) snapshot() []ErrorStat {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]ErrorStat, 0, len(t.stats))
	for _, s := range t.stats {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Code < out[j].Code
	})
	return out
}
