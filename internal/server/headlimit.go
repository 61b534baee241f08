package server

import (
	"bytes"
	"net"
)

// An HTTP request whose request line or header block exceeds
// MaxHeaderBytes is refused by net/http itself, before any handler runs,
// with 431 Request Header Fields Too Large. DynamoDB answers such a
// request with 400 Bad Request, and clients that treat 4xx codes they do
// not know as retryable or as a different failure see a difference. So
// every connection's writes pass through headLimitConn, which turns that
// one canned answer into a 400.
//
// NB: net/http writes the canned answer in one Write on the raw
// connection (server.go, conn.serve), and no handler of ours answers 431,
// so a Write that starts with the 431 status line is always that answer.
// The check is a prefix comparison per Write.

var (
	status431 = []byte("HTTP/1.1 431 ")
	answer400 = []byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n" +
		"400 Bad Request: request line or headers too large")
)

// headLimitListener wraps accepted connections in headLimitConns.
type headLimitListener struct{ net.Listener }

func (l headLimitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headLimitConn{Conn: c}, nil
}

// headLimitConn rewrites net/http's 431 answer into a 400.
type headLimitConn struct{ net.Conn }

func (c *headLimitConn) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, status431) {
		if _, err := c.Conn.Write(answer400); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}
