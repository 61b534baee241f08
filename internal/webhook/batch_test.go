package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
)

func batchEntries(n, size int) []changelog.Entry {
	var es []changelog.Entry
	for i := 0; i < n; i++ {
		// NB: one attribute per item, so that two encodings of a record
		// are the same bytes (an item's attributes are in map order).
		img := attr.Item{"v": attr.Str(strings.Repeat("\"é\x01", size/3+i))}
		es = append(es, changelog.Entry{
			Record: changelog.Record{Seq: uint64(i + 1), Event: changelog.Modify, Time: time.UnixMilli(1700000000000 + int64(i)),
				Keys: attr.Item{"pk": attr.Str(fmt.Sprint("k", i))}, Old: img, New: img, Expired: i%5 == 4},
			Stream: 1700000000000 + uint64(i/7), EventID: fmt.Sprintf("%032x", i), SequenceNumber: changelog.FormatSequenceNumber(changelog.Position{Seq: uint64(i + 1)}),
		})
	}
	return es
}

// TestBatchMatchesEncode: a batch, its buffer reused from delivery to
// delivery, makes the body encode makes of the records encoded one by
// one (same bytes), cuts before the record that would pass maxBody, and
// gives the dead-letter list copies of those records.
func TestBatchMatchesEncode(t *testing.T) {
	src := source{Region: "eu-west-1", Account: "123456789012"}
	enc := src.encoder("Orders")
	var b batch
	for round, es := range [][]changelog.Entry{batchEntries(1, 10), batchEntries(40, 300), batchEntries(3, 3000), batchEntries(2, 0)} {
		b.reset()
		var recs []json.RawMessage
		for _, e := range es {
			if !b.add(enc, e) {
				t.Fatal("a small batch was cut")
			}
			recs = append(recs, json.RawMessage(src.encoder("Orders").append(nil, e)))
		}
		want, _ := encode(recs)
		if got := b.body(); !bytes.Equal(got, want) {
			t.Fatalf("round %d: body\n%s\nwant\n%s", round, got, want)
		}
		if !json.Valid(want) {
			t.Fatalf("round %d: invalid JSON", round)
		}
		dl := b.records()
		if len(dl) != len(recs) {
			t.Fatalf("round %d: %d dead-letter records, want %d", round, len(dl), len(recs))
		}
		for i := range dl {
			if !bytes.Equal(dl[i], recs[i]) {
				t.Fatalf("round %d: dead-letter record %d = %s, want %s", round, i, dl[i], recs[i])
			}
		}
		// The body is made by post's reader and closed: the buffer is
		// reused; the dead letters are copies.
		s := b.sender()
		r := s.reader(b.body())
		io.Copy(io.Discard, r)
		r.Close()
		b.reset()
		if len(dl) > 0 && !bytes.Equal(dl[0], recs[0]) {
			t.Fatal("resetting the batch changed a dead letter")
		}
	}

	// maxBody: a record that would take the records past it is left for
	// the next batch; a first record always goes.
	big := batchEntries(1, 0)[0]
	big.New = attr.Item{"v": attr.Str(strings.Repeat("x", maxBody/2-1000))}
	b.reset()
	if !b.add(enc, big) || !b.add(enc, big) {
		t.Fatal("two half-limit records did not fit")
	}
	huge := big
	huge.New = attr.Item{"v": attr.Str(strings.Repeat("x", maxBody))}
	if b.add(enc, huge) {
		t.Fatal("a record past maxBody was added to a batch holding records")
	}
	if b.len() != 2 {
		t.Fatalf("after a refused record the batch holds %d", b.len())
	}
	var recs []json.RawMessage
	for range 2 {
		recs = append(recs, enc.append(nil, big))
	}
	if want, _ := encode(recs); !bytes.Equal(b.body(), want) {
		t.Fatal("a refused record changed the body")
	}
	b.reset()
	if !b.add(enc, huge) {
		t.Fatal("a huge first record was refused")
	}
}

// TestBatchKeepsABodyStillRead: while the transport has not closed every
// reader of the last body (a retry reads it again through GetBody), the
// next batch gets a new buffer rather than write over it.
func TestBatchKeepsABodyStillRead(t *testing.T) {
	enc := source{Region: "r", Account: "1"}.encoder("T")
	var b batch
	b.reset()
	b.add(enc, batchEntries(1, 10)[0])
	body := b.body()
	sent := b.sender()
	first := sent.reader(body)
	retry := sent.reader(body) // GetBody
	first.Close()
	kept := bytes.Clone(body)
	b.reset()
	b.add(enc, batchEntries(3, 500)[2])
	b.body()
	if got, _ := io.ReadAll(retry); !bytes.Equal(got, kept) {
		t.Fatalf("a body still being read was overwritten:\n%s\nwant\n%s", got, kept)
	}
	retry.Close()
	if !sent.done() {
		t.Fatal("every reader closed, yet the body is not done")
	}
}

// TestPostSendsTheBody: post sends the batch's body with its length (not
// chunked), and the transport closes its reader, so the buffer is reused.
func TestPostSendsTheBody(t *testing.T) {
	var got []byte
	var length int64
	var chunked bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		length, chunked = r.ContentLength, len(r.TransferEncoding) > 0
	}))
	defer srv.Close()
	body := []byte(`{"Records":[{"a":1}]}`)
	s := &sentBody{}
	req, err := http.NewRequest(http.MethodPost, srv.URL, s.reader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !bytes.Equal(got, body) || length != int64(len(body)) || chunked {
		t.Fatalf("received %q (length %d, chunked %v), want %q", got, length, chunked, body)
	}
	for deadline := time.Now().Add(5 * time.Second); !s.done(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the transport never closed the body's reader")
		}
	}
}

// FuzzAppendQuoted: appendQuoted writes what encoding/json writes for any
// string (it takes a short cut for letters and digits only).
func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "000000000100000000000000000007", "0123abcdefABCDEF", `a"b`, "é", "\x00", "\u2028", "<>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := appendQuoted([]byte("x"), s), append([]byte("x"), quoted(s)...); !bytes.Equal(got, want) {
			t.Fatalf("appendQuoted(%q) = %s, want %s", s, got, want)
		}
	})
}
