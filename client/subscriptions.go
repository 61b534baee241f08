package client

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// CreateSubscriptionRequest subscribes a table's changes to an HTTPS
// endpoint. Env is the tenant environment ("" means the caller's own; for
// the operator, live). Filter is a FilterExpression evaluated on the new
// image (the old one for REMOVE), with FilterNames and FilterValues (in
// DynamoDB JSON: {":o": {"S": "OUTBOX#"}}) as its placeholders. Events
// is a subset of INSERT, MODIFY, REMOVE (empty: all).
type CreateSubscriptionRequest struct {
	Env                string            `json:"env,omitempty"`
	Table              string            `json:"table"`
	URL                string            `json:"url"`
	Filter             string            `json:"filter,omitempty"`
	FilterNames        map[string]string `json:"filter_names,omitempty"`
	FilterValues       json.RawMessage   `json:"filter_values,omitempty"`
	Events             []string          `json:"events,omitempty"`
	BatchSize          int               `json:"batch_size,omitempty"`
	RetryPeriodSeconds int64             `json:"retry_period_seconds,omitempty"`
}

// SubscriptionSecret describes a signing secret in force (never the
// secret itself). Expires is set on a rotated-out secret still signing
// during its overlap.
type SubscriptionSecret struct {
	ID      string     `json:"id"`
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"`
}

// Subscription is a webhook subscription. State is active, paused or
// disabled (StateReason says why). Cursor is the delivery position;
// FailingSince is set while the batch at the cursor is being retried.
// Secret is set only in the answers of create and rotate-secret.
type Subscription struct {
	ID                 string               `json:"id"`
	TenantID           string               `json:"tenant_id"`
	Env                string               `json:"env"`
	Table              string               `json:"table"`
	URL                string               `json:"url"`
	Filter             string               `json:"filter,omitempty"`
	FilterNames        map[string]string    `json:"filter_names,omitempty"`
	FilterValues       json.RawMessage      `json:"filter_values,omitempty"`
	Events             []string             `json:"events"`
	BatchSize          int                  `json:"batch_size"`
	RetryPeriodSeconds int64                `json:"retry_period_seconds"`
	State              string               `json:"state"`
	StateReason        string               `json:"state_reason,omitempty"`
	Secrets            []SubscriptionSecret `json:"secrets"`
	Cursor             string               `json:"cursor"`
	FailingSince       *time.Time           `json:"failing_since,omitempty"`
	DeadLetters        int                  `json:"dead_letters"`
	Created            time.Time            `json:"created"`
	Updated            time.Time            `json:"updated"`
	Secret             string               `json:"secret,omitempty"`
}

// SubscriptionList is the answer of Subscriptions.
type SubscriptionList struct {
	Subscriptions []Subscription `json:"subscriptions"`
}

// Delivery is one delivery attempt. Status is the endpoint's HTTP status
// (0 when it did not answer); Outcome is delivered, retry,
// dead-lettered, disabled, skipped, redriven or redrive-failed.
type Delivery struct {
	Time          time.Time `json:"time"`
	Status        int       `json:"status"`
	LatencyMS     float64   `json:"latency_ms"`
	Records       int       `json:"records"`
	Outcome       string    `json:"outcome"`
	Error         string    `json:"error,omitempty"`
	FirstSequence string    `json:"first_sequence,omitempty"`
	LastSequence  string    `json:"last_sequence,omitempty"`
}

// DeliveryList is the answer of SubscriptionDeliveries.
type DeliveryList struct {
	Deliveries []Delivery `json:"deliveries"`
}

// DeadLetter is a batch that was not delivered: its records as they
// were sent (DynamoDB Streams records in Lambda's shape).
type DeadLetter struct {
	N       uint64            `json:"n"`
	Time    time.Time         `json:"time"`
	Status  int               `json:"status"`
	Error   string            `json:"error,omitempty"`
	Records []json.RawMessage `json:"records"`
}

// DeadLetterList is the answer of SubscriptionDeadLetters.
type DeadLetterList struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
}

func subscriptionPath(tenant, id string) string {
	p := tenantPath(tenant) + "/subscriptions"
	if id != "" {
		p += "/" + url.PathEscape(id)
	}
	return p
}

// CreateSubscription creates a subscription; the answer's Secret is the
// signing secret, shown only here.
func (c *Client) CreateSubscription(ctx context.Context, tenant string, in CreateSubscriptionRequest) (Subscription, error) {
	var out Subscription
	return out, c.do(ctx, "POST", subscriptionPath(tenant, ""), c.Key, in, &out)
}

// Subscriptions lists a tenant's subscriptions (an admin key: those of
// its environment).
func (c *Client) Subscriptions(ctx context.Context, tenant string) ([]Subscription, error) {
	var out SubscriptionList
	return out.Subscriptions, c.do(ctx, "GET", subscriptionPath(tenant, ""), c.Key, nil, &out)
}

// Subscription returns one subscription.
func (c *Client) Subscription(ctx context.Context, tenant, id string) (Subscription, error) {
	var out Subscription
	return out, c.do(ctx, "GET", subscriptionPath(tenant, id), c.Key, nil, &out)
}

// PauseSubscription stops deliveries (the cursor stays).
func (c *Client) PauseSubscription(ctx context.Context, tenant, id string) (Subscription, error) {
	var out Subscription
	return out, c.do(ctx, "POST", subscriptionPath(tenant, id)+"/pause", c.Key, nil, &out)
}

// ResumeSubscription restarts a paused or disabled subscription.
func (c *Client) ResumeSubscription(ctx context.Context, tenant, id string) (Subscription, error) {
	var out Subscription
	return out, c.do(ctx, "POST", subscriptionPath(tenant, id)+"/resume", c.Key, nil, &out)
}

// DeleteSubscription deletes a subscription with its state.
func (c *Client) DeleteSubscription(ctx context.Context, tenant, id string) error {
	return c.do(ctx, "DELETE", subscriptionPath(tenant, id), c.Key, nil, nil)
}

// ReplaySubscription moves the cursor to from: an RFC 3339 time, a
// record's SequenceNumber, or a cursor.
func (c *Client) ReplaySubscription(ctx context.Context, tenant, id, from string) (Subscription, error) {
	var out Subscription
	return out, c.do(ctx, "POST", subscriptionPath(tenant, id)+"/replay", c.Key, map[string]string{"from": from}, &out)
}

// SubscriptionDeliveries returns the most recent delivery attempts, newest
// first (limit 0: all kept, at most 200).
func (c *Client) SubscriptionDeliveries(ctx context.Context, tenant, id string, limit int) ([]Delivery, error) {
	var out DeliveryList
	return out.Deliveries, c.do(ctx, "GET", subscriptionPath(tenant, id)+"/deliveries"+limitQuery(limit), c.Key, nil, &out)
}

// SubscriptionDeadLetters returns the dead-letter list, oldest first.
func (c *Client) SubscriptionDeadLetters(ctx context.Context, tenant, id string, limit int) ([]DeadLetter, error) {
	var out DeadLetterList
	return out.DeadLetters, c.do(ctx, "GET", subscriptionPath(tenant, id)+"/dead-letters"+limitQuery(limit), c.Key, nil, &out)
}

// ReplayDeadLetters delivers the dead-letter list again, oldest first.
func (c *Client) ReplayDeadLetters(ctx context.Context, tenant, id string) (Subscription, error) {
	var out Subscription
	return out, c.do(ctx, "POST", subscriptionPath(tenant, id)+"/dead-letters/replay", c.Key, nil, &out)
}

// RotateSubscriptionSecret issues a new signing secret (in the answer's
// Secret); the previous one keeps signing beside it for overlap (0: 24 h).
func (c *Client) RotateSubscriptionSecret(ctx context.Context, tenant, id string, overlap time.Duration) (Subscription, error) {
	var out Subscription
	in := map[string]int64{"overlap_seconds": int64(overlap / time.Second)}
	return out, c.do(ctx, "POST", subscriptionPath(tenant, id)+"/rotate-secret", c.Key, in, &out)
}

func limitQuery(n int) string {
	if n <= 0 {
		return ""
	}
	return "?limit=" + strconv.Itoa(n)
}

// VerifyWebhook reports whether header, a delivery's Tenantdb-Signature
// ("t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>", one v1
// per secret in force), signs body with secret, made within tolerance of
// now (0: any age). Receivers deduplicate deliveries by eventID.
func VerifyWebhook(header string, body []byte, secret string, now time.Time, tolerance time.Duration) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); tolerance > 0 && (d > tolerance || d < -tolerance) {
		return false
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "."))
	m.Write(body)
	want := hex.EncodeToString(m.Sum(nil))
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}
