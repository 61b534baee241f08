package transfer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/audit"
	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// TableStart describes a table as an export starts it.
type TableStart struct {
	Name, TableArn, TableID string
	ExportID, ExportArn     string
	ExportTime              time.Time // the snapshot's time
	Definition              *dynexport.Definition
}

// TableSink receives the items of one table of an export: each item's
// attributes in DynamoDB JSON (AppendItem's form; the slice is reused
// after Add returns) and its DynamoDB size.
type TableSink interface {
	Add(item []byte, size int64) error
	Close() error
}

// TableEnd counts what an export wrote of a table.
type TableEnd struct {
	Name         string
	Items, Bytes int64
}

// Export writes tables (all the scope sees when empty) from one snapshot:
// for each table, start returns the sink of its items. With at, the items
// are those of that past time: the snapshot with every change made since
// undone from the table's change log (engine.Snapshot.ItemsAt), which must hold them
// all with their old images; the definitions are today's. Errors: the
// scope is the operator's (AccessDenied), the tables' resolution
// (ResourceNotFound, AccessDenied), at in the future or not covered by
// the history (InvalidExportTime), the sinks'.
func (s *Service) Export(ctx context.Context, sc tenancy.Scope, tables []string, at *time.Time, start func(TableStart) (TableSink, error)) ([]TableEnd, error) {
	if err := dataScope(sc); err != nil {
		return nil, err
	}
	now := s.o.Now()
	if at != nil && at.After(now) {
		return nil, apierr.New(apierr.InvalidExportTime, "the export time %s is in the future", at.UTC().Format(time.RFC3339Nano))
	}
	snap, err := s.o.Source.View(ctx, sc, tables)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	var ends []TableEnd
	for i, name := range snap.Tables() {
		def, td, err := s.describe(ctx, sc, name)
		if err != nil {
			return ends, err
		}
		exportTime := now
		if at != nil {
			if err := s.checkHistory(ctx, sc, name, *at); err != nil {
				return ends, err
			}
			exportTime = *at
		}
		id := dynexport.NewExportID(now)
		sink, err := start(TableStart{Name: name, TableArn: td.TableArn, TableID: td.TableId, ExportID: id,
			ExportArn: td.TableArn + "/export/" + id, ExportTime: exportTime, Definition: def})
		if err != nil {
			return ends, err
		}
		end := TableEnd{Name: name}
		var buf []byte
		add := func(item attr.Item) error {
			buf = AppendItem(buf[:0], item)
			size := int64(attr.ItemSize(item))
			end.Items++
			end.Bytes += size
			return sink.Add(buf, size)
		}
		if at != nil {
			err = snap.ItemsAt(ctx, i, *at, add)
		} else {
			err = snap.Items(ctx, i, add)
		}
		if cerr := sink.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return ends, err
		}
		ends = append(ends, end)
	}
	return ends, nil
}

// ExportStream is the admin API's export: it emits a Table event, the
// items and an End event per table, then a final End without a name.
// Audited in the tenant's log (export, with the tables and counts).
func (s *Service) ExportStream(ctx context.Context, sc tenancy.Scope, req client.ExportRequest, emit func(client.ExportEvent) error) error {
	ends, err := s.Export(ctx, sc, req.Tables, req.At, func(ts TableStart) (TableSink, error) {
		def, err := json.Marshal(ts.Definition)
		if err != nil {
			return nil, err
		}
		if err := emit(client.ExportEvent{Table: &client.ExportTable{Name: ts.Name, TableArn: ts.TableArn, TableID: ts.TableID,
			ExportArn: ts.ExportArn, ExportID: ts.ExportID, ExportTime: ts.ExportTime, Definition: def}}); err != nil {
			return nil, err
		}
		return &streamSink{name: ts.Name, emit: emit}, nil
	})
	outcome := audit.OutcomeOK
	if err != nil {
		outcome = audit.OutcomeError
	}
	s.record(ctx, sc, audit.Event{Action: "export", Target: summarize(ends, req.Tables), Outcome: outcome, Reason: reason(err)})
	if err != nil {
		return err
	}
	return emit(client.ExportEvent{End: &client.ExportTableEnd{}})
}

type streamSink struct {
	name         string
	emit         func(client.ExportEvent) error
	items, bytes int64
}

func (k *streamSink) Add(item []byte, size int64) error {
	k.items++
	k.bytes += size
	return k.emit(client.ExportEvent{Item: item, Size: size})
}

func (k *streamSink) Close() error {
	return k.emit(client.ExportEvent{End: &client.ExportTableEnd{Name: k.name, Items: k.items, Bytes: k.bytes}})
}

func summarize(ends []TableEnd, asked []string) string {
	var b strings.Builder
	for i, e := range ends {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", e.Name, e.Items)
	}
	if len(ends) == 0 && len(asked) > 0 {
		b.WriteString("tables=" + strings.Join(asked, ","))
	}
	return apierr.Clip(b.String())
}

func reason(err error) string {
	if err == nil {
		return ""
	}
	return apierr.Clip(apierr.Message(err))
}
