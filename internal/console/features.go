package console

// The pages of the features built on the change log and snapshots:
// streams, webhook subscriptions, backups and point-in-time recovery,
// exports and imports, aggregates, and the tenant's encryption. Like
// every page they act with the session's key only: the admin API for
// subscriptions, aggregates and encryption, the DynamoDB (and Streams)
// API in-process for the rest, so a tenant sees what its key may.

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

func (h *Handler) featureRoutes() {
	h.mux.HandleFunc("GET /console/tenants/{tenant}/streams", h.authed(h.streams))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/streams/{table}", h.authed(h.stream))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/subscriptions", h.authed(h.subscriptions))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/subscriptions/{id}", h.authed(h.subscription))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/subscriptions/{id}/pause", h.authed(h.pauseSubscription))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/subscriptions/{id}/resume", h.authed(h.resumeSubscription))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/backups", h.authed(h.backups))
	h.mux.HandleFunc("POST /console/tenants/{tenant}/backups", h.authed(h.createBackup))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/exports", h.authed(h.exports))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/aggregates", h.authed(h.aggregates))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/aggregates/{name}", h.authed(h.aggregate))
	h.mux.HandleFunc("GET /console/tenants/{tenant}/encryption", h.authed(h.encryption))
}

// --- streams ---

type streamSummary struct {
	StreamArn   string `json:"StreamArn"`
	TableName   string `json:"TableName"`
	StreamLabel string `json:"StreamLabel"`
}

type streamShard struct {
	ShardID             string `json:"ShardId"`
	ParentShardID       string `json:"ParentShardId"`
	SequenceNumberRange struct {
		StartingSequenceNumber string `json:"StartingSequenceNumber"`
		EndingSequenceNumber   string `json:"EndingSequenceNumber"`
	} `json:"SequenceNumberRange"`
}

type streamDesc struct {
	StreamArn               string        `json:"StreamArn"`
	StreamLabel             string        `json:"StreamLabel"`
	StreamStatus            string        `json:"StreamStatus"`
	StreamViewType          string        `json:"StreamViewType"`
	TableName               string        `json:"TableName"`
	CreationRequestDateTime float64       `json:"CreationRequestDateTime"`
	Shards                  []streamShard `json:"Shards"`
}

const streamsTarget = "DynamoDBStreams_20120810."

func (h *Handler) streams(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	var out struct {
		Streams []streamSummary `json:"Streams"`
	}
	if err := d.call(q.ctx, streamsTarget+"ListStreams", map[string]any{"Limit": 100}, &out); err != nil {
		h.fail(q, err)
		return
	}
	h.showTenant(q, t, "streams", "Streams of "+t.Name, out.Streams)
}

// stream describes the latest stream of a table: status, view type and
// shards (open ones have no ending sequence number).
func (h *Handler) stream(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	desc, err := d.describe(q.ctx, q.r.PathValue("table"))
	if err != nil {
		h.fail(q, err)
		return
	}
	var td struct {
		Table struct {
			LatestStreamArn string `json:"LatestStreamArn"`
		} `json:"Table"`
	}
	if err := d.call(q.ctx, "DescribeTable", map[string]any{"TableName": desc.TableName}, &td); err != nil {
		h.fail(q, err)
		return
	}
	var sd struct {
		StreamDescription streamDesc `json:"StreamDescription"`
	}
	if arn := td.Table.LatestStreamArn; arn != "" {
		if err := d.call(q.ctx, streamsTarget+"DescribeStream", map[string]any{"StreamArn": arn}, &sd); err != nil {
			h.fail(q, err)
			return
		}
	}
	p := q.page("Stream of "+desc.TableName, struct {
		Table  string
		Stream streamDesc
	}{desc.TableName, sd.StreamDescription})
	p.Tenant = &t
	h.show(q, "stream", p)
}

// --- subscriptions ---

func (h *Handler) subscriptions(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	subs, err := q.admin.Subscriptions(q.ctx, t.ID)
	if err != nil {
		h.fail(q, err)
		return
	}
	h.showTenant(q, t, "subscriptions", "Webhook subscriptions of "+t.Name, subs)
}

type subscriptionData struct {
	Sub        client.Subscription
	Deliveries []client.Delivery
}

func (h *Handler) subscription(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	id := q.r.PathValue("id")
	s, err := q.admin.Subscription(q.ctx, t.ID, id)
	if err != nil {
		h.fail(q, err)
		return
	}
	ds, err := q.admin.SubscriptionDeliveries(q.ctx, t.ID, id, 50)
	if err != nil {
		h.fail(q, err)
		return
	}
	slices.Reverse(ds) // newest first
	h.showTenant(q, t, "subscription", "Subscription "+s.ID, subscriptionData{Sub: s, Deliveries: ds})
}

func (h *Handler) pauseSubscription(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	s, err := q.admin.PauseSubscription(q.ctx, t.ID, q.r.PathValue("id"))
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, "/subscriptions/")+url.PathEscape(s.ID), "Paused: deliveries stop; the cursor stays.")
}

func (h *Handler) resumeSubscription(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	s, err := q.admin.ResumeSubscription(q.ctx, t.ID, q.r.PathValue("id"))
	if err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, "/subscriptions/")+url.PathEscape(s.ID), "Resumed: deliveries continue from the cursor.")
}

// --- backups and point-in-time recovery ---

type backupSummary struct {
	TableName              string  `json:"TableName"`
	BackupArn              string  `json:"BackupArn"`
	BackupName             string  `json:"BackupName"`
	BackupCreationDateTime float64 `json:"BackupCreationDateTime"`
	BackupStatus           string  `json:"BackupStatus"`
	BackupType             string  `json:"BackupType"`
	BackupSizeBytes        int64   `json:"BackupSizeBytes"`
}

// recovery is a table's continuous backups as the page shows them.
type recovery struct {
	Table    string
	Status   string // ENABLED, DISABLED
	Earliest time.Time
	Latest   time.Time
	Err      string
}

type backupsData struct {
	Backups  []backupSummary
	Recovery []recovery
	Tables   []string
}

func epochTime(f float64) time.Time {
	if f == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(f * 1000)).UTC()
}

func (h *Handler) backups(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	var bd backupsData
	var start string
	for len(bd.Backups) < 1000 {
		in := map[string]any{"Limit": 100, "BackupType": "ALL"}
		if start != "" {
			in["ExclusiveStartBackupArn"] = start
		}
		var out struct {
			BackupSummaries        []backupSummary `json:"BackupSummaries"`
			LastEvaluatedBackupArn string          `json:"LastEvaluatedBackupArn"`
		}
		if err := d.call(q.ctx, "ListBackups", in, &out); err != nil {
			h.fail(q, err)
			return
		}
		bd.Backups = append(bd.Backups, out.BackupSummaries...)
		if start = out.LastEvaluatedBackupArn; start == "" {
			break
		}
	}
	names, err := d.listTables(q.ctx)
	if err != nil {
		h.fail(q, err)
		return
	}
	bd.Tables = names
	for _, n := range names {
		var out struct {
			ContinuousBackupsDescription struct {
				PointInTimeRecoveryDescription struct {
					PointInTimeRecoveryStatus  string  `json:"PointInTimeRecoveryStatus"`
					EarliestRestorableDateTime float64 `json:"EarliestRestorableDateTime"`
					LatestRestorableDateTime   float64 `json:"LatestRestorableDateTime"`
				} `json:"PointInTimeRecoveryDescription"`
			} `json:"ContinuousBackupsDescription"`
		}
		rc := recovery{Table: n}
		if err := d.call(q.ctx, "DescribeContinuousBackups", map[string]any{"TableName": n}, &out); err != nil {
			rc.Err = err.Error()
		} else {
			p := out.ContinuousBackupsDescription.PointInTimeRecoveryDescription
			rc.Status, rc.Earliest, rc.Latest = p.PointInTimeRecoveryStatus, epochTime(p.EarliestRestorableDateTime), epochTime(p.LatestRestorableDateTime)
		}
		bd.Recovery = append(bd.Recovery, rc)
	}
	h.showTenant(q, t, "backups", "Backups of "+t.Name, bd)
}

func (h *Handler) createBackup(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	var out struct {
		BackupDetails struct {
			BackupName string `json:"BackupName"`
		} `json:"BackupDetails"`
	}
	in := map[string]any{"TableName": strings.TrimSpace(q.r.PostFormValue("table")), "BackupName": strings.TrimSpace(q.r.PostFormValue("name"))}
	if err := d.call(q.ctx, "CreateBackup", in, &out); err != nil {
		h.fail(q, err)
		return
	}
	h.redirect(q, tenantURL(t, "/backups"), "Created backup "+out.BackupDetails.BackupName+".")
}

// --- exports and imports ---

type exportSummary struct {
	ExportArn    string `json:"ExportArn"`
	ExportStatus string `json:"ExportStatus"`
	ExportType   string `json:"ExportType"`
}

type exportDesc struct {
	ExportArn      string  `json:"ExportArn"`
	ExportStatus   string  `json:"ExportStatus"`
	TableArn       string  `json:"TableArn"`
	S3Bucket       string  `json:"S3Bucket"`
	S3Prefix       string  `json:"S3Prefix"`
	ExportTime     float64 `json:"ExportTime"`
	ItemCount      int64   `json:"ItemCount"`
	BilledSizeByte int64   `json:"BilledSizeBytes"`
	FailureMessage string  `json:"FailureMessage"`
}

type importSummary struct {
	ImportArn    string  `json:"ImportArn"`
	ImportStatus string  `json:"ImportStatus"`
	TableArn     string  `json:"TableArn"`
	StartTime    float64 `json:"StartTime"`
	EndTime      float64 `json:"EndTime"`
	S3BucketSrc  struct {
		S3Bucket    string `json:"S3Bucket"`
		S3KeyPrefix string `json:"S3KeyPrefix"`
	} `json:"S3BucketSource"`
}

type exportsData struct {
	Exports []exportDesc
	Imports []importSummary
}

func (h *Handler) exports(q *req) {
	t, d, ok := h.dataTenant(q)
	if !ok {
		return
	}
	var ed exportsData
	var ls struct {
		ExportSummaries []exportSummary `json:"ExportSummaries"`
	}
	if err := d.call(q.ctx, "ListExports", map[string]any{"MaxResults": 25}, &ls); err != nil {
		h.fail(q, err)
		return
	}
	for _, s := range ls.ExportSummaries {
		var out struct {
			ExportDescription exportDesc `json:"ExportDescription"`
		}
		if err := d.call(q.ctx, "DescribeExport", map[string]any{"ExportArn": s.ExportArn}, &out); err != nil {
			out.ExportDescription = exportDesc{ExportArn: s.ExportArn, ExportStatus: s.ExportStatus, FailureMessage: err.Error()}
		}
		ed.Exports = append(ed.Exports, out.ExportDescription)
	}
	var li struct {
		ImportSummaryList []importSummary `json:"ImportSummaryList"`
	}
	if err := d.call(q.ctx, "ListImports", map[string]any{"PageSize": 25}, &li); err != nil {
		h.fail(q, err)
		return
	}
	ed.Imports = li.ImportSummaryList
	h.showTenant(q, t, "exports", "Exports and imports of "+t.Name, ed)
}

// --- aggregates ---

func (h *Handler) aggregates(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	list, err := q.admin.Aggregates(q.ctx, t.ID)
	if err != nil {
		h.fail(q, err)
		return
	}
	h.showTenant(q, t, "aggregates", "Aggregates of "+t.Name, list)
}

type groupRow struct {
	Group string
	Count string
	Sums  string
}

func (h *Handler) aggregate(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	ag, err := q.admin.Aggregate(q.ctx, t.ID, q.r.PathValue("name"))
	if err != nil {
		h.fail(q, err)
		return
	}
	var rows []groupRow
	for g, v := range ag.Groups {
		r := groupRow{Group: g}
		if v.Count != nil {
			r.Count = strings.TrimSpace(strings.Trim(mustJSON(*v.Count), `"`))
		}
		if len(v.Sum) > 0 {
			r.Sums = mustJSON(v.Sum)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b groupRow) int { return strings.Compare(a.Group, b.Group) })
	p := q.page("Aggregate "+ag.Name, struct {
		Agg    client.Aggregate
		Groups []groupRow
	}{ag, rows})
	p.Tenant = &t
	h.show(q, "aggregate", p)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// --- encryption ---

func (h *Handler) encryption(q *req) {
	t, ok := h.tenantOf(q)
	if !ok {
		return
	}
	e, err := q.admin.Encryption(q.ctx, t.ID)
	if err != nil {
		h.fail(q, err)
		return
	}
	h.showTenant(q, t, "encryption", "Encryption of "+t.Name, e)
}
