package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Transfers runs a tenant's exports and imports (package transfer).
type Transfers interface {
	// ExportStream emits the events of an export of s's tables.
	ExportStream(ctx context.Context, s tenancy.Scope, req client.ExportRequest, emit func(client.ExportEvent) error) error
	// ImportBatch writes one batch of items into a table of s's tenant.
	ImportBatch(ctx context.Context, s tenancy.Scope, req client.ImportRequest) (client.ImportResult, error)
}

// maxImportBody bounds an import batch (at most 1,000 items of up to
// 400 KB each would not fit; the CLI sends batches of at most 4 MB).
const maxImportBody = 32 << 20

// ServeTransfers adds the export and import endpoints over t: POST
// /v1/tenants/{tenant}/exports answers a stream of JSON lines
// (client.ExportEvent), POST /v1/tenants/{tenant}/imports writes one
// batch. Both are tenant routes; the operator, admitted to them like to
// every tenant route, is refused by t (it has no access to tenant data)
// and the refusal is audited.
func (h *Handler) ServeTransfers(t Transfers) {
	h.handle("POST /v1/tenants/{tenant}/exports", tenantAdmin, func(c *call) error {
		var req client.ExportRequest
		if err := decode(c.r, &req); err != nil {
			return err
		}
		return h.exportStream(c, t, req)
	})
	h.handleLimit("POST /v1/tenants/{tenant}/imports", tenantAdmin, maxImportBody, func(c *call) error {
		var req client.ImportRequest
		dec := json.NewDecoder(c.r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return apierr.New(apierr.RequestTooLarge, "an import batch may hold at most %d bytes", maxImportBody)
			}
			return apierr.Validationf("malformed JSON body: %s", apierr.Clip(err.Error()))
		}
		out, err := t.ImportBatch(c.ctx, c.s, req)
		if err != nil {
			return h.refused(c, err)
		}
		return WriteJSON(c.w, http.StatusOK, out)
	})
}

// refused audits an AccessDenied answer as the caller's denied attempt.
func (h *Handler) refused(c *call, err error) error {
	if apierr.Is(err, apierr.AccessDenied) {
		return h.deny(c, err, apierr.Clip(apierr.Message(err)))
	}
	return err
}

// exportStream answers the export's events as JSON lines. An error before
// the first event is an ordinary error answer; after it, an Error event
// ends the stream.
func (h *Handler) exportStream(c *call, t Transfers, req client.ExportRequest) error {
	var bw *bufio.Writer
	flusher, _ := c.w.(http.Flusher)
	rc := http.NewResponseController(c.w)
	n := 0
	emit := func(ev client.ExportEvent) error {
		// NB: the server's write timeout bounds ordinary answers; an export
		// streams for as long as it takes, so each stretch gets its own.
		if n++; n%4096 == 1 {
			rc.SetWriteDeadline(time.Now().Add(2 * time.Minute))
		}
		if bw == nil {
			c.w.Header().Set("Content-Type", "application/x-ndjson")
			c.w.WriteHeader(http.StatusOK)
			bw = bufio.NewWriterSize(c.w, 256<<10)
		}
		if ev.Item != nil && ev.Table == nil && ev.End == nil && ev.Error == nil {
			// NB: the hot path, written by hand: the item is already
			// compact DynamoDB JSON (transfer.AppendItem), which
			// json.Marshal would validate and copy once more.
			bw.WriteString(`{"item":`)
			bw.Write(ev.Item)
			bw.WriteString(`,"size":`)
			bw.Write(strconv.AppendInt(nil, ev.Size, 10))
			_, err := bw.WriteString("}\n")
			return err
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		bw.Write(b)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		if ev.Item == nil && flusher != nil { // table boundaries reach the client at once
			bw.Flush()
			flusher.Flush()
		}
		return nil
	}
	err := t.ExportStream(c.ctx, c.s, req, emit)
	if bw == nil {
		if err != nil {
			return h.refused(c, err)
		}
		return apierr.New(apierr.Internal, "the export produced nothing")
	}
	if err != nil {
		var e *apierr.Error
		msg, code := "internal server error", Code(apierr.Internal)
		if errors.As(err, &e) {
			msg, code = e.Message, Code(e.Kind)
		}
		if apierr.KindOf(err) == apierr.Internal {
			h.log.Error("export failed", "err", err)
		}
		b, _ := json.Marshal(client.ExportEvent{Error: &client.ExportError{Code: code, Message: msg}})
		bw.Write(append(b, '\n'))
	}
	bw.Flush()
	return nil
}
