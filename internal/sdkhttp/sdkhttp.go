// Package sdkhttp provides the HTTP client wrapper that tenantdb's own
// aws-sdk-go-v2 clients (the load generator, the test harness) use.
package sdkhttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// Doer is what aws-sdk-go-v2 takes as its HTTPClient.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// OwnBody returns c giving its transport its own copy of each request
// body.
//
// NB: aws-sdk-go-v2 (smithy-go's ClientHandler) closes the request body as
// soon as Do returns, i.e. when the response headers arrive, but net/http's
// write loop may still read the body once more after sending it (to check
// its length). That read then fails, and the transport closes the
// connection under the response being read: "deserialization failed ... use
// of closed network connection" (aws/aws-sdk-go-v2#1825, #2737). Against a
// server that answers within microseconds (loopback) it hits about one
// request in a thousand. The SDK hides it by retrying; clients that count
// every error instead of retrying (tdbload, the tests) avoid the race. The
// copy costs one memcpy of the request body.
func OwnBody(c Doer) Doer { return ownBody{c} }

type ownBody struct{ c Doer }

func (o ownBody) Do(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength > 0 {
		buf := make([]byte, req.ContentLength)
		_, err := io.ReadFull(req.Body, buf)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("sdkhttp: read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(buf))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	}
	return o.c.Do(req)
}
