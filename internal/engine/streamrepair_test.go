package engine

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestRepairStreamsAfterCrash: each crash window between a stream
// descriptor and the definition naming it, made by hand, is repaired when
// the engine opens again: a descriptor no saved definition ever named is
// deleted (not listed, not readable); a stream of a table deleted or
// changed before its descriptor was disabled is disabled, and stays
// readable until retention.
func TestRepairStreamsAfterCrash(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	a := env.tenant(tenancy.RoleAdmin)
	e := env.e

	// CreateTable: the descriptor was written, the definition never saved.
	never, err := e.clog.CreateStream(9999, changelog.KeysOnly, "Never", nil, nil)
	noErr(t, err)
	// UpdateTable enabling: the same, for a live table.
	op.create(tableInput("Plain", false))
	plainDef := env.sharedTable("Plain")
	enabling, err := e.clog.CreateStream(plainDef.ID, changelog.NewImage, "Plain", nil, nil)
	noErr(t, err)
	// DeleteTable: definition deleted and drop recorded, stream not ended.
	dropArn := op.create(streamTable("Dropped", "KEYS_ONLY")).LatestStreamArn
	a.put("Dropped", itemOf(t, `{"pk":{"S":"d1"}}`))
	dropped := env.sharedTable("Dropped")
	rec, _ := json.Marshal(dropRecord{Table: dropped.ID, Isolate: dropped.Isolation})
	b := env.db.NewBatch()
	b.Delete(tableDefKey(dropped))
	b.Set(dropKey(dropped.ID, 0), rec)
	noErr(t, env.db.Apply(b))
	b.Close()
	// UpdateTable disabling: definition saved without the stream, stream
	// not ended.
	offArn := op.create(streamTable("Off", "KEYS_ONLY")).LatestStreamArn
	a.put("Off", itemOf(t, `{"pk":{"S":"o1"}}`))
	off := env.sharedTable("Off").Clone()
	off.Stream = &wire.StreamSpecification{StreamEnabled: boolPtr(false)}
	b = env.db.NewBatch()
	noErr(t, saveTable(b, off))
	noErr(t, env.db.Apply(b))
	b.Close()
	// A healthy stream is left alone, and so is a hidden one (the log
	// consumers') its definition names.
	okArn := op.create(streamTable("Fine", "KEYS_ONLY")).LatestStreamArn
	op.create(tableInput("Kept", false))
	noErr(t, e.RetainLog(testCtx, a.scope("GetRecords"), "Kept", "webhook:kept"))
	kept := env.sharedTable("Kept")
	if kept.HiddenStream == 0 {
		t.Fatal("RetainLog made no hidden stream")
	}

	env.reopen()
	e = env.e
	for _, gone := range []changelog.Stream{never, enabling} {
		if _, err := e.clog.Stream(gone.Table, gone.ID); !errors.Is(err, changelog.ErrStreamNotFound) {
			t.Errorf("descriptor of %s never named by a definition: %v, want deleted", gone.TableName, err)
		}
	}
	for arn, want := range map[string]string{dropArn: "INSERT d1", offArn: "INSERT o1"} {
		d, err := e.DescribeStream(testCtx, a.scope("DescribeStream"), &wire.DescribeStreamInput{StreamArn: arn})
		if err != nil || d.StreamDescription.StreamStatus != "DISABLED" {
			t.Errorf("%s after the crash: %+v, %v; want DISABLED", arn, d, err)
			continue
		}
		if got, err := a.streamAPIRecords(arn); err != nil || strings.Join(got, ",") != want {
			t.Errorf("%s after the crash: records %v, %v; want %s", arn, got, err, want)
		}
	}
	d, err := e.DescribeStream(testCtx, a.scope("DescribeStream"), &wire.DescribeStreamInput{StreamArn: okArn})
	if err != nil || d.StreamDescription.StreamStatus != "ENABLED" {
		t.Errorf("a healthy stream after reopening: %+v, %v", d, err)
	}
	if st, err := e.clog.Stream(kept.ID, kept.HiddenStream); err != nil || !st.Enabled() {
		t.Errorf("a hidden stream its definition names, after reopening: %+v, %v", st, err)
	}
	got, err := a.listStreams("")
	if err != nil || len(got) != 3 || strings.Contains(strings.Join(got, ","), "Never") || strings.Contains(strings.Join(got, ","), "Plain") {
		t.Errorf("ListStreams after the repair: %v (%v)", got, err)
	}
}
