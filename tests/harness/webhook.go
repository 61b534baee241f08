package harness

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/client"
)

// Received is one record a Receiver accepted, as Lambda would see it.
type Received struct {
	EventID        string `json:"eventID"`
	EventName      string `json:"eventName"`
	EventSource    string `json:"eventSource"`
	EventVersion   string `json:"eventVersion"`
	AwsRegion      string `json:"awsRegion"`
	EventSourceARN string `json:"eventSourceARN"`
	Dynamodb       struct {
		Keys                        map[string]map[string]any
		NewImage                    map[string]map[string]any
		OldImage                    map[string]map[string]any
		SequenceNumber              string
		SizeBytes                   int64
		StreamViewType              string
		ApproximateCreationDateTime float64
	} `json:"dynamodb"`
	// Subscription is the Tenantdb-Subscription header of its delivery;
	// Arrived when it arrived.
	Subscription string    `json:"-"`
	Arrived      time.Time `json:"-"`
}

// S returns the string value of attribute name of the record's new image
// (its old image for a REMOVE).
func (r Received) S(name string) string {
	img := r.Dynamodb.NewImage
	if r.EventName == "REMOVE" {
		img = r.Dynamodb.OldImage
	}
	s, _ := img[name]["S"].(string)
	return s
}

// Receiver is a webhook endpoint on loopback for tests: it verifies every
// delivery's Tenantdb-Signature against the secrets it trusts (answering
// 401 to one it cannot verify), and records the records of deliveries it
// answered with a 2xx.
type Receiver struct {
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	got     []Received
	raw     []rawDelivery // accepted, not parsed yet (Records parses)
	respond func(n int64) (status int, delay time.Duration)
	calls   atomic.Int64
	invalid atomic.Int64
}

// StartReceiver starts a Receiver that answers 200 until told otherwise.
func StartReceiver(t testing.TB) *Receiver {
	rc := &Receiver{respond: func(int64) (int, time.Duration) { return 200, 0 }}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	rc.URL = rc.srv.URL
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	arrived := time.Now()
	n := rc.calls.Add(1)
	rc.mu.Lock()
	secrets, respond := rc.secrets, rc.respond
	rc.mu.Unlock()
	ok := false
	for _, s := range secrets {
		ok = ok || client.VerifyWebhook(r.Header.Get("Tenantdb-Signature"), body, s, time.Now(), 5*time.Minute)
	}
	if !ok {
		rc.invalid.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	status, delay := respond(n)
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status >= 200 && status < 300 {
		if !json.Valid(body) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		// NB: parsed later, by Records, so that a benchmark's receiver
		// costs the process little more than a real one would.
		rc.mu.Lock()
		rc.raw = append(rc.raw, rawDelivery{body, r.Header.Get("Tenantdb-Subscription"), arrived})
		rc.mu.Unlock()
	}
	w.WriteHeader(status)
}

type rawDelivery struct {
	body    []byte
	sub     string
	arrived time.Time
}

// Trust adds a secret deliveries may be signed with.
func (rc *Receiver) Trust(secret string) {
	rc.mu.Lock()
	rc.secrets = append(rc.secrets, secret)
	rc.mu.Unlock()
}

// TrustOnly replaces the trusted secrets with secret.
func (rc *Receiver) TrustOnly(secret string) {
	rc.mu.Lock()
	rc.secrets = []string{secret}
	rc.mu.Unlock()
}

// Respond sets how the receiver answers its n-th delivery (from 1): a
// status after a delay.
func (rc *Receiver) Respond(f func(n int64) (status int, delay time.Duration)) {
	rc.mu.Lock()
	rc.respond = f
	rc.mu.Unlock()
}

// Records returns the records accepted so far, in arrival order.
func (rc *Receiver) Records() []Received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, d := range rc.raw {
		var ev struct{ Records []Received }
		_ = json.Unmarshal(d.body, &ev)
		for i := range ev.Records {
			ev.Records[i].Subscription, ev.Records[i].Arrived = d.sub, d.arrived
		}
		rc.got = append(rc.got, ev.Records...)
	}
	rc.raw = nil
	return append([]Received(nil), rc.got...)
}

// Calls counts deliveries received; Invalid those whose signature did not
// verify.
func (rc *Receiver) Calls() int64   { return rc.calls.Load() }
func (rc *Receiver) Invalid() int64 { return rc.invalid.Load() }

// WaitFor waits up to d for cond over the records accepted so far and
// fails the test if it does not hold by then.
func (rc *Receiver) WaitFor(t testing.TB, d time.Duration, what string, cond func([]Received) bool) []Received {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := rc.Records()
		if cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("receiver: %s did not happen within %v (%d records, %d calls, %d unverified)", what, d, len(got), rc.Calls(), rc.Invalid())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
