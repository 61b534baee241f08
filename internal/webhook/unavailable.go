package webhook

import (
	"context"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Unavailable serves the admin API's subscription routes where the server
// cannot deliver webhooks, refusing each with reason.
type Unavailable string

func (u Unavailable) err() error {
	return apierr.New(apierr.Validation, "webhook subscriptions are not available: %s", string(u))
}

// Create refuses.
func (u Unavailable) Create(context.Context, tenancy.Scope, CreateInput) (View, error) {
	return View{}, u.err()
}

// List refuses.
func (u Unavailable) List(context.Context, tenancy.Scope) ([]View, error) { return nil, u.err() }

// Get refuses.
func (u Unavailable) Get(context.Context, tenancy.Scope, string) (View, error) {
	return View{}, u.err()
}

// Pause refuses.
func (u Unavailable) Pause(context.Context, tenancy.Scope, string) (View, error) {
	return View{}, u.err()
}

// Resume refuses.
func (u Unavailable) Resume(context.Context, tenancy.Scope, string) (View, error) {
	return View{}, u.err()
}

// Delete refuses.
func (u Unavailable) Delete(context.Context, tenancy.Scope, string) error { return u.err() }

// Replay refuses.
func (u Unavailable) Replay(context.Context, tenancy.Scope, string, string) (View, error) {
	return View{}, u.err()
}

// Deliveries refuses.
func (u Unavailable) Deliveries(context.Context, tenancy.Scope, string, int) ([]Attempt, error) {
	return nil, u.err()
}

// DeadLetters refuses.
func (u Unavailable) DeadLetters(context.Context, tenancy.Scope, string, int) ([]DeadLetter, error) {
	return nil, u.err()
}

// RedriveDeadLetters refuses.
func (u Unavailable) RedriveDeadLetters(context.Context, tenancy.Scope, string) (View, error) {
	return View{}, u.err()
}

// RotateSecret refuses.
func (u Unavailable) RotateSecret(context.Context, tenancy.Scope, string, time.Duration) (View, error) {
	return View{}, u.err()
}
