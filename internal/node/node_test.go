package node_test

import (
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
)

// start opens and serves a node with o and returns its endpoint.
func start(t *testing.T, o node.Options) (*node.Node, string) {
	t.Helper()
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Endpoint = l.Addr().String()
	o.Logger = slog.New(slog.DiscardHandler)
	n, err := node.Open(ctx, o)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := n.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n, "http://" + l.Addr().String()
}

// listTables calls ListTables at endpoint signed with akid and secret.
func listTables(endpoint, akid, secret string) error {
	c := dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: akid, SecretAccessKey: secret}, nil
		}),
		RetryMaxAttempts: 1,
	})
	_, err := c.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	return err
}

func TestOpenInMemory(t *testing.T) {
	n, ep := start(t, node.Options{InMemory: true, DefaultTenant: true})
	b := n.Bootstrap()
	if !b.Operator.IsOperator() || b.OperatorFile != "" || b.DefaultFile != "" {
		t.Fatalf("bootstrap %+v: want an operator key and no files in memory", b)
	}
	d := b.Default
	if err := listTables(ep, d.AccessKeyID(), d.Secret); err != nil {
		t.Fatalf("default tenant's key: %v", err)
	}
	// NB: only a build with the benchbypass tag trusts a known access key
	// id without its signature (benchbypass_test.go).
	if err := listTables(ep, d.AccessKeyID(), "wrong"+d.Secret); err == nil {
		t.Error("a request signed with the wrong secret was accepted")
	}
}

func TestOpenDataDir(t *testing.T) {
	dir := t.TempDir()
	n, ep := start(t, node.Options{DataDir: dir, DefaultTenant: true})
	b := n.Bootstrap()
	for _, f := range []string{b.OperatorFile, b.DefaultFile, filepath.Join(dir, auth.ServerKeyFile)} {
		if _, err := os.Stat(f); f == "" || err != nil {
			t.Errorf("file %q: %v", f, err)
		}
	}
	d, err := auth.ReadCredentialsFile(b.DefaultFile, "default")
	if err != nil {
		t.Fatal(err)
	}
	if d != b.Default {
		t.Errorf("default-credentials holds %v, bootstrap returned %v", d.AccessKeyID(), b.Default.AccessKeyID())
	}
	if err := listTables(ep, d.AccessKeyID(), d.Secret); err != nil {
		t.Fatalf("default tenant's key: %v", err)
	}
}

func TestOpenNeedsDataDir(t *testing.T) {
	if _, err := node.Open(context.Background(), node.Options{}); err == nil {
		t.Fatal("Open without DataDir or InMemory succeeded")
	}
}
