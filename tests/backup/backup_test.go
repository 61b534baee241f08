package backup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/backup"
	"github.com/tenantdb/tenantdb/tests/harness"
)

var bin string // the tenantdb binary, built once by TestMain

func TestMain(m *testing.M) { os.Exit(harness.RunWithBinary(m, &bin)) }

func start(t *testing.T, dir string, extra ...string) *harness.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the tenantdb binary")
	}
	return harness.StartBinary(t, bin, dir, append([]string{"--fairness=false"}, extra...)...)
}

// cli runs the binary's CLI with args and returns stdout and stderr.
func cli(t *testing.T, env []string, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func opArgs(srv *harness.Server) []string {
	return []string{"--endpoint", srv.Endpoint, "--key", srv.Operator.Key}
}

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func createTable(t *testing.T, c *dynamodb.Client, name string, tags ...types.Tag) {
	t.Helper()
	_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		BillingMode: types.BillingModePayPerRequest,
		Tags:        tags,
	})
	if err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
}

var siloTag = types.Tag{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")}

// writer puts items w-0, w-1, ... one at a time, alternately into the
// shared table and the silo table, and counts those acknowledged.
type writer struct {
	c     *dynamodb.Client
	acked atomic.Int64
	stop  chan struct{}
	done  chan error
}

func table(i int64) string {
	if i%2 == 0 {
		return "Shared"
	}
	return "Siloed"
}

func startWriter(c *dynamodb.Client, from int64) *writer {
	w := &writer{c: c, stop: make(chan struct{}), done: make(chan error, 1)}
	w.acked.Store(from)
	go func() {
		for i := from; ; i++ {
			select {
			case <-w.stop:
				w.done <- nil
				return
			default:
			}
			_, err := c.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table(i)),
				Item: map[string]types.AttributeValue{"pk": S(fmt.Sprintf("w-%07d", i)), "g": S("g"), "v": S(strings.Repeat("v", 200))}})
			if err != nil {
				w.done <- err
				return
			}
			w.acked.Store(i + 1)
		}
	}()
	return w
}

func (w *writer) halt(t *testing.T) int64 {
	t.Helper()
	close(w.stop)
	if err := <-w.done; err != nil {
		t.Fatalf("writer: %v", err)
	}
	return w.acked.Load()
}

// load writes n items of about 1 KB into table with BatchWriteItem.
func load(t *testing.T, c *dynamodb.Client, tbl, prefix string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 25 {
		var reqs []types.WriteRequest
		for j := i; j < min(n, i+25); j++ {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{
				"pk": S(fmt.Sprintf("%s-%07d", prefix, j)), "g": S("bulk"), "v": S(strings.Repeat(fmt.Sprint(j%10), 1000))}}})
		}
		out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{tbl: reqs}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.UnprocessedItems) > 0 {
			t.Fatal("unprocessed items")
		}
	}
}

// createOut parses `backup create --json`.
func createOut(t *testing.T, stdout string) client.BackupDone {
	t.Helper()
	var d client.BackupDone
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("backup create output %q: %v", stdout, err)
	}
	return d
}

// present returns which of the writer's items 0..n-1 the server holds.
func present(t *testing.T, c *dynamodb.Client, n int64) []bool {
	t.Helper()
	out := make([]bool, n)
	for i := int64(0); i < n; i++ {
		got, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table(i)),
			Key: map[string]types.AttributeValue{"pk": S(fmt.Sprintf("w-%07d", i))}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatalf("GetItem w-%07d: %v", i, err)
		}
		out[i] = got.Item != nil
	}
	return out
}

func TestBackupRestoreUnderLoad(t *testing.T) {
	dir, repo := t.TempDir(), filepath.Join(t.TempDir(), "repo")
	srv := start(t, dir)
	op := srv.Client(srv.Operator)
	createTable(t, op, "Shared")
	createTable(t, op, "Siloed", siloTag)
	a := srv.NewTenant(t, "backup-a", "admin")
	ca := srv.Client(a)
	load(t, ca, "Shared", "bulk", 3000)
	load(t, ca, "Siloed", "bulk", 1000)

	w := startWriter(ca, 0)
	for w.acked.Load() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	before1 := w.acked.Load()
	// A copy rate that is not a rate is refused before anything is
	// written, by the server as by the CLI.
	neg := -1.0
	_, err := client.New(srv.Endpoint, srv.Operator.Key).Backup(context.Background(), client.BackupRequest{To: repo, MaxRate: &neg}, nil)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || !strings.Contains(ce.Message, "max_rate_mib") {
		t.Errorf("backup with max_rate_mib -1: %v; want a 400 naming max_rate_mib", err)
	}
	if _, _, err := cli(t, nil, append([]string{"backup", "create", "--to", repo, "--max-rate", "-1"}, opArgs(srv)...)...); err == nil {
		t.Error("backup create --max-rate -1 succeeded")
	}
	if _, err := os.Stat(repo); !os.IsNotExist(err) {
		t.Errorf("a refused backup created the repository: %v", err)
	}
	// The full backup at a copy rate limit, the incremental without one.
	stdout, stderr, err := cli(t, nil, append([]string{"backup", "create", "--to", repo, "--max-rate", "16", "--json"}, opArgs(srv)...)...)
	if err != nil {
		t.Fatalf("backup create: %v\n%s%s", err, stdout, stderr)
	}
	full := createOut(t, stdout)
	if full.Base != "" || full.CopiedBytes != full.Bytes || full.Files == 0 {
		t.Fatalf("the first backup is not full: %+v", full)
	}
	if !strings.Contains(stderr, "checkpoint:") || !strings.Contains(stderr, "copy:") {
		t.Errorf("backup create printed no progress: %q", stderr)
	}

	// More writes, then an incremental backup under the same writer.
	load(t, ca, "Shared", "more", 500)
	before2 := w.acked.Load()
	stdout, stderr, err = cli(t, nil, append([]string{"backup", "create", "--to", repo, "--max-rate", "0", "--json"}, opArgs(srv)...)...)
	if err != nil {
		t.Fatalf("backup create (2): %v\n%s%s", err, stdout, stderr)
	}
	incr := createOut(t, stdout)
	after2 := w.halt(t)
	t.Logf("full: %d files, %d bytes; incremental: %d files, %d bytes, %d new files (%d bytes)", full.Files, full.Bytes, incr.Files, incr.Bytes, incr.Copied, incr.CopiedBytes)
	if incr.Base != full.ID {
		t.Errorf("the second backup's base = %q, want %q", incr.Base, full.ID)
	}
	// Only new files were copied: exactly the contents the full backup
	// did not have, and not every file.
	r, err := backup.OpenRepo(repo)
	if err != nil {
		t.Fatal(err)
	}
	m1, err := r.Manifest(full.ID)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := r.Manifest(incr.ID)
	if err != nil {
		t.Fatal(err)
	}
	had := map[string]bool{}
	for _, f := range m1.Files {
		had[f.SHA256] = true
	}
	fresh, freshBytes := map[string]bool{}, int64(0)
	for _, f := range m2.Files {
		if !had[f.SHA256] && !fresh[f.SHA256] {
			fresh[f.SHA256] = true
			freshBytes += f.Size
		}
	}
	if incr.Copied != len(fresh) || incr.CopiedBytes != freshBytes || incr.Copied >= incr.Files {
		t.Errorf("the incremental backup copied %d files (%d bytes) of %d; %d (%d bytes) were new: it must copy those only", incr.Copied, incr.CopiedBytes, incr.Files, len(fresh), freshBytes)
	}
	list, _, err := cli(t, nil, "backup", "list", "--from", repo, "--json")
	if err != nil || strings.Count(list, `"id"`) != 2 {
		t.Fatalf("backup list: %v\n%s", err, list)
	}

	// Restore without the server key: refused; with another key: refused.
	restored := filepath.Join(t.TempDir(), "restored")
	if _, stderr, err := cli(t, []string{"TENANTDB_SERVER_KEY="}, "backup", "restore", "--from", repo, "--data-dir", restored); err == nil || !strings.Contains(stderr, "server key") {
		t.Fatalf("restore without a server key: %v %s", err, stderr)
	}
	other := filepath.Join(t.TempDir(), "other.key")
	os.WriteFile(other, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	if _, stderr, err := cli(t, nil, "backup", "restore", "--from", repo, "--data-dir", restored, "--server-key-file", other); err == nil || !strings.Contains(stderr, "check") {
		t.Fatalf("restore with another server key: %v %s", err, stderr)
	}
	// Into a non-empty directory: refused.
	if _, stderr, err := cli(t, nil, "backup", "restore", "--from", repo, "--data-dir", dir, "--server-key-file", filepath.Join(dir, "server.key")); err == nil || !strings.Contains(stderr, "not empty") {
		t.Fatalf("restore into a non-empty directory: %v %s", err, stderr)
	}
	stdout, stderr, err = cli(t, nil, "backup", "restore", "--from", repo, "--data-dir", restored, "--server-key-file", filepath.Join(dir, "server.key"))
	if err != nil {
		t.Fatalf("backup restore: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "verify:") {
		t.Errorf("restore printed no verification progress: %q", stderr)
	}
	srv.Stop(t)

	// A fresh server on the restored directory: every item acknowledged
	// before the second backup began, and the writer's items form a
	// prefix of its sequence across both stores (one moment).
	// NB: the credentials files are not in a backup (plaintext secrets);
	// the operator keeps them, and the keys in the restored catalog work.
	harness.CopyCredentials(t, dir, restored)
	rs := start(t, restored)
	rc := rs.Client(a)
	got := present(t, rc, after2)
	k := int64(0)
	for k < after2 && got[k] {
		k++
	}
	for i := k; i < after2; i++ {
		if got[i] {
			t.Fatalf("restored: w-%07d (%s) present but w-%07d (%s) missing: the stores were not copied at one moment", i, table(i), k, table(k))
		}
	}
	if k < before2 {
		t.Fatalf("restored: %d of the writer's items; %d were acknowledged before the backup began", k, before2)
	}
	t.Logf("writer: %d acknowledged before backup 1, %d before backup 2, %d in all; restored %d", before1, before2, after2, k)
	for _, c := range []struct {
		table, prefix string
		n             int
	}{{"Shared", "bulk", 3000}, {"Siloed", "bulk", 1000}, {"Shared", "more", 500}} {
		var count int32
		p := dynamodb.NewScanPaginator(rc, &dynamodb.ScanInput{TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
			FilterExpression: aws.String("begins_with(pk, :p)"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": S(c.prefix + "-")}})
		for p.HasMorePages() {
			page, err := p.NextPage(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			count += page.Count
		}
		if int(count) != c.n {
			t.Errorf("restored %s: %d %s items, want %d", c.table, count, c.prefix, c.n)
		}
	}
	q, err := rc.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String("Siloed"), IndexName: aws.String("byG"),
		KeyConditionExpression: aws.String("g = :g"), ExpressionAttributeValues: map[string]types.AttributeValue{":g": S("bulk")}, Select: types.SelectCount})
	if err != nil || q.Count == 0 {
		t.Errorf("restored GSI of the silo table: %v, %v", q, err)
	}
	rs.Stop(t)

	// One corrupted byte: verify and restore refuse, nothing is written.
	blob := largestFile(t, filepath.Join(repo, "files"))
	b, _ := os.ReadFile(blob)
	b[len(b)/2] ^= 0x01
	os.WriteFile(blob, b, 0o600)
	if _, stderr, err := cli(t, nil, "backup", "verify", "--from", repo); err == nil || !strings.Contains(stderr, "checksum mismatch") {
		t.Errorf("verify after corruption: %v %s", err, stderr)
	}
	again := filepath.Join(t.TempDir(), "again")
	if _, stderr, err := cli(t, nil, "backup", "restore", "--from", repo, "--data-dir", again, "--server-key-file", filepath.Join(dir, "server.key")); err == nil || !strings.Contains(stderr, "failed verification") {
		t.Errorf("restore of a corrupted backup: %v %s", err, stderr)
	}
	if _, err := os.Stat(again); !os.IsNotExist(err) {
		t.Errorf("a refused restore left %s: %v", again, err)
	}
	if leftovers, _ := filepath.Glob(again + ".restoring-*"); len(leftovers) > 0 {
		t.Errorf("a refused restore left %v", leftovers)
	}
}

func largestFile(t *testing.T, dir string) string {
	t.Helper()
	var best string
	var size int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, _ := d.Info(); info != nil && info.Size() > size {
				best, size = p, info.Size()
			}
		}
		return nil
	})
	if best == "" {
		t.Fatal("no file in the repository")
	}
	return best
}

// TestBackupKill9 kills the server while `backup create` runs: the
// repository holds no backup that looks complete, and the next backup
// (after a restart) completes and verifies.
func TestBackupKill9(t *testing.T) {
	dir, repo := t.TempDir(), filepath.Join(t.TempDir(), "repo")
	srv := start(t, dir)
	createTable(t, srv.Client(srv.Operator), "Shared")
	a := srv.NewTenant(t, "kill-a", "admin")
	load(t, srv.Client(a), "Shared", "bulk", 20000)

	cmd := exec.Command(bin, append([]string{"backup", "create", "--to", repo}, opArgs(srv)...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	buf := make([]byte, 4096)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "copy:") {
		n, err := stderr.Read(buf)
		seen.Write(buf[:n])
		if err != nil {
			break
		}
	}
	once.Do(func() { srv.Kill(t) })
	cmd.Wait()
	if !strings.Contains(seen.String(), "copy:") {
		t.Fatalf("the backup never reached its copy phase: %s", seen.String())
	}
	list, _, err := cli(t, nil, "backup", "list", "--from", repo, "--json")
	if err != nil || strings.TrimSpace(list) != "[]" {
		t.Fatalf("after kill -9 during the backup, list = %s (%v); want no backup", list, err)
	}
	if _, _, err := cli(t, nil, "backup", "verify", "--from", repo); err == nil {
		t.Error("verify of a repository without a complete backup succeeded")
	}

	srv = start(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "backup-staging")); err != nil {
		t.Logf("staging after restart: %v", err)
	}
	stdout, stderr2, err := cli(t, nil, append([]string{"backup", "create", "--to", repo, "--json"}, opArgs(srv)...)...)
	if err != nil {
		t.Fatalf("backup create after the crash: %v\n%s", err, stderr2)
	}
	d := createOut(t, stdout)
	t.Logf("after the crash: %d files, %d new to the repository", d.Files, d.Copied)
	if _, stderr, err := cli(t, nil, "backup", "verify", "--from", repo); err != nil {
		t.Fatalf("verify: %v %s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "backup-staging")); !os.IsNotExist(err) {
		t.Errorf("the staging directory is left after a backup: %v", err)
	}
}
