package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// ExportRequest is the body of POST /v1/tenants/{tenant}/exports.
type ExportRequest struct {
	// Tables to export; none means every table the credential sees.
	Tables []string `json:"tables,omitempty"`
	// At asks for the state at a past time (needs the server's change-log
	// history); nil means now.
	At *time.Time `json:"at,omitempty"`
}

// ExportEvent is one line of the export stream that POST
// /v1/tenants/{tenant}/exports answers (JSON lines): a Table starts a
// table, each Item is one of its items, End closes it; Error ends the
// stream early.
type ExportEvent struct {
	Table *ExportTable    `json:"table,omitempty"`
	Item  json.RawMessage `json:"item,omitempty"` // the item's attributes in DynamoDB JSON, names sorted
	Size  int64           `json:"size,omitempty"` // the item's DynamoDB size in bytes
	End   *ExportTableEnd `json:"end,omitempty"`
	Error *ExportError    `json:"error,omitempty"`
}

// ExportTable starts a table of an export.
type ExportTable struct {
	Name       string    `json:"name"`
	TableArn   string    `json:"table_arn"`
	TableID    string    `json:"table_id"`
	ExportArn  string    `json:"export_arn"`
	ExportID   string    `json:"export_id"`
	ExportTime time.Time `json:"export_time"` // the snapshot's time
	// Definition is the table's definition in the shape of DynamoDB's
	// CreateTable (plus TimeToLiveSpecification).
	Definition json.RawMessage `json:"definition"`
}

// ExportTableEnd ends a table of an export.
type ExportTableEnd struct {
	Name  string `json:"name"`
	Items int64  `json:"items"`
	Bytes int64  `json:"bytes"`
}

// ExportError is an error that ended an export stream.
type ExportError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ImportRequest is the body of POST /v1/tenants/{tenant}/imports: one
// batch of items for one table.
type ImportRequest struct {
	Table string `json:"table"`
	// Definition (CreateTable's shape) creates the table if the tenant
	// has none of that name.
	Definition json.RawMessage `json:"definition,omitempty"`
	// Items are the items' attributes in DynamoDB JSON.
	Items []json.RawMessage `json:"items,omitempty"`
	// DryRun checks the items against the table and writes nothing.
	DryRun bool `json:"dry_run,omitempty"`
	// LiftQuotas writes without the tenant's admission quotas (the writes
	// are still metered).
	LiftQuotas bool `json:"lift_quotas,omitempty"`
	// Begin and Done mark the first and the last batch of an import (for
	// the audit log); Source names what is imported; Position is where a
	// resumed import starts.
	Begin    bool   `json:"begin,omitempty"`
	Done     bool   `json:"done,omitempty"`
	Source   string `json:"source,omitempty"`
	Position string `json:"position,omitempty"`
}

// ImportResult answers an ImportRequest.
type ImportResult struct {
	Table        string `json:"table"`
	Written      int64  `json:"written"`
	Bytes        int64  `json:"bytes"`
	CreatedTable bool   `json:"created_table,omitempty"`
}

// Export streams an export of tenant's tables: fn gets each event in
// order. An Error event is returned as an *Error.
func (c *Client) Export(ctx context.Context, tenant string, req ExportRequest, fn func(ExportEvent) error) error {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(c.Endpoint, "/")+tenantPath(tenant)+"/exports", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	if err := c.authorize(ctx, hreq, c.Key); err != nil {
		return err
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{} // NB: no overall timeout: an export streams for as long as it takes
	}
	resp, err := hc.Do(hreq)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
		return errorOf(resp.StatusCode, data)
	}
	br := bufio.NewReaderSize(resp.Body, 1<<20)
	done := false
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev ExportEvent
			if item, size, ok := itemEvent(line); ok {
				ev.Item, ev.Size = item, size
			} else if jerr := json.Unmarshal(line, &ev); jerr != nil {
				return fmt.Errorf("client: malformed export stream: %w", jerr)
			}
			if ev.Error != nil {
				return &Error{Status: http.StatusInternalServerError, Code: ev.Error.Code, Message: ev.Error.Message}
			}
			if ev.End != nil && ev.End.Name == "" {
				done = true // the stream's own end
			} else if ferr := fn(ev); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("client: reading the export stream: %w", err)
		}
	}
	if !done {
		return fmt.Errorf("client: the export stream ended early")
	}
	return nil
}

// Import writes one batch of items into a table of tenant.
func (c *Client) Import(ctx context.Context, tenant string, req ImportRequest) (ImportResult, error) {
	var out ImportResult
	return out, c.do(ctx, "POST", tenantPath(tenant)+"/imports", c.Key, req, &out)
}

// authorize sets req's Authorization: a SigV4 signature with c.Session,
// or bearer as the bearer token.
func (c *Client) authorize(ctx context.Context, req *http.Request, bearer string) error {
	if c.Session == nil {
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		return nil
	}
	var body []byte
	if req.GetBody != nil {
		rc, err := req.GetBody()
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		body, err = io.ReadAll(rc)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
	}
	sum := sha256.Sum256(body)
	creds := aws.Credentials{AccessKeyID: c.Session.AccessKeyID, SecretAccessKey: c.Session.SecretAccessKey, SessionToken: c.Session.SessionToken}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", time.Now()); err != nil {
		return fmt.Errorf("client: signing: %w", err)
	}
	return nil
}

// itemEvent parses the item lines the server writes,
// {"item":<object>,"size":<n>}, without a JSON decoder; anything else
// (ok false) goes to encoding/json. The item must be valid JSON.
func itemEvent(line []byte) (json.RawMessage, int64, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte(`{"item":`))
	if !ok {
		return nil, 0, false
	}
	i := bytes.LastIndex(rest, []byte(`,"size":`))
	if i < 0 || !bytes.HasSuffix(rest, []byte("}")) {
		return nil, 0, false
	}
	size, err := strconv.ParseInt(string(rest[i+len(`,"size":`):len(rest)-1]), 10, 64)
	item := rest[:i]
	if err != nil || !json.Valid(item) {
		return nil, 0, false
	}
	return json.RawMessage(item), size, true
}
