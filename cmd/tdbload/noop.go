package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/storage"
)

// runNoop serves fixed DynamoDB-shaped answers until ctx is canceled.
func runNoop(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tdbload noop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8001", "listen address")
	itemSize := fs.Int("item-size", 1024, "size in bytes of the item GetItem returns (Query returns 20)")
	storeDir := fs.String("storage", "", "the storage floor: also read the addressed item's key from, and durably write each PutItem's body to, a store in this directory (tenantdb's storage package, same options)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h := newNoopHandler(*itemSize)
	if *storeDir != "" {
		db, err := storage.Open(*storeDir, storage.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		h.db = db
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tdbload noop: listening on http://%s\n", ln.Addr())
	return serveNoop(ctx, ln, h)
}

// serveNoop serves h on ln until ctx is canceled.
func serveNoop(ctx context.Context, ln net.Listener, h *noopHandler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		<-done
		return nil
	}
	return err
}

// noopResponse is a precomputed response body with its CRC32 header.
type noopResponse struct {
	body   []byte
	crc    string
	length string
}

func newNoopResponse(body string) noopResponse {
	return noopResponse{
		body:   []byte(body),
		crc:    strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(body))), 10),
		length: strconv.Itoa(len(body)),
	}
}

// noopHandler answers every DynamoDB operation with a fixed body, after
// reading the whole request, like the cheapest possible server would.
//
// With db set it is the storage floor: the least a server that keeps items
// durably in tenantdb's store must do beyond the no-op. GetItem and PutItem
// read the addressed item's key (found by a byte scan, not a parse), and
// PutItem then writes the request body there in a synced batch, as tenantdb
// does for a put: the read for the old item's size, the write, group commit.
type noopHandler struct {
	fixed map[string]noopResponse
	db    *storage.DB
}

const noopTargetPrefix = "DynamoDB_20120810."

func newNoopHandler(itemSize int) *noopHandler {
	// pk "p00000000" + sk "s00" + names = 19 bytes; the rest is payload.
	payload := strings.Repeat("x", max(itemSize-19, 1))
	item := `{"pk":{"S":"p00000000"},"sk":{"S":"s00"},"data":{"S":"` + payload + `"}}`
	items := make([]string, 20)
	for i := range items {
		items[i] = strings.Replace(item, `"s00"`, fmt.Sprintf(`"s%02d"`, i), 1)
	}
	h := &noopHandler{fixed: map[string]noopResponse{}}
	for op, body := range map[string]string{
		"PutItem":            `{}`,
		"UpdateItem":         `{}`,
		"DeleteItem":         `{}`,
		"TransactWriteItems": `{}`,
		"GetItem":            `{"Item":` + item + `}`,
		"Query":              `{"Count":20,"Items":[` + strings.Join(items, ",") + `],"ScannedCount":20}`,
		"Scan":               `{"Count":20,"Items":[` + strings.Join(items, ",") + `],"ScannedCount":20}`,
		"BatchWriteItem":     `{"UnprocessedItems":{}}`,
		"BatchGetItem":       `{"Responses":{},"UnprocessedKeys":{}}`,
		"TransactGetItems":   `{"Responses":[]}`,
		"ListTables":         `{"TableNames":[]}`,
		"DescribeEndpoints":  `{"Endpoints":[{"Address":"localhost","CachePeriodInMinutes":1440}]}`,
	} {
		h.fixed[op] = newNoopResponse(body)
	}
	return h
}

func noopTableDescription(name string) string {
	b, _ := json.Marshal(map[string]any{
		"TableName":   name,
		"TableStatus": "ACTIVE",
		"TableArn":    "arn:aws:dynamodb:us-east-1:000000000000:table/" + name,
		"AttributeDefinitions": []map[string]string{
			{"AttributeName": "pk", "AttributeType": "S"},
			{"AttributeName": "sk", "AttributeType": "S"},
		},
		"KeySchema": []map[string]string{
			{"AttributeName": "pk", "KeyType": "HASH"},
			{"AttributeName": "sk", "KeyType": "RANGE"},
		},
		"BillingModeSummary":    map[string]string{"BillingMode": "PAY_PER_REQUEST"},
		"ProvisionedThroughput": map[string]int{"ReadCapacityUnits": 0, "WriteCapacityUnits": 0, "NumberOfDecreasesToday": 0},
		"CreationDateTime":      1.7e9,
		"ItemCount":             0,
		"TableSizeBytes":        0,
	})
	return string(b)
}

func (h *noopHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), noopTargetPrefix)
	if h.db != nil && (op == "PutItem" || op == "GetItem") {
		if err := h.store(op, body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	resp, fixed := h.fixed[op]
	status := http.StatusOK
	switch {
	case ok && fixed:
	case ok && (op == "DescribeTable" || op == "CreateTable"):
		var in struct{ TableName string }
		json.Unmarshal(body, &in)
		key := "Table"
		if op == "CreateTable" {
			key = "TableDescription"
		}
		resp = newNoopResponse(`{"` + key + `":` + noopTableDescription(in.TableName) + `}`)
	default:
		status = http.StatusBadRequest
		resp = newNoopResponse(`{"__type":"com.amazonaws.dynamodb.v20120810#UnknownOperationException","message":"the no-op server does not answer this operation"}`)
	}
	hdr := w.Header()
	hdr["Content-Type"] = []string{"application/x-amz-json-1.0"}
	hdr["X-Amz-Crc32"] = []string{resp.crc}
	hdr["Content-Length"] = []string{resp.length}
	hdr["X-Amzn-Requestid"] = []string{"tdbload-noop"}
	w.WriteHeader(status)
	w.Write(resp.body)
}

// store does the storage floor's work for a PutItem or GetItem body: the
// key is the table name and the values of the first "pk" and "sk"
// attributes of type S.
func (h *noopHandler) store(op string, body []byte) error {
	var kb [256]byte
	key := append(kb[:0], jsonStringAfter(body, `"TableName":"`)...)
	key = append(key, 0)
	key = append(key, jsonStringAfter(body, `"pk":{"S":"`)...)
	key = append(key, 0)
	key = append(key, jsonStringAfter(body, `"sk":{"S":"`)...)
	// tenantdb reads the old item for its size; the floor reads and drops it.
	err := h.db.View(key, func([]byte) error { return nil })
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if op != "PutItem" {
		return nil
	}
	b := h.db.NewBatch()
	defer b.Close()
	b.Set(key, body)
	return h.db.Apply(b)
}

// jsonStringAfter returns the bytes from just after the first occurrence of
// prefix up to the next double quote (nil if prefix is absent). The SDK
// writes no spaces, and tdbload's keys hold no escapes.
func jsonStringAfter(body []byte, prefix string) []byte {
	i := bytes.Index(body, []byte(prefix))
	if i < 0 {
		return nil
	}
	rest := body[i+len(prefix):]
	if j := bytes.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return nil
}
