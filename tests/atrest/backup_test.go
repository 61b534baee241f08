package atrest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestOperatorBackupShredding: an operator backup (`tenantdb backup
// create`) holds no tenant value in plaintext; after tenant A is deleted,
// `backup restore` of the backup taken before reports A's key destroyed,
// and a server on the restored directory refuses to decrypt A's items
// while B's read as they were — in a shared table and a silo table.
func TestOperatorBackupShredding(t *testing.T) {
	dir, repo := t.TempDir(), filepath.Join(t.TempDir(), "repo")
	srv := start(t, dir)
	ctx := ctxT(t)
	createTable(t, srv.Client(srv.Operator), "Shared", "NEW_AND_OLD_IMAGES")
	createTable(t, srv.Client(srv.Operator), "Siloed", "", types.Tag{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")})
	a, b := srv.NewTenant(t, "bkp-a", "admin"), srv.NewTenant(t, "bkp-b", "admin")
	marker, keyA, keyB := "zqMARKER"+randHex(10), "zqKEYA"+randHex(10), "zqKEYB"+randHex(10)
	for _, table := range []string{"Shared", "Siloed"} {
		for _, w := range []struct {
			c   *dynamodb.Client
			key string
		}{{srv.Client(a), keyA}, {srv.Client(b), keyB}} {
			if _, err := w.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
				Item: map[string]types.AttributeValue{"pk": S(w.key), "sk": S("1"), "g": S("gee"), "secret": S(marker + "-" + w.key)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	cli(t, srv, "backup", "create", "--to", repo)
	if files := filesContaining(t, repo, marker, false); len(files) > 0 {
		t.Errorf("the marker is in plaintext in the backup: %v", files)
	}
	if files := filesContaining(t, repo, keyA, false); len(files) == 0 {
		t.Fatal("control: A's partition key (plaintext by design) is in no file of the backup")
	}

	if _, err := srv.Admin().DeleteTenant(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(repo, "keys", a.TenantID)); !os.IsNotExist(err) {
		t.Errorf("A's keys in the backup repository after A's deletion: %v", err)
	}
	if _, err := os.Stat(filepath.Join(repo, "keys", b.TenantID)); err != nil {
		t.Errorf("B's keys in the backup repository: %v", err)
	}
	srv.Stop(t)

	restored := filepath.Join(t.TempDir(), "restored")
	_, stderr := cli(t, srv, "backup", "restore", "--from", repo, "--data-dir", restored, "--server-key-file", filepath.Join(dir, "server.key"))
	if !strings.Contains(stderr, "tenant "+a.TenantID+": its data key was destroyed") {
		t.Errorf("restore does not say that A's key was destroyed: %s", stderr)
	}
	if strings.Contains(stderr, b.TenantID) {
		t.Errorf("restore reports B: %s", stderr)
	}
	harness.CopyCredentials(t, dir, restored)
	if _, err := os.Stat(filepath.Join(restored, "tenant-keys", a.TenantID+".shredded")); err != nil {
		t.Errorf("the restored directory does not mark A's key destroyed: %v", err)
	}
	old := start(t, restored)
	// NB: A's credential is in the backup; its data is sealed under a key
	// nobody has. A gets what a deleted tenant's credential gets, saying
	// why, on reads and writes, and no new key is made for it.
	wantGone := func(what string, err error) {
		t.Helper()
		var apiErr interface{ ErrorCode() string }
		switch {
		case err == nil:
			t.Errorf("%s: succeeded on a server restored from a backup taken before A's deletion", what)
		case !errors.As(err, &apiErr) || apiErr.ErrorCode() != "UnrecognizedClientException":
			t.Errorf("%s: %v; want UnrecognizedClientException", what, err)
		case !strings.Contains(err.Error(), "tenant "+a.TenantID+" was deleted: its data key was destroyed"):
			t.Errorf("%s: %v; want the message to say that A was deleted and its key destroyed", what, err)
		}
	}
	for _, table := range []string{"Shared", "Siloed"} {
		out, err := old.Client(a).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": S(keyA), "sk": S("1")}})
		if err == nil {
			t.Errorf("A's %s item read from the backup taken before A's deletion: %v", table, out.Item)
		}
		wantGone("A's GetItem on "+table, err)
		_, err = old.Client(a).PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table),
			Item: map[string]types.AttributeValue{"pk": S(keyA + "new"), "sk": S("1"), "secret": S("after")}})
		wantGone("A's PutItem on "+table, err)
		_, err = old.Client(a).Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
		wantGone("A's Scan of "+table, err)
		outB, err := old.Client(b).GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": S(keyB), "sk": S("1")}})
		if err != nil || outB.Item == nil || outB.Item["secret"].(*types.AttributeValueMemberS).Value != marker+"-"+keyB {
			t.Errorf("B's %s item from the same backup: %v, %v", table, outB, err)
		}
	}
	if _, err := os.Stat(filepath.Join(restored, "tenant-keys", a.TenantID)); !os.IsNotExist(err) {
		t.Errorf("the restored server made A a new data key: %v", err)
	}
}
