package sdkhttp

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
)

// closingBody fails every read after Close, as the SDK's request body
// stream does once the SDK has closed it.
type closingBody struct {
	r      io.Reader
	closed bool
}

func (b *closingBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("read on closed body")
	}
	return b.r.Read(p)
}

func (b *closingBody) Close() error { b.closed = true; return nil }

// lateReader is a transport that, like net/http's write loop, reads the
// request body again after the caller may have closed it.
type lateReader struct {
	orig *closingBody
	got  []byte
	err  error
}

func (l *lateReader) Do(req *http.Request) (*http.Response, error) {
	l.orig.Close() // the SDK closes its stream when Do returns
	l.got, l.err = io.ReadAll(req.Body)
	return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
}

func TestOwnBodySurvivesTheCallersClose(t *testing.T) {
	body := []byte(`{"TableName":"t"}`)
	orig := &closingBody{r: bytes.NewReader(body)}
	req, err := http.NewRequest("POST", "http://127.0.0.1/", orig)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	inner := &lateReader{orig: orig}
	if _, err := OwnBody(inner).Do(req); err != nil {
		t.Fatal(err)
	}
	if inner.err != nil || !bytes.Equal(inner.got, body) {
		t.Fatalf("transport read %q, %v; want the whole body", inner.got, inner.err)
	}
	if !orig.closed {
		t.Error("the caller's body was not closed")
	}
	// Without OwnBody the late read fails: the race it avoids.
	orig2 := &closingBody{r: bytes.NewReader(body)}
	req2, _ := http.NewRequest("POST", "http://127.0.0.1/", orig2)
	req2.ContentLength = int64(len(body))
	inner2 := &lateReader{orig: orig2}
	inner2.Do(req2)
	if inner2.err == nil {
		t.Error("the test's late read does not fail without OwnBody")
	}
}
