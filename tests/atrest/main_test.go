package atrest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/tests/harness"
)

var bin string // the tenantdb binary, built once by TestMain

func TestMain(m *testing.M) { os.Exit(harness.RunWithBinary(m, &bin)) }

func start(t *testing.T, dir string) *harness.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the tenantdb binary")
	}
	return harness.StartBinary(t, bin, dir, "--fairness=false")
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func S(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// createTable creates a shared table (operator) with key pk/sk, a GSI on
// g, and the given stream view ("" for none) and tags.
func createTable(t *testing.T, c *dynamodb.Client, name, stream string, tags ...types.Tag) {
	t.Helper()
	in := &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("g"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}},
		BillingMode: types.BillingModePayPerRequest,
		Tags:        tags,
	}
	if stream != "" {
		in.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewType(stream)}
	}
	if _, err := c.CreateTable(context.Background(), in); err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
}

// filesContaining returns the files under dir whose bytes contain needle
// (only the *.sst files, if sstOnly).
func filesContaining(t *testing.T, dir, needle string, sstOnly bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || (sstOnly && !strings.HasSuffix(p, ".sst")) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(needle)) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compactAll flushes and fully compacts the main store and every silo
// store of the (stopped) server's data directory.
func compactAll(t *testing.T, dir string) {
	t.Helper()
	stores := []string{filepath.Join(dir, "db")}
	silos, _ := filepath.Glob(filepath.Join(dir, "silos", "*", "*"))
	stores = append(stores, silos...)
	for _, s := range stores {
		db, err := storage.Open(s, storage.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", s, err)
		}
		if err := db.Compact([]byte{0}, bytes.Repeat([]byte{0xff}, 64)); err != nil {
			t.Fatalf("compact %s: %v", s, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// copyDir copies the directory tree src to dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
