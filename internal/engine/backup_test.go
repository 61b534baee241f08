package engine

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// allItems returns the actor's items of table as "pk=v" lines, sorted,
// read with a consistent Scan.
func (a testActor) allItems(table string) []string {
	a.env.t.Helper()
	items, _ := scanAll(a.env.t, a.env.e, a.scope("Scan"), wire.ScanInput{TableName: table, ConsistentRead: boolPtr(true)})
	var out []string
	for _, it := range items {
		out = append(out, it["pk"].S+"="+shortItem(it))
	}
	sort.Strings(out)
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s:\n got  %v\n want %v", what, got, want)
	}
}

// gsiTable is a shared table with a GSI on "g", TTL on "exp" and a
// NEW_IMAGE stream.
func gsiTable(t *testing.T, env *testEnv, name string) {
	t.Helper()
	in := tableInput(name, false)
	in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: "g", AttributeType: "S"})
	in.GlobalSecondaryIndexes = []wire.GlobalSecondaryIndex{{IndexName: "byG", KeySchema: []wire.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
		Projection: &wire.Projection{ProjectionType: "ALL"}}}
	in.StreamSpecification = &wire.StreamSpecification{StreamEnabled: boolPtr(true), StreamViewType: "NEW_IMAGE"}
	env.operator().create(in)
	_, err := env.e.UpdateTimeToLive(testCtx, env.operator().scope("UpdateTimeToLive"), &wire.UpdateTimeToLiveInput{TableName: name,
		TimeToLiveSpecification: wire.TimeToLiveSpecification{Enabled: true, AttributeName: "exp"}})
	noErr(t, err)
}

// TestBackupOfATenantsView: on a shared table a backup holds the tenant's
// items only, from one snapshot, with the table's index, TTL and stream
// settings; restoring it makes a table of the tenant's own with those
// items and settings; another tenant can neither list, describe, delete
// nor restore it (BackupNotFound, a denial).
func TestBackupOfATenantsView(t *testing.T) {
	env := streamsOpen(t)
	gsiTable(t, env, "Shared")
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	e := env.e
	for i := 0; i < 250; i++ {
		a.put("Shared", itemOf(t, fmt.Sprintf(`{"pk":{"S":"a%03d"},"v":{"S":"%d"},"g":{"S":"G%d"}}`, i, i, i%3)))
	}
	b.setV("Shared", "b1", "secret")

	out, err := e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: "Shared", BackupName: "nightly"})
	noErr(t, err)
	arn := out.BackupDetails.BackupArn
	if !strings.HasPrefix(arn, e.tableARN("Shared")+"/backup/") || out.BackupDetails.BackupStatus != "AVAILABLE" || out.U.ReadUnits < 1 {
		t.Fatalf("CreateBackup: %+v, usage %+v", out.BackupDetails, out.U)
	}
	a.setV("Shared", "a000", "changed after the backup")
	a.setV("Shared", "later", "x")

	d, err := e.DescribeBackup(testCtx, a.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: arn})
	noErr(t, err)
	f := d.BackupDescription.SourceTableFeatureDetails
	if d.BackupDescription.SourceTableDetails.ItemCount != 250 || len(f.GlobalSecondaryIndexes) != 1 || f.StreamDescription == nil ||
		f.TimeToLiveDescription == nil || f.TimeToLiveDescription.AttributeName != "exp" {
		t.Errorf("DescribeBackup: %+v %+v", d.BackupDescription.SourceTableDetails, f)
	}
	lst, err := e.ListBackups(testCtx, a.scope("ListBackups"), &wire.ListBackupsInput{})
	noErr(t, err)
	if len(lst.BackupSummaries) != 1 || lst.BackupSummaries[0].BackupArn != arn {
		t.Errorf("A's ListBackups: %+v", lst.BackupSummaries)
	}

	// B: nothing of A's.
	lst, err = e.ListBackups(testCtx, b.scope("ListBackups"), &wire.ListBackupsInput{TableName: "Shared"})
	noErr(t, err)
	if len(lst.BackupSummaries) != 0 {
		t.Errorf("B lists A's backups: %+v", lst.BackupSummaries)
	}
	_, err = e.DescribeBackup(testCtx, b.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: arn})
	if ae := wantErr(t, err, apierr.BackupNotFound, ""); ae != nil && !ae.Denial {
		t.Error("B's DescribeBackup of A's backup is not a denial")
	}
	_, err = e.DeleteBackup(testCtx, b.scope("DeleteBackup"), &wire.DeleteBackupInput{BackupArn: arn})
	wantErr(t, err, apierr.BackupNotFound, "")
	_, err = e.RestoreTableFromBackup(testCtx, b.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{TargetTableName: "Stolen", BackupArn: arn})
	wantErr(t, err, apierr.BackupNotFound, "")
	_, err = e.ListBackups(testCtx, env.operator().scope("ListBackups"), &wire.ListBackupsInput{})
	wantErr(t, err, apierr.AccessDenied, "")

	// A restores: a table of its own, with the backup's items and indexes;
	// no stream and no TTL, as DynamoDB's.
	rout, err := e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{TargetTableName: "Restored", BackupArn: arn})
	noErr(t, err)
	td := rout.TableDescription
	if td.ItemCount != 250 || td.RestoreSummary == nil || td.RestoreSummary.SourceBackupArn != arn || len(td.GlobalSecondaryIndexes) != 1 ||
		td.StreamSpecification != nil || td.LatestStreamArn != "" || rout.U.WriteUnits < 250 {
		t.Errorf("RestoreTableFromBackup: %+v, usage %+v", td, rout.U)
	}
	got := a.allItems("Restored")
	if len(got) != 250 || got[0] != "a000=0" {
		t.Errorf("restored %d items, first %v", len(got), got[:1])
	}
	q, _ := queryAll(t, e, a.scope("Query"), wire.QueryInput{TableName: "Restored", IndexName: strPtr("byG"),
		KeyConditionExpression: strPtr("g = :g"), ExpressionAttributeValues: exprVals(":g", sval("G1"))})
	if len(q) != 83 {
		t.Errorf("the restored GSI holds %d items of G1, want 83", len(q))
	}
	ttl, err := e.DescribeTimeToLive(testCtx, a.scope("DescribeTimeToLive"), &wire.DescribeTimeToLiveInput{TableName: "Restored"})
	noErr(t, err)
	if ttl.TimeToLiveDescription.TimeToLiveStatus != "DISABLED" {
		t.Errorf("restored TTL: %+v", ttl.TimeToLiveDescription)
	}
	if recs := a.recordsOf("Restored"); len(recs) != 0 {
		t.Errorf("the restore's load is in the restored table's stream: %v", recs)
	}
	_, err = e.DescribeTable(testCtx, b.scope("DescribeTable"), &wire.DescribeTableInput{TableName: "Restored"})
	wantErr(t, err, apierr.ResourceNotFound, "")
	_, err = e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{TargetTableName: "Restored", BackupArn: arn})
	wantErr(t, err, apierr.TableAlreadyExists, "")

	// Overrides: without the GSI, on demand.
	rout, err = e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{TargetTableName: "Bare", BackupArn: arn,
		GlobalSecondaryIndexOverride: []wire.GlobalSecondaryIndex{}, BillingModeOverride: "PAY_PER_REQUEST"})
	noErr(t, err)
	if len(rout.TableDescription.GlobalSecondaryIndexes) != 0 || rout.TableDescription.ItemCount != 250 {
		t.Errorf("restore with an empty GSI override: %+v", rout.TableDescription)
	}

	// Deleted: gone for A as well.
	del, err := e.DeleteBackup(testCtx, a.scope("DeleteBackup"), &wire.DeleteBackupInput{BackupArn: arn})
	noErr(t, err)
	if del.BackupDescription.BackupDetails.BackupStatus != "DELETED" {
		t.Errorf("DeleteBackup: %+v", del.BackupDescription.BackupDetails)
	}
	_, err = e.DescribeBackup(testCtx, a.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: arn})
	wantErr(t, err, apierr.BackupNotFound, "")

	for _, bad := range []string{"", "arn:aws:dynamodb:us-east-1:000000000000:table/Shared/backup/x", "not an arn at all, but long enough to pass"} {
		_, err = e.DescribeBackup(testCtx, a.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: bad})
		wantErr(t, err, apierr.Validation, "")
	}
	_, err = e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: "Nope", BackupName: "x1x"})
	wantErr(t, err, apierr.TableNotFound, "")
	_, err = e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: "Shared", BackupName: "no spaces"})
	wantErr(t, err, apierr.Validation, "")
}

// recordsOf is records for a tenant's own table.
func (a testActor) recordsOf(name string) []string {
	a.env.t.Helper()
	h, err := a.env.e.open(testCtx, a.scope("GetItem"), name)
	noErr(a.env.t, err)
	if h.Table.LatestStream == 0 {
		return nil
	}
	s, err := a.env.e.clog.Stream(h.Table.ID, h.Table.LatestStream)
	noErr(a.env.t, err)
	shards, err := a.env.e.clog.Shards(h.db, h.Namespace, s)
	noErr(a.env.t, err)
	var out []string
	for _, sh := range shards {
		pg, err := a.env.e.clog.Read(h.db, h.Namespace, s, changelog.Position{Shard: sh.Index}, 1000, 1<<20)
		noErr(a.env.t, err)
		for _, r := range pg.Records {
			out = append(out, r.Event.String()+" "+r.Keys["pk"].S)
		}
	}
	return out
}

// TestPointInTimeRestore: a randomized history of puts, updates, deletes
// and TTL-less expiry-free changes by two tenants on a shared table with
// point-in-time recovery on, the clock moving between steps; restoring
// each tenant's view to many past times gives exactly the model's state
// at that time, and only that tenant's items.
func TestPointInTimeRestore(t *testing.T) {
	env := streamsOpen(t)
	env.operator().create(tableInput("Hist", false))
	tenants := []testActor{env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)}
	e := env.e
	for _, a := range tenants {
		_, err := e.DescribeContinuousBackups(testCtx, a.scope("DescribeContinuousBackups"), &wire.DescribeContinuousBackupsInput{TableName: "Hist"})
		noErr(t, err)
		_, err = e.RestoreTableToPointInTime(testCtx, a.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{SourceTableName: "Hist", TargetTableName: "RRR", UseLatestRestorableTime: boolPtr(true)})
		wantErr(t, err, apierr.PointInTimeRecoveryUnavailable, "")
		out, err := e.UpdateContinuousBackups(testCtx, a.scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: "Hist",
			PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true)}})
		noErr(t, err)
		if p := out.ContinuousBackupsDescription.PointInTimeRecoveryDescription; p.PointInTimeRecoveryStatus != "ENABLED" || p.RecoveryPeriodInDays != 7 {
			t.Fatalf("UpdateContinuousBackups: %+v", p)
		}
	}
	before := env.clock.Now()
	env.clock.Set(before.Add(2 * time.Second))

	rng := rand.New(rand.NewSource(1))
	type snapshot struct {
		at    time.Time
		state [2]map[string]string
	}
	model := [2]map[string]string{{}, {}}
	var history []snapshot
	for step := 0; step < 120; step++ {
		env.clock.Set(env.clock.Now().Add(time.Duration(50+rng.Intn(400)) * time.Millisecond))
		tn := rng.Intn(2)
		a := tenants[tn]
		pk := fmt.Sprintf("k%d", rng.Intn(12))
		if _, ok := model[tn][pk]; ok && rng.Intn(3) == 0 {
			a.del("Hist", pk)
			delete(model[tn], pk)
		} else {
			v := fmt.Sprint(step)
			a.setV("Hist", pk, v)
			model[tn][pk] = v
		}
		var st [2]map[string]string
		for i := range st {
			st[i] = map[string]string{}
			for k, v := range model[i] {
				st[i][k] = v
			}
		}
		history = append(history, snapshot{at: env.clock.Now(), state: st})
	}
	env.clock.Set(env.clock.Now().Add(time.Second))

	for tn, a := range tenants {
		d, err := e.DescribeContinuousBackups(testCtx, a.scope("DescribeContinuousBackups"), &wire.DescribeContinuousBackupsInput{TableName: "Hist"})
		noErr(t, err)
		p := d.ContinuousBackupsDescription.PointInTimeRecoveryDescription
		if p.EarliestRestorableDateTime == 0 || p.EarliestRestorableDateTime > epoch(history[0].at) || p.LatestRestorableDateTime < epoch(history[len(history)-1].at) {
			t.Fatalf("window [%v, %v] does not cover the history", p.EarliestRestorableDateTime, p.LatestRestorableDateTime)
		}
		for i := 0; i < len(history); i += 7 {
			h := history[i]
			name := fmt.Sprintf("R%d_%d", tn, i)
			// Between this step and the next: the same state.
			at := epoch(h.at.Add(10 * time.Millisecond))
			_, err := e.RestoreTableToPointInTime(testCtx, a.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
				SourceTableName: "Hist", TargetTableName: name, RestoreDateTime: &at})
			noErr(t, err)
			var want []string
			for k, v := range h.state[tn] {
				want = append(want, k+"="+v)
			}
			sameLines(t, fmt.Sprintf("tenant %d at step %d", tn, i), a.allItems(name), want)
		}
		// The latest restorable time: now.
		_, err = e.RestoreTableToPointInTime(testCtx, a.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
			SourceTableArn: e.tableARN("Hist"), TargetTableName: fmt.Sprintf("Latest%d", tn), UseLatestRestorableTime: boolPtr(true)})
		noErr(t, err)
		var want []string
		for k, v := range model[tn] {
			want = append(want, k+"="+v)
		}
		sameLines(t, fmt.Sprintf("tenant %d latest", tn), a.allItems(fmt.Sprintf("Latest%d", tn)), want)

		early := epoch(before.Add(-time.Hour))
		_, err = e.RestoreTableToPointInTime(testCtx, a.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
			SourceTableName: "Hist", TargetTableName: "TooEarly", RestoreDateTime: &early})
		wantErr(t, err, apierr.InvalidRestoreTime, "")
	}

	// Off: the window closes, the log is released.
	_, err := e.UpdateContinuousBackups(testCtx, tenants[0].scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: "Hist",
		PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(false)}})
	noErr(t, err)
	_, err = e.RestoreTableToPointInTime(testCtx, tenants[0].scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
		SourceTableName: "Hist", TargetTableName: "Off", UseLatestRestorableTime: boolPtr(true)})
	wantErr(t, err, apierr.PointInTimeRecoveryUnavailable, "")
	for _, days := range []int64{0, 36} {
		_, err = e.UpdateContinuousBackups(testCtx, tenants[0].scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: "Hist",
			PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true), RecoveryPeriodInDays: &days}})
		wantErr(t, err, apierr.Validation, "")
	}
}

// TestRestoreSiloAndLeadingKeys: a tenant's own silo table (its records
// and items in its own store) and its view of a shared leading-keys table
// back up and restore to a point in time like any other; the silo
// restore stays silo, the leading-keys one becomes a plain table of the
// tenant's.
func TestRestoreSiloAndLeadingKeys(t *testing.T) {
	env := streamsOpen(t)
	e := env.e
	a, b := env.tenant(tenancy.RoleAdmin), env.tenant(tenancy.RoleAdmin)
	silo := tableInput("Silo", false)
	silo.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	a.create(silo)
	createShared(t, e, "Lkeys", "pk:S", "", nil,
		wire.Tag{Key: tenancy.TagIsolation, Value: "leading-keys"}, wire.Tag{Key: tenancy.TagLeadingKeyPattern, Value: "TENANT#{tenant}|*"})
	lk := func(x testActor, k string) string { return "TENANT#" + x.p.Tenant.String() + "|" + k }
	for _, tbl := range []string{"Silo", "Lkeys"} {
		for _, x := range []testActor{a, b} {
			if tbl == "Silo" && x.p.Tenant == b.p.Tenant {
				continue
			}
			_, err := e.UpdateContinuousBackups(testCtx, x.scope("UpdateContinuousBackups"), &wire.UpdateContinuousBackupsInput{TableName: tbl,
				PointInTimeRecoverySpecification: &wire.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: boolPtr(true)}})
			noErr(t, err)
		}
	}
	env.clock.Set(env.clock.Now().Add(2 * time.Second))
	a.setV("Silo", "s1", "1")
	a.setV("Lkeys", lk(a, "x"), "1")
	b.setV("Lkeys", lk(b, "x"), "b")
	env.clock.Set(env.clock.Now().Add(time.Second))
	t1 := epoch(env.clock.Now())
	env.clock.Set(env.clock.Now().Add(time.Second))
	a.setV("Silo", "s1", "2")
	a.setV("Silo", "s2", "2")
	a.del("Lkeys", lk(a, "x"))

	for _, tbl := range []string{"Silo", "Lkeys"} {
		_, err := e.RestoreTableToPointInTime(testCtx, a.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
			SourceTableName: tbl, TargetTableName: tbl + "T1", RestoreDateTime: &t1})
		noErr(t, err)
		bk, err := e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: tbl, BackupName: "now"})
		noErr(t, err)
		_, err = e.RestoreTableFromBackup(testCtx, a.scope("RestoreTableFromBackup"), &wire.RestoreTableFromBackupInput{TargetTableName: tbl + "Now", BackupArn: bk.BackupDetails.BackupArn})
		noErr(t, err)
	}
	sameLines(t, "silo at T1", a.allItems("SiloT1"), []string{"s1=1"})
	sameLines(t, "silo from backup", a.allItems("SiloNow"), []string{"s1=2", "s2=2"})
	sameLines(t, "leading-keys at T1", a.allItems("LkeysT1"), []string{lk(a, "x") + "=1"})
	sameLines(t, "leading-keys from backup", a.allItems("LkeysNow"), nil)
	for name, want := range map[string]tenancy.IsolationMode{"SiloT1": tenancy.Silo, "SiloNow": tenancy.Silo, "LkeysT1": tenancy.Namespace} {
		h, err := e.open(testCtx, a.scope("GetItem"), name)
		noErr(t, err)
		if h.Table.Isolation != want || h.Table.LeadingKeyPattern != "" {
			t.Errorf("%s: isolation %v pattern %q, want %v", name, h.Table.Isolation, h.Table.LeadingKeyPattern, want)
		}
	}
	_, err := e.RestoreTableToPointInTime(testCtx, b.scope("RestoreTableToPointInTime"), &wire.RestoreTableToPointInTimeInput{
		SourceTableName: "Lkeys", TargetTableName: "LkeysB", RestoreDateTime: &t1})
	noErr(t, err)
	sameLines(t, "B's leading-keys view at T1", b.allItems("LkeysB"), []string{lk(b, "x") + "=b"})
}

// TestBackupsOfANarrowedCredential: a credential narrowed to some tables
// neither lists nor reaches the backups of its tenant's other tables.
func TestBackupsOfANarrowedCredential(t *testing.T) {
	env := streamsOpen(t)
	e := env.e
	a := env.tenant(tenancy.RoleAdmin)
	a.create(tableInput("Mine", false))
	a.create(tableInput("Other", false))
	var arns []string
	for _, tbl := range []string{"Mine", "Other"} {
		out, err := e.CreateBackup(testCtx, a.scope("CreateBackup"), &wire.CreateBackupInput{TableName: tbl, BackupName: "b-" + tbl})
		noErr(t, err)
		arns = append(arns, out.BackupDetails.BackupArn)
	}
	n := a
	n.p.Policy = &tenancy.Policy{Tables: []string{"Mine"}}
	lst, err := e.ListBackups(testCtx, n.scope("ListBackups"), &wire.ListBackupsInput{})
	noErr(t, err)
	if len(lst.BackupSummaries) != 1 || lst.BackupSummaries[0].BackupArn != arns[0] {
		t.Errorf("narrowed ListBackups: %+v", lst.BackupSummaries)
	}
	_, err = e.DescribeBackup(testCtx, n.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: arns[0]})
	noErr(t, err)
	_, err = e.DescribeBackup(testCtx, n.scope("DescribeBackup"), &wire.DescribeBackupInput{BackupArn: arns[1]})
	wantErr(t, err, apierr.AccessDenied, "")
	_, err = e.DeleteBackup(testCtx, n.scope("DeleteBackup"), &wire.DeleteBackupInput{BackupArn: arns[1]})
	wantErr(t, err, apierr.AccessDenied, "")
}
