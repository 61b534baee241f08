package console

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
)

// inProc is an http.RoundTripper that serves requests with a handler in
// this process: the console reaches the admin API and the DynamoDB API
// through the very handlers the network does, with the session's own
// credential, so those handlers (and the guard behind them) decide what a
// session may see.
type inProc struct{ h http.Handler }

type remoteAddrKey struct{}

// withRemoteAddr returns ctx carrying the browser's address, which inProc
// gives the handler as the request's RemoteAddr (the audit log's source).
func withRemoteAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, remoteAddrKey{}, addr)
}

func (t inProc) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if r.Body == nil {
		r.Body = http.NoBody
	}
	r.RequestURI = r.URL.RequestURI()
	r.Host = req.URL.Host
	if r.ContentLength > 0 {
		// As net/http's server sees it: SigV4 may sign Content-Length.
		r.Header.Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	r.RemoteAddr, _ = req.Context().Value(remoteAddrKey{}).(string)
	if r.RemoteAddr == "" {
		r.RemoteAddr = "console"
	}
	w := &recorder{header: http.Header{}}
	t.h.ServeHTTP(w, r)
	if req.Body != nil {
		req.Body.Close()
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.header,
		Body:          io.NopCloser(bytes.NewReader(w.body.Bytes())),
		ContentLength: int64(w.body.Len()),
		Request:       req,
	}, nil
}

// recorder is the ResponseWriter inProc hands the handler.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}
