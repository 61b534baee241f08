package catalog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/catalog"
	"github.com/tenantdb/tenantdb/internal/enginekv"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// Two catalogs over one DynamoDB-API engine, as two gateways have: their
// races are decided by the engine's conditional writes.
func twoCatalogs(t *testing.T) (*catalog.Catalog, *catalog.Catalog) {
	t.Helper()
	table, client := harness.EngineTable(t)
	o := catalog.Options{MaxStale: time.Second}
	return catalog.Open(enginekv.New(client(), table, nil), o), catalog.Open(enginekv.New(client(), table, nil), o)
}

// TestEngineInviteRace: an invitation accepted through two gateways at
// once makes one membership; the other acceptance is refused.
func TestEngineInviteRace(t *testing.T) {
	c1, c2 := twoCatalogs(t)
	ctx := context.Background()
	tn, err := c1.CreateTenant(ctx, catalog.NewTenant{Name: "invited"})
	if err != nil {
		t.Fatal(err)
	}
	s := tenancy.SystemScope(tn.ID, "test")
	for round := range 5 {
		tok, err := c1.CreateInvite(ctx, s, catalog.Invite{Role: tenancy.RoleApp, Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			c := c1
			if i%2 == 1 {
				c = c2
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = c.AcceptInvite(ctx, tok, "user-"+string(rune('a'+i)))
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else if !apierr.Is(err, apierr.NotFound) {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: the token was accepted %d times", round, ok)
		}
	}
}

// TestEngineKeyVersusDeletion: a key issued through one gateway while
// another marks the tenant deleting is either refused or issued before
// the mark, never stored for a deleting tenant afterwards.
func TestEngineKeyVersusDeletion(t *testing.T) {
	c1, c2 := twoCatalogs(t)
	ctx := context.Background()
	for round := range 5 {
		tn, err := c1.CreateTenant(ctx, catalog.NewTenant{Name: fmt.Sprint("racing ", round)})
		if err != nil {
			t.Fatal(err)
		}
		s := tenancy.SystemScope(tn.ID, "test")
		var wg sync.WaitGroup
		wg.Add(2)
		var putErr error
		go func() {
			defer wg.Done()
			putErr = c2.PutCredential(ctx, catalog.Credential{Tenant: tn.ID, ID: "k", AccessKeyID: "AK", Role: tenancy.RoleApp,
				Env: "live", Sealed: []byte("sealed"), Created: time.Now()}, nil)
		}()
		go func() {
			defer wg.Done()
			if _, err := c1.SetStatus(ctx, s, catalog.Deleting); err != nil {
				t.Error(err)
			}
		}()
		wg.Wait()
		if putErr != nil && !apierr.Is(putErr, apierr.Validation) {
			t.Fatalf("round %d: %v", round, putErr)
		}
		// NB: both orders are serializable; what must not happen is a key
		// written after the mark, which PutCredential's condition on the
		// tenant record it read forbids (a stale read fails the write).
		creds, err := c2.Credentials(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if putErr == nil && len(creds) != 1 || putErr != nil && len(creds) != 0 {
			t.Fatalf("round %d: PutCredential said %v, the tenant has %d credentials", round, putErr, len(creds))
		}
	}
}
