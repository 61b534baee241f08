// Package crash kills the real tenantdb binary with SIGKILL in the middle
// of a write load and checks, after a restart on the same data directory,
// that every acknowledged write is there.
package crash

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// binary returns TENANTDB_BIN or a freshly built ./cmd/tenantdb, built
// with the crash points (internal/crashpoint): inert unless a test sets
// TENANTDB_CRASHPOINT for a server.
func binary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(harness.BinEnv); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "tenantdb")
	cmd := exec.Command("go", "build", "-tags", "crashpoints", "-o", bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// crashBinary returns a tenantdb built with the crash points: binary's,
// or, when TENANTDB_BIN names a binary built without them, a fresh build.
func crashBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv(harness.BinEnv) == "" {
		return binary(t)
	}
	bin := filepath.Join(t.TempDir(), "tenantdb")
	cmd := exec.Command("go", "build", "-tags", "crashpoints", "-o", bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func key(worker, i int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("w%02d", worker)},
		"sk": &types.AttributeValueMemberN{Value: fmt.Sprint(i)},
	}
}

// load writes items from workers goroutines until the server dies, and
// returns the keys whose PutItem was acknowledged. It calls kill once
// killAfter writes have been acknowledged.
func load(t *testing.T, c *dynamodb.Client, round, workers, killAfter int, kill func()) [][]int {
	acked := make([][]int, workers)
	var n atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	payload := string(make([]byte, 512))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := round * 1_000_000; ; i++ {
				it := key(w, i)
				it["payload"] = &types.AttributeValueMemberS{Value: payload}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("Crash"), Item: it})
				cancel()
				if err != nil {
					return // the server is gone (or going)
				}
				acked[w] = append(acked[w], i)
				if n.Add(1) == int64(killAfter) {
					once.Do(kill)
				}
			}
		}()
	}
	wg.Wait()
	return acked
}

// verify reads back every acknowledged key.
func verify(t *testing.T, c *dynamodb.Client, acked [][]int) {
	t.Helper()
	missing, total := 0, 0
	for w, is := range acked {
		for _, i := range is {
			total++
			out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("Crash"), Key: key(w, i), ConsistentRead: aws.Bool(true)})
			if err != nil {
				t.Fatalf("GetItem after restart: %v", err)
			}
			if out.Item == nil {
				missing++
				if missing <= 10 {
					t.Errorf("acknowledged item w%02d/%d is missing after kill -9", w, i)
				}
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d acknowledged items lost", missing, total)
	}
	t.Logf("all %d acknowledged items survived kill -9", total)
}

func TestKill9KeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary(t)
	dir := t.TempDir()
	const workers, killAfter = 16, 400

	var all [][]int = make([][]int, workers)
	for round := 0; round < 2; round++ {
		srv := harness.StartBinary(t, bin, dir, "--fairness=false")
		c := srv.Client(srv.Default)
		if round == 0 {
			_, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
				TableName: aws.String("Crash"),
				AttributeDefinitions: []types.AttributeDefinition{
					{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
					{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN}},
				KeySchema: []types.KeySchemaElement{
					{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
					{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange}},
				BillingMode: types.BillingModePayPerRequest,
			})
			if err != nil {
				t.Fatal(err)
			}
		} else {
			verify(t, c, all) // the previous rounds' writes
		}
		acked := load(t, c, round, workers, killAfter, func() { srv.Kill(t) })
		for w := range acked {
			all[w] = append(all[w], acked[w]...)
		}
	}
	srv := harness.StartBinary(t, bin, dir)
	verify(t, srv.Client(srv.Default), all)
}
