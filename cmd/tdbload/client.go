package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/tenantdb/tenantdb/internal/loadgen"
	"github.com/tenantdb/tenantdb/internal/sdkhttp"
)

// clientFlags are the flags every subcommand that sends requests shares.
type clientFlags struct {
	endpoint string
	region   string
	retries  int
	timeout  time.Duration
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.endpoint, "endpoint", envOr("TENANTDB_ENDPOINT", "http://127.0.0.1:8000"), "DynamoDB endpoint URL (env TENANTDB_ENDPOINT)")
	fs.StringVar(&c.region, "region", "us-east-1", "region used for signing")
	fs.IntVar(&c.retries, "retries", 0, "SDK retries per request (0: errors are counted, not retried)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "timeout of each request")
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// newHTTPClient returns the one HTTP client all SDK clients share, able to
// keep conns idle connections to the endpoint so no request waits for a dial.
func newHTTPClient(conns int) aws.HTTPClient {
	// NB: OwnBody: tdbload counts errors instead of retrying them.
	return sdkhttp.OwnBody(&http.Client{Transport: &http.Transport{
		// NB: no Proxy: benchmarks talk to the endpoint directly.
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns + 16,
		MaxIdleConnsPerHost: conns + 16,
		// NB: below Node's 5 s keep-alive timeout (dynalite), so the client
		// does not reuse a connection the server is closing ("http: server
		// closed idle connection" on a POST, which net/http cannot retry).
		IdleConnTimeout:    4 * time.Second,
		DisableCompression: true,
	}})
}

// newClient returns a DynamoDB client for one credential.
func newClient(cf *clientFlags, hc aws.HTTPClient, cred loadgen.Credential) *dynamodb.Client {
	retries := cf.retries
	cfg := aws.Config{
		Region:      cf.region,
		Credentials: credentials.NewStaticCredentialsProvider(cred.AccessKeyID, cred.SecretAccessKey, ""),
		HTTPClient:  hc,
		Retryer: func() aws.Retryer {
			if retries <= 0 {
				return aws.NopRetryer{}
			}
			// No client-side retry quota: every retry is the server's doing.
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = retries + 1
				o.RateLimiter = ratelimit.None
			})
		},
	}
	endpoint := cf.endpoint
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = &endpoint })
}

// loadCredentials returns the tenants' credentials from a file and/or a
// comma-separated flag value, or the default dummy credential.
func loadCredentials(file, list string) ([]loadgen.Credential, error) {
	var out []loadgen.Credential
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		cs, err := loadgen.ParseCredentials(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		out = append(out, cs...)
	}
	if list != "" {
		for _, s := range strings.Split(list, ",") {
			c, err := loadgen.ParseCredential(s)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = []loadgen.Credential{loadgen.DefaultCredential}
	}
	return out, nil
}
