package harness

import (
	"bytes"
	"encoding/json"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A per-partition-key write limit in front of a DynamoDB-API engine, for
// tests and benchmarks only (Options.RemoteWriteLimit): AWS DynamoDB
// throttles writes beyond 1,000 WCU per second to one partition key, and
// neither the tenantdb stand-in nor dynalite does, so a benchmark of
// hot-tenant sharding puts this reverse proxy between the gateway and the
// engine. It forwards every request unchanged (the gateway's SigV4
// signature stays valid: the Host header is kept) and answers
// ProvisionedThroughputExceededException, as DynamoDB does, to a write
// whose partition key has no units left in its token bucket (capacity
// one second of the limit). A write costs 1 unit per item per started KB
// of the request's item (2 in a transaction), as DynamoDB's WCU. The
// gateway never depends on it: it is DynamoDB's documented behaviour.

const throttled = `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"Throughput exceeds the current capacity for one partition key of the table (the test engine's per-partition-key write limit)"}`

// partLimiter is the proxy's state.
type partLimiter struct {
	rate    float64 // units per second per partition key
	keyAttr string  // the engine table's partition key attribute
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	units float64
	at    time.Time
}

// startPartLimit starts the proxy in front of engine and returns its URL.
func startPartLimit(engine, keyAttr string, rate float64) (string, func(), error) {
	u, err := url.Parse(engine)
	if err != nil {
		return "", nil, err
	}
	l := &partLimiter{rate: rate, keyAttr: keyAttr, buckets: map[string]*bucket{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		op := r.Header.Get("X-Amz-Target")
		op = op[strings.LastIndexByte(op, '.')+1:]
		if !l.admit(op, body) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE([]byte(throttled))), 10))
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, throttled)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return srv.URL, srv.Close, nil
}

// admit takes the units of a write request from its partitions' buckets,
// or reports false (taking nothing) if one has too few.
func (l *partLimiter) admit(op string, body []byte) bool {
	var req struct {
		Item, Key     map[string]map[string]any
		RequestItems  map[string][]map[string]map[string]map[string]map[string]any
		TransactItems []map[string]struct {
			Item, Key map[string]map[string]any
		}
	}
	cost := map[string]float64{}
	units := func(n int) float64 { return math.Max(1, math.Ceil(float64(n)/1024)) }
	add := func(k map[string]map[string]any, mult float64) {
		if v, ok := k[l.keyAttr]["S"].(string); ok {
			cost[v] += mult * units(len(body))
		}
	}
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		if json.Unmarshal(body, &req) != nil {
			return true
		}
	default:
		return true
	}
	add(req.Item, 1)
	add(req.Key, 1)
	for _, ws := range req.RequestItems {
		for _, w := range ws {
			add(w["PutRequest"]["Item"], 1)
			add(w["DeleteRequest"]["Key"], 1)
		}
	}
	for _, ti := range req.TransactItems {
		for kind, a := range ti {
			if kind != "ConditionCheck" {
				add(a.Item, 2)
				add(a.Key, 2)
			}
		}
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, c := range cost {
		b := l.bucket(k, now)
		if b.units < c {
			return false
		}
	}
	for k, c := range cost {
		l.buckets[k].units -= c
	}
	return true
}

func (l *partLimiter) bucket(k string, now time.Time) *bucket {
	b := l.buckets[k]
	if b == nil {
		b = &bucket{units: l.rate, at: now}
		l.buckets[k] = b
	}
	b.units = math.Min(l.rate, b.units+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	return b
}
