package isolation

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an http.RoundTripper that keeps the raw bytes of every
// request and response of the clients using it, so that tests can search
// everything a tenant ever received for values it must never see.
type recorder struct {
	name      string
	base      http.RoundTripper
	mu        sync.Mutex
	exchanges []exchange
	forbidden []string
	reported  map[int]bool
}

type exchange struct {
	target string // X-Amz-Target or METHOD path
	req    []byte // request headers and body
	resp   []byte // response status line, headers and body
}

func newRecorder(name string) *recorder {
	return &recorder{
		name:     name,
		base:     &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
		reported: map[int]bool{},
	}
}

// forbid adds strings that must never appear in a response unless the
// request that got it carried them.
func (r *recorder) forbid(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forbidden = append(r.forbidden, s...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.exchanges)
}

// RoundTrip sends req and keeps copies of both bodies.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := r.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))

	target := req.Header.Get("X-Amz-Target")
	if target == "" {
		target = req.Method + " " + req.URL.Path
	}
	var reqBuf, respBuf bytes.Buffer
	fmt.Fprintf(&reqBuf, "%s %s\n", req.Method, req.URL.RequestURI())
	writeHeaders(&reqBuf, req.Header)
	reqBuf.Write(body)
	fmt.Fprintf(&respBuf, "%s\n", resp.Status)
	writeHeaders(&respBuf, resp.Header)
	respBuf.Write(rb)
	r.mu.Lock()
	r.exchanges = append(r.exchanges, exchange{target: target, req: reqBuf.Bytes(), resp: respBuf.Bytes()})
	r.mu.Unlock()
	return resp, nil
}

func writeHeaders(b *bytes.Buffer, h http.Header) {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s: %s\n", k, strings.Join(h[k], ", "))
	}
	b.WriteByte('\n')
}

// check fails t for every exchange from index from on whose response
// holds a forbidden string its request did not hold. Each leaking
// exchange is reported once.
func (r *recorder) check(t *testing.T, from int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; i < len(r.exchanges); i++ {
		x := r.exchanges[i]
		for _, f := range r.forbidden {
			if f == "" || !bytes.Contains(x.resp, []byte(f)) || bytes.Contains(x.req, []byte(f)) {
				continue
			}
			if r.reported[i] {
				continue
			}
			r.reported[i] = true
			j := bytes.Index(x.resp, []byte(f))
			lo, hi := max(0, j-200), min(len(x.resp), j+len(f)+100)
			t.Errorf("LEAK: %s received a forbidden value (%.20s...) in the response to %s:\n...%s...",
				r.name, f, x.target, x.resp[lo:hi])
		}
	}
}

var _ http.RoundTripper = (*recorder)(nil)

// summary counts the captured exchanges by status class and error type.
func (r *recorder) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[string]int{}
	for _, x := range r.exchanges {
		st, _, _ := strings.Cut(string(x.resp), "\n")
		key := st
		if i := bytes.Index(x.resp, []byte(`"__type":"`)); i >= 0 {
			rest := x.resp[i+len(`"__type":"`):]
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				typ := string(rest[:j])
				if k := strings.LastIndexByte(typ, '#'); k >= 0 {
					typ = typ[k+1:]
				}
				key = st + " " + typ
			}
		}
		counts[key]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, counts[k]))
	}
	return fmt.Sprintf("%s received %d responses (%s)", r.name, len(r.exchanges), strings.Join(parts, ", "))
}
