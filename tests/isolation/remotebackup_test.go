package isolation

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestRemoteBackupIsolation attacks the remote backend's backups on a
// fleet of two gateways (A on one, B on the other, and the other way
// round): B's listings never show A's backups; A's backup ARNs used by B
// (describe, delete, restore into B's namespace) answer exactly what a
// backup that does not exist answers, naming nothing of A's, and are
// audited in B's log; on a shared table B's backup holds B's items only
// and A's holds A's; the operator has no access to backups.
func TestRemoteBackupIsolation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: starts a fleet of gateways")
	}
	f := harness.StartCluster(t, 2, harness.Options{})
	g0, g1 := f.Gateways[0], f.Gateways[1]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	op := g0.Client(g0.Operator)
	if _, err := op.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("iso_bk"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	a, b := g0.NewTenant(t, "bkvictim", "admin"), g1.NewTenant(t, "bkattacker", "admin")
	// A through gateway 0 and B through gateway 1, and crossed.
	clients := map[string][2]*dynamodb.Client{"a": {g0.Client(a), g1.Client(a)}, "b": {g1.Client(b), g0.Client(b)}}
	secret := "SECRET-A-" + randHex(8)
	put := func(c *dynamodb.Client, table, pk, v string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: pk}, "v": &types.AttributeValueMemberS{Value: v}}})
			if err == nil {
				return
			}
			if errCode(err) != "ResourceNotFoundException" || time.Now().After(deadline) {
				t.Fatal(err)
			}
		}
	}
	put(clients["a"][0], "iso_bk", "same-key", secret)
	put(clients["a"][0], "iso_bk", "only-A", secret)
	put(clients["b"][0], "iso_bk", "same-key", "mine-B")
	if _, err := clients["a"][0].CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("a_own"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
	}); err != nil {
		t.Fatal(err)
	}
	put(clients["a"][0], "a_own", "k", secret)

	backup := func(c *dynamodb.Client, table, name string) string {
		t.Helper()
		out, err := c.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String(table), BackupName: aws.String(name)})
		if err != nil {
			t.Fatalf("CreateBackup %s: %v", table, err)
		}
		return aws.ToString(out.BackupDetails.BackupArn)
	}
	aShared, aOwn := backup(clients["a"][0], "iso_bk", "a-shared"), backup(clients["a"][1], "a_own", "a-own")
	bShared := backup(clients["b"][0], "iso_bk", "b-shared")

	// B cannot back up A's own table: it does not see it.
	for _, c := range clients["b"] {
		if _, err := c.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("a_own"), BackupName: aws.String("steal")}); errCode(err) != "TableNotFoundException" {
			t.Errorf("B CreateBackup of A's own table: %v", err)
		}
	}

	// B lists nothing of A's, by table or all, through either gateway.
	for _, c := range clients["b"] {
		for _, tbl := range []*string{nil, aws.String("iso_bk"), aws.String("a_own")} {
			ls, err := c.ListBackups(ctx, &dynamodb.ListBackupsInput{TableName: tbl, BackupType: types.BackupTypeFilterAll})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ls.BackupSummaries {
				if arn := aws.ToString(s.BackupArn); arn != bShared {
					t.Errorf("B lists %s (table %v)", arn, aws.ToString(tbl))
				}
			}
		}
		// A's ARN as B's paging position reveals nothing either.
		ls, err := c.ListBackups(ctx, &dynamodb.ListBackupsInput{ExclusiveStartBackupArn: aws.String(aShared)})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ls.BackupSummaries {
			if aws.ToString(s.BackupArn) != bShared {
				t.Errorf("B lists %s after A's ARN", aws.ToString(s.BackupArn))
			}
		}
	}

	// B with A's backup ARNs: what a backup that does not exist answers.
	// The made-up ARN names a table A has, an id nobody has.
	missing := aOwn[:strings.LastIndex(aOwn, "/")+1] + "01000000000000-0badf00d"
	answer := func(err error, arn string) string {
		var ae smithy.APIError
		if !errors.As(err, &ae) {
			return "no API error: " + errString(err)
		}
		return ae.ErrorCode() + ": " + strings.ReplaceAll(ae.ErrorMessage(), arn, "<arn>")
	}
	refused := 0
	for _, c := range clients["b"] {
		for _, arn := range []string{aShared, aOwn, missing} {
			_, derr := c.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)})
			_, rerr := c.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String("stolen"), BackupArn: aws.String(arn)})
			_, xerr := c.DeleteBackup(ctx, &dynamodb.DeleteBackupInput{BackupArn: aws.String(arn)})
			for op, err := range map[string]error{"DescribeBackup": derr, "RestoreTableFromBackup": rerr, "DeleteBackup": xerr} {
				got := answer(err, arn)
				if want := "BackupNotFoundException: Backup not found: <arn>"; got != want {
					t.Errorf("B %s of %s: %q, want %q", op, arn, got, want)
				}
				if strings.Contains(errString(err), secret) || strings.Contains(errString(err), a.TenantID) {
					t.Errorf("B %s of %s names A: %v", op, arn, err)
				}
			}
			if arn != missing {
				refused++
			}
		}
		if _, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("stolen")}); errCode(err) != "ResourceNotFoundException" {
			t.Errorf("B's namespace after restoring A's backups: DescribeTable stolen: %v", err)
		}
	}
	for _, arn := range []string{aShared, aOwn} {
		if _, err := clients["a"][1].DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(arn)}); err != nil {
			t.Errorf("A's backup %s after B's attempts: %v", arn, err)
		}
	}

	// On the shared table each backup is its tenant's view: B's restores
	// to B's items only, A's to A's.
	restoreView := func(c *dynamodb.Client, arn, target string) []string {
		t.Helper()
		if _, err := c.RestoreTableFromBackup(ctx, &dynamodb.RestoreTableFromBackupInput{TargetTableName: aws.String(target), BackupArn: aws.String(arn)}); err != nil {
			t.Fatalf("restore %s: %v", target, err)
		}
		out, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(target), ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Items {
			got = append(got, it["pk"].(*types.AttributeValueMemberS).Value+"="+it["v"].(*types.AttributeValueMemberS).Value)
		}
		sort.Strings(got)
		return got
	}
	if got := restoreView(clients["b"][1], bShared, "b_view"); strings.Join(got, ",") != "same-key=mine-B" {
		t.Errorf("B's backup of the shared table restores %v", got)
	}
	if got := restoreView(clients["a"][0], aShared, "a_view"); strings.Join(got, ",") != "only-A="+secret+",same-key="+secret {
		t.Errorf("A's backup of the shared table restores %v", got)
	}
	d, err := clients["b"][0].DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(bShared)})
	if err != nil || aws.ToInt64(d.BackupDescription.SourceTableDetails.ItemCount) != 1 {
		t.Errorf("B's backup of the shared table: %+v %v", d, err)
	}
	// A cannot reach B's backup either.
	if _, err := clients["a"][1].DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(bShared)}); errCode(err) != "BackupNotFoundException" {
		t.Errorf("A DescribeBackup of B's backup: %v", err)
	}
	// The operator has no access to backups (table data).
	if _, err := op.ListBackups(ctx, &dynamodb.ListBackupsInput{}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator ListBackups: %v", err)
	}
	if _, err := op.DescribeBackup(ctx, &dynamodb.DescribeBackupInput{BackupArn: aws.String(aShared)}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator DescribeBackup: %v", err)
	}
	if _, err := op.CreateBackup(ctx, &dynamodb.CreateBackupInput{TableName: aws.String("iso_bk"), BackupName: aws.String("op-all")}); errCode(err) != "AccessDeniedException" {
		t.Errorf("operator CreateBackup of the shared table: %v", err)
	}

	// B's refusals with A's ARNs are audited in B's log (4 attempts of
	// each operation: two ARNs through two gateways).
	denied := map[string]int{}
	for after := uint64(0); ; {
		page, err := g0.Admin().Audit(ctx, b.TenantID, client.AuditQuery{After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Records {
			if strings.HasPrefix(r.Outcome, "denied") {
				denied[r.Action]++
			}
			after = r.Seq
		}
		if len(page.Records) < 500 {
			break
		}
	}
	t.Logf("denials audited for B: %v", denied)
	for _, act := range []string{"dynamodb:DescribeBackup", "dynamodb:RestoreTableFromBackup", "dynamodb:DeleteBackup"} {
		if denied[act] < refused {
			t.Errorf("%d %s denials audited for B, want at least %d (all: %v)", denied[act], act, refused, denied)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
