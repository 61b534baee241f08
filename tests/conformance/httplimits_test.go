package conformance

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// rawHTTP writes req to a fresh connection and returns the response.
func rawHTTP(t *testing.T, srv *harness.Server, req string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Endpoint, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	go fmt.Fprint(conn, req)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp
}

// TestOversizedRequestHead: a request line or header block over the
// server's limit gets 400 Bad Request, never a success or 404.
func TestOversizedRequestHead(t *testing.T) {
	srv := harness.Start(t)
	for _, tc := range []struct{ name, req string }{
		{"request line", "POST /" + strings.Repeat("a", 128<<10) + " HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"},
		{"one header", "POST / HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 128<<10) + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"many headers", "POST / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Many: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 4000) + "Content-Length: 2\r\n\r\n{}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := rawHTTP(t, srv, tc.req)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Errorf("status %d, want 400", resp.StatusCode)
			}
		})
	}
}
