package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// listStreams pages through ListStreams (Limit 1) as actor a and returns
// "table label-age" per stream, age 0 for the oldest label seen.
func (a testActor) listStreams(table string) ([]string, error) {
	var out []string
	var from string
	for {
		in := &wire.ListStreamsInput{TableName: table, ExclusiveStartStreamArn: from, Limit: int64Ptr(1)}
		r, err := a.env.e.ListStreams(testCtx, a.scope("ListStreams"), in)
		if err != nil {
			return nil, err
		}
		for _, s := range r.Streams {
			out = append(out, s.TableName+" "+s.StreamArn)
		}
		if from = r.LastEvaluatedStreamArn; from == "" {
			return out, nil
		}
	}
}

func int64Ptr(v int64) *int64 { return &v }

// TestListStreamsOfDeletedTables: ListStreams keeps listing the streams of
// deleted tables (to whoever may read them) until retention, as DynamoDB
// keeps them for 24 hours, by name and then age, paged; by TableName too.
func TestListStreamsOfDeletedTables(t *testing.T) {
	env := streamsOpen(t)
	op := env.operator()
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	oldShared := op.create(streamTable("Gone", "KEYS_ONLY")).LatestStreamArn
	mine := a.create(streamTable("Mine", "KEYS_ONLY")).LatestStreamArn
	a.put("Mine", itemOf(t, `{"pk":{"S":"m1"}}`))
	_, err := env.e.DeleteTable(testCtx, op.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Gone"})
	noErr(t, err)
	_, err = env.e.DeleteTable(testCtx, a.scope("DeleteTable"), &wire.DeleteTableInput{TableName: "Mine"})
	noErr(t, err)
	env.clock.Set(env.clock.Now().Add(time.Second))
	newShared := op.create(streamTable("Gone", "KEYS_ONLY")).LatestStreamArn

	want := func(who string, got []string, err error, want ...string) {
		t.Helper()
		if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: ListStreams = %v (%v)\nwant %v", who, got, err, want)
		}
	}
	got, err := a.listStreams("")
	want("A", got, err, "Gone "+oldShared, "Gone "+newShared, "Mine "+mine)
	got, err = b.listStreams("")
	want("B", got, err, "Gone "+oldShared, "Gone "+newShared)
	got, err = a.listStreams("Mine")
	want("A, TableName of its deleted table", got, err, "Mine "+mine)
	got, err = a.listStreams("Gone")
	want("A, TableName of a re-created table", got, err, "Gone "+oldShared, "Gone "+newShared)
	if _, err := b.listStreams("Mine"); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("B lists A's deleted table's streams: %v", err)
	}
	if _, err := a.listStreams("Never"); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("ListStreams of a table that never was: %v", err)
	}
	// After retention only the live table's stream is left.
	env.clock.Set(env.clock.Now().Add(25 * time.Hour))
	got, err = a.listStreams("")
	want("A after retention", got, err, "Gone "+newShared)
	env.e.trimChangeLog()
	got, err = a.listStreams("")
	want("A after retention and trimming", got, err, "Gone "+newShared)
	if _, err := a.listStreams("Mine"); !apierr.Is(err, apierr.ResourceNotFound) {
		t.Errorf("ListStreams of a deleted table after retention: %v", err)
	}
}
