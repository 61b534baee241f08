package engine

import (
	"errors"
	"slices"
	"testing"

	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestFilterBackupSummaries: ListBackups' page (both backends) keeps the
// backups of the table asked for, in the time range (lower bound in,
// upper out), whose table the caller may see, up to the limit, and says
// where the next page starts; an error of the listing ends it.
func TestFilterBackupSummaries(t *testing.T) {
	all := []wire.BackupSummary{
		{TableName: "a", BackupArn: "1", BackupCreationDateTime: 10},
		{TableName: "b", BackupArn: "2", BackupCreationDateTime: 20},
		{TableName: "hidden", BackupArn: "3", BackupCreationDateTime: 30},
		{TableName: "a", BackupArn: "4", BackupCreationDateTime: 40},
		{TableName: "b", BackupArn: "5", BackupCreationDateTime: 50},
	}
	seq := func(yield func(wire.BackupSummary, error) bool) {
		for _, s := range all {
			if !yield(s, nil) {
				return
			}
		}
	}
	allowed := func(table string) bool { return table != "hidden" }
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name  string
		in    wire.ListBackupsInput
		limit int
		arns  []string
		last  string
	}{
		{"all", wire.ListBackupsInput{}, 100, []string{"1", "2", "4", "5"}, ""},
		{"table", wire.ListBackupsInput{TableName: "a"}, 100, []string{"1", "4"}, ""},
		{"hidden table", wire.ListBackupsInput{TableName: "hidden"}, 100, nil, ""},
		{"range", wire.ListBackupsInput{TimeRangeLowerBound: f(20), TimeRangeUpperBound: f(50)}, 100, []string{"2", "4"}, ""},
		{"page", wire.ListBackupsInput{}, 2, []string{"1", "2"}, "2"},
		{"page exact", wire.ListBackupsInput{TableName: "b"}, 2, []string{"2", "5"}, ""},
	} {
		out, err := FilterBackupSummaries(&c.in, c.limit, allowed, seq)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var arns []string
		for _, s := range out.BackupSummaries {
			arns = append(arns, s.BackupArn)
		}
		if !slices.Equal(arns, c.arns) || out.LastEvaluatedBackupArn != c.last {
			t.Errorf("%s: %v (last %q), want %v (last %q)", c.name, arns, out.LastEvaluatedBackupArn, c.arns, c.last)
		}
	}
	bad := errors.New("corrupt")
	_, err := FilterBackupSummaries(&wire.ListBackupsInput{}, 100, allowed, func(yield func(wire.BackupSummary, error) bool) {
		if yield(all[0], nil) {
			yield(wire.BackupSummary{}, bad)
		}
	})
	if !errors.Is(err, bad) {
		t.Errorf("an error of the listing: %v", err)
	}
}
