package atrest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/internal/node"
	"github.com/tenantdb/tenantdb/tests/harness"
)

func streamsOf(srv *harness.Server, c harness.Credential) *dynamodbstreams.Client {
	return srv.Streams(c)
}

// streamImages returns every image (old and new) of every record c's
// tenant reads from table's stream, as "attr=value" strings.
func streamImages(t *testing.T, srv *harness.Server, c harness.Credential, table string) []string {
	t.Helper()
	ctx := ctxT(t)
	d, err := srv.Client(c).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	sc := streamsOf(srv, c)
	sd, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: d.Table.LatestStreamArn})
	if err != nil {
		t.Fatalf("DescribeStream: %v", err)
	}
	var out []string
	for _, sh := range sd.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: d.Table.LatestStreamArn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatalf("GetShardIterator: %v", err)
		}
		r, err := sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator, Limit: aws.Int32(1000)})
		if err != nil {
			t.Fatalf("GetRecords: %v", err)
		}
		for _, rec := range r.Records {
			for _, img := range []map[string]stypes.AttributeValue{rec.Dynamodb.OldImage, rec.Dynamodb.NewImage} {
				for k, v := range img {
					if s, ok := v.(*stypes.AttributeValueMemberS); ok {
						out = append(out, k+"="+s.Value)
					}
				}
			}
		}
	}
	return out
}

// TestMarkerNeverOnDisk is the marker test. Tenant A writes a
// unique marker into non-key attributes of items of a shared table with a
// GSI and a stream (so index entries and change records carry it) and of
// a silo table; no file of the data directory — WAL, sstables after a
// flush and full compaction, silo stores — contains it, while the
// partition key (plaintext by design) is found, which shows the search
// would see a plaintext marker. Then the tenant is deleted: its data key
// file is gone, its range is compacted out of every sstable, and a copy
// of the data directory taken before the deletion (an earlier backup),
// served with the keys of after it, cannot be read for A — while B, in
// the same copy, reads fine.
func TestMarkerNeverOnDisk(t *testing.T) {
	dir := t.TempDir()
	srv := start(t, dir)
	ctx := ctxT(t)
	createTable(t, srv.Client(srv.Operator), "Shared", "NEW_AND_OLD_IMAGES")
	createTable(t, srv.Client(srv.Operator), "Siloed", "", types.Tag{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")})
	a, b := srv.NewTenant(t, "atrest-a", "admin"), srv.NewTenant(t, "atrest-b", "admin")
	marker, keyA, keyB := "zqMARKER"+randHex(10), "zqKEYA"+randHex(10), "zqKEYB"+randHex(10)

	for _, table := range []string{"Shared", "Siloed"} {
		item := map[string]types.AttributeValue{"pk": S(keyA), "sk": S("1"), "g": S("gee"), "secret": S(marker),
			"nested": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{S(marker + "-in-list")}}}},
			"set":    &types.AttributeValueMemberSS{Value: []string{marker + "-in-set"}}}
		if _, err := srv.Client(a).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client(a).UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(table),
			Key: map[string]types.AttributeValue{"pk": S(keyA), "sk": S("1")}, UpdateExpression: aws.String("SET secret = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": S(marker + "-v2")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client(b).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": S(keyB), "sk": S("1"), "g": S("gee"), "secret": S("B's own")}}); err != nil {
			t.Fatal(err)
		}
	}
	images := strings.Join(streamImages(t, srv, a, "Shared"), " ")
	if !strings.Contains(images, "secret="+marker+" ") || !strings.Contains(images, "secret="+marker+"-v2") {
		t.Fatalf("the change records do not carry the marker (old and new images): %s", images)
	}

	check := func(when string) {
		t.Helper()
		if files := filesContaining(t, dir, marker, false); len(files) > 0 {
			t.Errorf("%s: the marker is in plaintext in %v", when, files)
		}
		if files := filesContaining(t, dir, keyA, false); len(files) == 0 {
			t.Fatalf("%s: control: A's partition key (plaintext by design) is in no file; the search cannot see anything", when)
		}
	}
	check("while serving (WAL)")
	srv.Stop(t)
	compactAll(t, dir)
	check("after flush and full compaction")
	if files := filesContaining(t, dir, keyA, true); len(files) == 0 {
		t.Fatal("control: after compaction no sstable holds A's partition key")
	}

	backup := filepath.Join(t.TempDir(), "backup")
	copyDir(t, dir, backup)

	srv = start(t, dir)
	for _, table := range []string{"Shared", "Siloed"} {
		out, err := srv.Client(a).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": S(keyA), "sk": S("1")}})
		if err != nil || out.Item["secret"].(*types.AttributeValueMemberS).Value != marker+"-v2" {
			t.Fatalf("A reads its %s item after a restart: %v, %v", table, out, err)
		}
	}
	if _, err := srv.Admin().DeleteTenant(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, node.TenantKeysDir, a.TenantID)); !os.IsNotExist(err) {
		t.Fatalf("A's data key file after the deletion: %v", err)
	}
	srv.Stop(t)
	if files := filesContaining(t, dir, keyA, true); len(files) > 0 {
		t.Errorf("A's range is still in sstables after the deletion's compaction: %v", files)
	}
	if files := filesContaining(t, dir, keyB, true); len(files) == 0 {
		t.Error("control: B's data is in no sstable")
	}

	// The earlier copy, with today's keys: A's data cannot be read.
	if err := os.RemoveAll(filepath.Join(backup, node.TenantKeysDir)); err != nil {
		t.Fatal(err)
	}
	copyDir(t, filepath.Join(dir, node.TenantKeysDir), filepath.Join(backup, node.TenantKeysDir))
	old := start(t, backup)
	for _, table := range []string{"Shared", "Siloed"} {
		out, err := old.Client(a).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": S(keyA), "sk": S("1")}})
		if err == nil {
			t.Errorf("A's %s item read from the earlier copy after A's key was destroyed: %v", table, out.Item)
		} else if !strings.Contains(err.Error(), "InternalServerError") {
			t.Errorf("A's %s item from the earlier copy: %v; want the server's refusal to decrypt", table, err)
		}
		outB, err := old.Client(b).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": S(keyB), "sk": S("1")}})
		if err != nil || outB.Item == nil {
			t.Errorf("B's %s item from the same copy: %v, %v", table, outB, err)
		}
	}
}
