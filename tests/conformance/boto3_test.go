package conformance

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestBoto3 runs testdata/boto3_smoke.py (resource and client APIs,
// batch writer, Decimal numbers, sets, binary, paging, conditional and
// transactional errors) against the server.
func TestBoto3(t *testing.T) {
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		t.Skip("python3 with boto3 is not installed")
	}
	t.Parallel()
	srv := harness.Start(t)
	cmd := exec.Command("python3", "testdata/boto3_smoke.py")
	cmd.Env = srv.Env(srv.Default)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("boto3_smoke.py: %v\n%s", err, out)
	}
}

// TestBoto3Streams runs testdata/boto3_streams.py: streams of every view
// type enabled with boto3, written with every write operation and read
// back in order with boto3's dynamodbstreams client, then one disabled
// and read to its end.
func TestBoto3Streams(t *testing.T) {
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		t.Skip("python3 with boto3 is not installed")
	}
	t.Parallel()
	srv := harness.Start(t)
	skipRemoteStreams(t, srv)
	cmd := exec.Command("python3", "testdata/boto3_streams.py")
	cmd.Env = srv.Env(srv.Default)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("boto3_streams.py: %v\n%s", err, out)
	}
}
