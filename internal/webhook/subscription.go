// Package webhook delivers a table's committed changes to HTTPS endpoints:
// the transactional outbox as a property of the database. A subscription
// follows one table's change log (package changelog, through the engine's
// consumer API) in one tenant environment, filters it with the
// FilterExpression language (package expr), and POSTs batches shaped like
// the event AWS Lambda receives from DynamoDB Streams, signed with the
// subscription's secret. See DESIGN.md for the guarantees and why they
// hold.
package webhook

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/expr"
)

// State is a subscription's state.
type State string

// The states. A paused subscription keeps its cursor and resumes where it
// stopped; a disabled one was stopped by the server (410 Gone, its table
// deleted) and is resumed like a paused one.
const (
	Active   State = "active"
	Paused   State = "paused"
	Disabled State = "disabled"
)

// The event kinds a subscription may ask for.
var eventKinds = []string{"INSERT", "MODIFY", "REMOVE"}

// Limits of a subscription's settings.
const (
	DefaultBatchSize   = 100
	MaxBatchSize       = 1000
	DefaultRetryPeriod = 24 * time.Hour
	MaxRetryPeriod     = 7 * 24 * time.Hour
	DefaultOverlap     = 24 * time.Hour
	maxURL             = 2048
	maxFilter          = 4096
	maxSecrets         = 2
)

// secret is one signing secret as stored: sealed under the server's
// webhook key.
type secret struct {
	ID      string    `json:"id"`
	Sealed  []byte    `json:"sealed"`
	Created time.Time `json:"created"`
	// Expires is when a rotated-out secret stops signing; zero for the
	// current one.
	Expires time.Time `json:"expires,omitzero"`
}

// record is a subscription as stored under keyspace.WebhookSubscription.
type record struct {
	ID           string            `json:"id"`
	Env          string            `json:"env"`
	Table        string            `json:"table"`
	URL          string            `json:"url"`
	Filter       string            `json:"filter,omitempty"`
	FilterNames  map[string]string `json:"filter_names,omitempty"`
	FilterValues attr.Item         `json:"filter_values,omitempty"`
	Events       []string          `json:"events"`
	BatchSize    int               `json:"batch_size"`
	RetryPeriod  time.Duration     `json:"retry_period"`
	State        State             `json:"state"`
	StateReason  string            `json:"state_reason,omitempty"`
	Secrets      []secret          `json:"secrets"`
	Created      time.Time         `json:"created"`
	Updated      time.Time         `json:"updated"`
}

// CreateInput is what creating a subscription takes. Env is the tenant
// environment whose table changes are delivered: "" means the caller's
// own (for the operator, "live").
type CreateInput struct {
	Env         string            `json:"env,omitempty"`
	Table       string            `json:"table"`
	URL         string            `json:"url"`
	Filter      string            `json:"filter,omitempty"`
	FilterNames map[string]string `json:"filter_names,omitempty"`
	// FilterValues are the filter's ExpressionAttributeValues in DynamoDB
	// JSON ({":o": {"S": "OUTBOX#"}}).
	FilterValues json.RawMessage `json:"filter_values,omitempty"`
	Events       []string        `json:"events,omitempty"`
	BatchSize    int             `json:"batch_size,omitempty"`
	// RetryPeriodSeconds is how long a failing batch is retried before it
	// goes to the dead-letter list; 0 means 24 h.
	RetryPeriodSeconds int64 `json:"retry_period_seconds,omitempty"`
}

// SecretInfo describes a signing secret without revealing it.
type SecretInfo struct {
	ID      string     `json:"id"`
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"`
}

// View is a subscription as the admin API shows it.
type View struct {
	ID                 string            `json:"id"`
	TenantID           string            `json:"tenant_id"`
	Env                string            `json:"env"`
	Table              string            `json:"table"`
	URL                string            `json:"url"`
	Filter             string            `json:"filter,omitempty"`
	FilterNames        map[string]string `json:"filter_names,omitempty"`
	FilterValues       json.RawMessage   `json:"filter_values,omitempty"`
	Events             []string          `json:"events"`
	BatchSize          int               `json:"batch_size"`
	RetryPeriodSeconds int64             `json:"retry_period_seconds"`
	State              State             `json:"state"`
	StateReason        string            `json:"state_reason,omitempty"`
	Secrets            []SecretInfo      `json:"secrets"`
	Cursor             string            `json:"cursor"`
	FailingSince       *time.Time        `json:"failing_since,omitempty"`
	DeadLetters        int               `json:"dead_letters"`
	Created            time.Time         `json:"created"`
	Updated            time.Time         `json:"updated"`
	// Secret is the new signing secret: set only in the answers of create
	// and rotate-secret, never stored in plaintext or shown again.
	Secret string `json:"secret,omitempty"`
}

// newID returns a new subscription id, "sub_" and 24 hex digits.
func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return "sub_" + hex.EncodeToString(b[:])
}

// validID reports whether s has the shape of a subscription id (so that a
// path segment of another shape never reaches the store).
func validID(s string) bool {
	if len(s) != 28 || !strings.HasPrefix(s, "sub_") {
		return false
	}
	_, err := hex.DecodeString(s[4:])
	return err == nil
}

// newSecret returns a new signing secret, "whsec_" and 64 hex digits.
func newSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return "whsec_" + hex.EncodeToString(b[:])
}

// normalizeEvents checks and orders an events list; empty means all.
func normalizeEvents(in []string) ([]string, error) {
	if len(in) == 0 {
		return append([]string(nil), eventKinds...), nil
	}
	want := map[string]bool{}
	for _, e := range in {
		e = strings.ToUpper(strings.TrimSpace(e))
		ok := false
		for _, k := range eventKinds {
			ok = ok || k == e
		}
		if !ok {
			return nil, apierr.Validationf("unknown event kind %q: events are INSERT, MODIFY and REMOVE", apierr.Clip(e))
		}
		want[e] = true
	}
	var out []string
	for _, k := range eventKinds {
		if want[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// Filter is a subscription's compiled filter and event kinds.
type Filter struct {
	events [3]bool // INSERT, MODIFY, REMOVE
	cond   expr.Condition
}

// CompileFilter compiles a filter expression with its placeholders, as a
// FilterExpression with ExpressionAttributeNames and
// ExpressionAttributeValues is compiled, and the event kinds. Errors are
// ValidationExceptions saying what is wrong ("" expression: no filter).
func CompileFilter(filter string, names map[string]string, values attr.Item, events []string) (*Filter, error) {
	evs, err := normalizeEvents(events)
	if err != nil {
		return nil, err
	}
	f := &Filter{}
	for _, e := range evs {
		switch e {
		case "INSERT":
			f.events[0] = true
		case "MODIFY":
			f.events[1] = true
		case "REMOVE":
			f.events[2] = true
		}
	}
	if len(filter) > maxFilter {
		return nil, apierr.Validationf("the filter is longer than %d bytes", maxFilter)
	}
	if strings.TrimSpace(filter) == "" {
		if len(names) > 0 || len(values) > 0 {
			return nil, apierr.Validationf("filter names or values were given without a filter")
		}
		return f, nil
	}
	p := expr.NewParams(names, values)
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if f.cond, err = p.Filter(filter); err != nil {
		return nil, err
	}
	if err := p.CheckUnused(); err != nil {
		return nil, err
	}
	return f, nil
}

// Match reports whether the change r passes the filter: its event kind is
// subscribed and the expression holds on its new image, or on its old
// image for a REMOVE.
func (f *Filter) Match(r changelog.Record) bool {
	img := r.New
	switch r.Event.String() {
	case "INSERT":
		if !f.events[0] {
			return false
		}
	case "MODIFY":
		if !f.events[1] {
			return false
		}
	case "REMOVE":
		if !f.events[2] {
			return false
		}
		img = r.Old
	}
	if f.cond == nil {
		return true
	}
	if img == nil {
		// NB: a log without the image cannot be matched; a subscription's
		// retention asks for both images, so this is a KEYS_ONLY record
		// written before it existed. Matching its keys is the best answer
		// (sort-key filters such as the outbox's still hold).
		img = r.Keys
	}
	ok, err := f.cond.Eval(img)
	return err == nil && ok
}
