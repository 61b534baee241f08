package verify

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// recorder is the HTTP transport of one attacking identity's clients
// (DynamoDB and admin API): it reads every answer and reports any of the
// forbidden strings (the victims' secrets, ids and key ids) in it, unless
// the request itself carried that string (a guessed key prefix echoed in
// an error is not a leak).
type recorder struct {
	label  string
	next   http.RoundTripper
	mu     sync.Mutex
	forbid []string
	found  []string
	// failed reports whether the last answer was not one: a network
	// error, a throttled request or a server error (5xx). The SDK's
	// retries make the last answer of an attempt the one that counts.
	failed bool
	// sent holds the forbidden strings this identity itself has sent;
	// while echo is set (reading its own audit log, which records its
	// requests) they are not leaks in any answer.
	sent map[string]bool
	echo bool
}

func newRecorder(label string, next http.RoundTripper) *recorder {
	if next == nil {
		next = http.DefaultTransport
	}
	return &recorder{label: label, next: next}
}

func (r *recorder) forbidAll(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range s {
		if v != "" {
			r.forbid = append(r.forbid, v)
		}
	}
}

// RoundTrip sends req with a body of its own (NB: aws-sdk-go-v2 closes a
// request's body when the answer's headers arrive, while net/http may
// still read it) and scans the answer.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("verify: reading a request body: %w", err)
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		req.ContentLength = int64(len(b))
	}
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		r.mu.Lock()
		r.failed = true
		r.mu.Unlock()
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("verify: reading an answer: %w", err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	sent := req.URL.String() + "\n" + string(reqBody)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 ||
		bytes.Contains(body, []byte("ThrottlingException")) || bytes.Contains(body, []byte("ProvisionedThroughputExceededException"))
	if r.sent == nil {
		r.sent = map[string]bool{}
	}
	for _, f := range r.forbid {
		if strings.Contains(sent, f) {
			r.sent[f] = true
		}
	}
	for _, f := range r.forbid {
		if bytes.Contains(body, []byte(f)) && !strings.Contains(sent, f) && !(r.echo && r.sent[f]) {
			r.found = append(r.found, fmt.Sprintf("%s received %q in the answer to %s %s", r.label, clip(f), req.Method, req.URL.Path))
		}
	}
	return resp, nil
}

// echoes sets whether the answers may echo what this identity sent in
// earlier requests.
func (r *recorder) echoes(on bool) {
	r.mu.Lock()
	r.echo = on
	r.mu.Unlock()
}

// take returns and forgets what was found since the last take, and
// whether the last answer was a failure.
func (r *recorder) take() (found []string, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	found, failed = r.found, r.failed
	r.found, r.failed = nil, false
	return found, failed
}

func clip(s string) string {
	if len(s) > 24 {
		return s[:24] + "..."
	}
	return s
}
