package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"sync/atomic"

	"github.com/tenantdb/tenantdb/internal/changelog"
)

// batch is a delivery being made: its records encoded straight into the
// body, one buffer the worker reuses from delivery to delivery. Encoding
// each record into a slice of its own and then copying them all into the
// body (encode) allocated about three times the body per delivery
// (BENCHMARKS.md §22); the body is the same bytes.
type batch struct {
	buf    []byte
	starts []int // where each record begins in buf
	size   int   // the records' bytes, without the framing
	sent   *sentBody
	max    int // the records' bytes a body may hold (0: maxBody)
}

// keepBody bounds the buffer a worker keeps between deliveries.
const keepBody = 1 << 20

// reset starts an empty delivery.
func (b *batch) reset() {
	if b.sent != nil && !b.sent.done() {
		// NB: the transport may still read the last body (it closes
		// every reader it made when it is done): leave that buffer to it.
		b.buf = nil
	}
	b.sent = nil
	if cap(b.buf) > keepBody {
		b.buf = nil
	}
	b.buf = append(b.buf[:0], `{"Records":[`...)
	b.starts, b.size = b.starts[:0], 0
}

// add appends the record of e, unless the batch holds records already and
// e's would take them past maxBody: then it reports false and the batch
// is as it was.
func (b *batch) add(enc *encoder, e changelog.Entry) bool {
	at := len(b.buf)
	if len(b.starts) > 0 {
		b.buf = append(b.buf, ',')
	}
	start := len(b.buf)
	b.buf = enc.append(b.buf, e)
	n := len(b.buf) - start
	limit := b.max
	if limit <= 0 {
		limit = maxBody
	}
	if len(b.starts) > 0 && b.size+n > limit {
		b.buf = b.buf[:at]
		return false
	}
	b.starts = append(b.starts, start)
	b.size += n
	return true
}

// len returns the number of records in the batch.
func (b *batch) len() int { return len(b.starts) }

// body closes the batch and returns its body: what encode of records()
// returns. It is valid until the next reset.
func (b *batch) body() []byte {
	b.buf = append(b.buf, "]}"...)
	return b.buf
}

// records returns copies of the batch's encoded records (for the
// dead-letter list, which outlives the buffer).
func (b *batch) records() []json.RawMessage {
	out := make([]json.RawMessage, len(b.starts))
	for i, s := range b.starts {
		end := len(b.buf) - len("]}")
		if i+1 < len(b.starts) {
			end = b.starts[i+1] - 1 // before the comma
		}
		out[i] = bytes.Clone(b.buf[s:end])
	}
	return out
}

// sender returns what post reads the body through: it tells reset when
// the transport is done with the buffer.
func (b *batch) sender() *sentBody {
	b.sent = &sentBody{}
	return b.sent
}

// sentBody counts the readers of one body a transport was given and has
// not closed yet (a retry on another connection reads it again, through
// the request's GetBody).
type sentBody struct {
	open atomic.Int32
}

// reader returns a new reader of body, counted until it is closed.
func (s *sentBody) reader(body []byte) io.ReadCloser {
	s.open.Add(1)
	return &bodyReader{Reader: bytes.NewReader(body), s: s}
}

// done reports whether every reader handed out was closed.
func (s *sentBody) done() bool { return s.open.Load() == 0 }

type bodyReader struct {
	*bytes.Reader
	s      *sentBody
	closed atomic.Bool
}

func (r *bodyReader) Close() error {
	if r.closed.CompareAndSwap(false, true) {
		r.s.open.Add(-1)
	}
	return nil
}
