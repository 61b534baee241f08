// Command flood is a cheap aggressor for the noisy-neighbour benchmark: it
// signs a set of GetItem requests once (SigV4 accepts a signature for 15
// minutes) and replays them on many keep-alive connections as fast as it
// can. An SDK client spends more CPU per request than tenantdb does, so on
// a small machine an SDK-based aggressor saturates its own CPU before the
// server's; flood spends a few microseconds per request and can saturate
// the server.
//
//	flood --endpoint URL --credentials FILE|--key ID:SECRET [--table tdbload]
//	      [--items 2000] [--concurrency 128] [--duration 10s] [--json]
//
// Keys are tdbload's (pk p%08d = n/20, sk s%02d = n%20), so a table seeded
// with tdbload --preload serves them.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

type signed struct {
	body   []byte
	header http.Header
}

func main() {
	endpoint := flag.String("endpoint", "http://127.0.0.1:8000", "DynamoDB endpoint")
	key := flag.String("key", "", "access-key-id:secret")
	credFile := flag.String("credentials", "", "JSON printed by `tenantdb key create --json`")
	table := flag.String("table", "tdbload", "table")
	items := flag.Int("items", 2000, "distinct items (tdbload keys 0..N-1)")
	conc := flag.Int("concurrency", 128, "connections, one request in flight each")
	dur := flag.Duration("duration", 10*time.Second, "how long to flood")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	flag.Parse()
	if err := run(*endpoint, *key, *credFile, *table, *items, *conc, *dur, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "flood:", err)
		os.Exit(1)
	}
}

func run(endpoint, key, credFile, table string, items, conc int, dur time.Duration, asJSON bool) error {
	id, secret, ok := strings.Cut(key, ":")
	if credFile != "" {
		var c struct {
			AccessKeyID     string `json:"access_key_id"`
			SecretAccessKey string `json:"secret_access_key"`
		}
		b, err := os.ReadFile(credFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &c); err != nil {
			return fmt.Errorf("%s: %w", credFile, err)
		}
		id, secret, ok = c.AccessKeyID, c.SecretAccessKey, true
	}
	if !ok || id == "" {
		return errors.New("give --key ID:SECRET or --credentials FILE")
	}
	creds := aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}
	signer := v4.NewSigner()
	now := time.Now()
	n := min(items, 1000)
	reqs := make([]signed, n)
	for i := range reqs {
		body := []byte(fmt.Sprintf(`{"TableName":%q,"Key":{"pk":{"S":"p%08d"},"sk":{"S":"s%02d"}}}`, table, i/20, i%20))
		r, err := http.NewRequest(http.MethodPost, endpoint+"/", bytes.NewReader(body))
		if err != nil {
			return err
		}
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		r.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
		sum := sha256.Sum256(body)
		if err := signer.SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "dynamodb", "us-east-1", now); err != nil {
			return err
		}
		reqs[i] = signed{body: body, header: r.Header.Clone()}
	}
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, DisableCompression: true}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var okN, errN, thrN atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			for i := w; time.Now().Before(stop); i += conc {
				s := reqs[i%n]
				r, _ := http.NewRequest(http.MethodPost, endpoint+"/", bytes.NewReader(s.body))
				r.Header = s.header.Clone()
				resp, err := hc.Do(r)
				if err != nil {
					errN.Add(1)
					continue
				}
				k, _ := io.ReadFull(resp.Body, buf[:min(len(buf), 256)])
				io.CopyBuffer(io.Discard, resp.Body, buf)
				resp.Body.Close()
				switch {
				case resp.StatusCode == http.StatusOK:
					okN.Add(1)
				case bytes.Contains(buf[:k], []byte("Throughput")) || bytes.Contains(buf[:k], []byte("Throttling")):
					thrN.Add(1)
				default:
					errN.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	res := map[string]any{"ok": okN.Load(), "throttled": thrN.Load(), "errors": errN.Load(), "ops_per_sec": float64(okN.Load()) / el, "elapsed_s": el}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Printf("flood: %d ok (%.0f/s), %d throttled, %d errors in %.1fs\n", okN.Load(), float64(okN.Load())/el, thrN.Load(), errN.Load(), el)
	return nil
}
