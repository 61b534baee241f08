package console

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/client"
)

// browseLimit is the page size of the item browser.
const browseLimit = 25

// dataTenant returns the path's tenant (as the admin API shows it) for the
// table pages, which act with the session's key on the DynamoDB API: only
// a tenant's own admin key can, since a key reaches its own tenant's
// tables only; the operator is told so.
func (h *Handler) dataTenant(q *req) (client.Tenant, *dynamoClient, bool) {
	t, ok := h.tenantOf(q)
	if !ok {
		return t, nil, false
	}
	if h.o.Server == nil || q.s.Operator() || q.s.who.TenantID != t.ID {
		p := q.page("Tables of "+t.Name, nil)
		p.Tenant = &t
		p.Status = http.StatusForbidden
		p.Error = "Tables are browsed with the tenant's own admin key: sign in with it to see its tables and items."
		h.render(q.w, http.StatusForbidden, "error", p)
		return t, nil, false
	}
	return t, h.dynamo(q), true
}

type tableRow struct {
	Desc tableDesc
	Err  string
}

func (h *Handler) tables(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	names, err := d.listTables(q.ctx)
	if err != nil {
		h.fail(q, err)
		return
	}
	rows := make([]tableRow, 0, len(names))
	for _, n := range names {
		desc, err := d.describe(q.ctx, n)
		row := tableRow{Desc: desc}
		row.Desc.TableName = n
		if err != nil {
			row.Err = err.Error()
		}
		rows = append(rows, row)
	}
	h.showTenant(q, t, "tables", "Tables of "+t.Name, rows)
}

type itemRow struct {
	Key  string // base64url of the key in DynamoDB JSON
	JSON string
}

type browseData struct {
	Table tableDesc
	PK    string // the partition key value queried, if any
	FAttr string // filter: an attribute name
	FText string // filter: the string it contains
	Mode  string // "query" or "scan"
	Items []itemRow
	Next  string // base64url of LastEvaluatedKey
	Start string
	Count int
}

func (h *Handler) browse(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	desc, err := d.describe(q.ctx, q.r.PathValue("table"))
	if err != nil {
		h.fail(q, err)
		return
	}
	bd := browseData{Table: desc, PK: q.r.FormValue("pk"), Mode: "scan", Start: q.r.FormValue("start"),
		FAttr: strings.TrimSpace(q.r.FormValue("fattr")), FText: q.r.FormValue("ftext")}
	in := map[string]any{"TableName": desc.TableName, "Limit": browseLimit}
	if bd.Start != "" {
		start, err := decodeKey(bd.Start)
		if err != nil {
			h.badRequest(q, "The page token is malformed.")
			return
		}
		in["ExclusiveStartKey"] = start
	}
	op := "Scan"
	if bd.PK != "" {
		pk := desc.KeyName("HASH")
		v, err := typed(desc.AttrType(pk), bd.PK)
		if err != nil {
			h.badRequest(q, err.Error())
			return
		}
		op, bd.Mode = "Query", "query"
		in["KeyConditionExpression"] = "#pk = :pk"
		in["ExpressionAttributeNames"] = map[string]string{"#pk": pk}
		in["ExpressionAttributeValues"] = map[string]any{":pk": v}
	}
	if bd.FAttr != "" {
		// A filter: items whose attribute contains the text (a substring of
		// a string, an element of a set, ...), applied by the API after it
		// reads each page, as DynamoDB's FilterExpression is.
		in["FilterExpression"] = "contains(#f, :f)"
		names, _ := in["ExpressionAttributeNames"].(map[string]string)
		if names == nil {
			names = map[string]string{}
		}
		names["#f"] = bd.FAttr
		in["ExpressionAttributeNames"] = names
		values, _ := in["ExpressionAttributeValues"].(map[string]any)
		if values == nil {
			values = map[string]any{}
		}
		values[":f"] = map[string]string{"S": bd.FText}
		in["ExpressionAttributeValues"] = values
	}
	var pg itemPage
	if err := d.call(q.ctx, op, in, &pg); err != nil {
		h.fail(q, err)
		return
	}
	for _, it := range pg.Items {
		b, _ := json.Marshal(it)
		row := itemRow{Key: encodeKey(desc.keyOf(it)), JSON: string(b)}
		bd.Items = append(bd.Items, row)
	}
	bd.Count = len(bd.Items)
	if len(pg.LastEvaluatedKey) > 0 && string(pg.LastEvaluatedKey) != "null" {
		bd.Next = base64.RawURLEncoding.EncodeToString(pg.LastEvaluatedKey)
	}
	h.showTenant(q, t, "browse", "Table "+desc.TableName, bd)
}

type itemData struct {
	Table tableDesc
	Key   string
	JSON  string
}

func (h *Handler) item(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	desc, err := d.describe(q.ctx, q.r.PathValue("table"))
	if err != nil {
		h.fail(q, err)
		return
	}
	key, err := decodeKey(q.r.FormValue("key"))
	if err != nil {
		h.badRequest(q, "The item key is malformed.")
		return
	}
	var out struct {
		Item item `json:"Item"`
	}
	if err := d.call(q.ctx, "GetItem", map[string]any{"TableName": desc.TableName, "Key": key, "ConsistentRead": true}, &out); err != nil {
		h.fail(q, err)
		return
	}
	if out.Item == nil {
		p := q.page("No such item", nil)
		p.Tenant = &t
		p.Status, p.Error = http.StatusNotFound, "The table has no item with that key."
		h.render(q.w, http.StatusNotFound, "error", p)
		return
	}
	h.showTenant(q, t, "item", "Item in "+desc.TableName, itemData{Table: desc, Key: q.r.FormValue("key"), JSON: pretty(out.Item)})
}

func (h *Handler) deleteItem(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	table := q.r.PathValue("table")
	key, err := decodeKey(q.r.PostFormValue("key"))
	if err != nil {
		h.badRequest(q, "The item key is malformed.")
		return
	}
	back := tenantURL(t, "/tables/") + url.PathEscape(table)
	if q.r.PostFormValue("confirm") != "yes" {
		h.redirect(q, back+"/item?key="+url.QueryEscape(q.r.PostFormValue("key")), "Tick the confirmation box to delete the item.")
		return
	}
	if err := d.call(q.ctx, "DeleteItem", map[string]any{"TableName": table, "Key": key}, nil); err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, back, "Deleted the item.")
}

// putItem writes an item given as DynamoDB JSON (a new one, or an edit
// of the item page's): the DynamoDB API validates it and its key.
func (h *Handler) putItem(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	table := q.r.PathValue("table")
	var it item
	if err := json.Unmarshal([]byte(q.r.PostFormValue("item")), &it); err != nil || len(it) == 0 {
		h.badRequest(q, "The item must be a JSON object of DynamoDB JSON attributes, like {\"pk\": {\"S\": \"a\"}}.")
		return
	}
	if err := d.call(q.ctx, "PutItem", map[string]any{"TableName": table, "Item": it}, nil); err != nil {
		h.fail(q, err)
		return
	}
	desc, err := d.describe(q.ctx, table)
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, "/tables/")+url.PathEscape(table)+"/item?key="+encodeKey(desc.keyOf(it)), "Saved the item.")
}

func (h *Handler) badRequest(q *req, msg string) {
	p := q.page("Bad request", nil)
	p.Status, p.Error = http.StatusBadRequest, msg
	h.render(q.w, http.StatusBadRequest, "error", p)
}

// typed returns v as a DynamoDB JSON value of type t (S, N or B; B as
// base64).
func typed(t, v string) (map[string]string, error) {
	switch t {
	case "N":
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return nil, errors.New("The partition key is a number; " + strconv.Quote(v) + " is not one.")
		}
	case "B":
		if _, err := base64.StdEncoding.DecodeString(v); err != nil {
			return nil, errors.New("The partition key is binary; enter it as base64.")
		}
	}
	return map[string]string{t: v}, nil
}

func encodeKey(k item) string {
	b, _ := json.Marshal(k)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeKey parses a key the browser sent back: base64url of a DynamoDB
// JSON object. The DynamoDB API validates it further.
func decodeKey(s string) (json.RawMessage, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) > 8<<10 {
		return nil, errors.New("malformed key")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || len(m) == 0 {
		return nil, errors.New("malformed key")
	}
	return b, nil
}

func pretty(it item) string {
	b, _ := json.Marshal(it)
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}
