package remote

import (
	"context"
	"testing"

	"github.com/tenantdb/tenantdb/internal/engine"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
)

// noTables is a resolver catalog without definitions.
type noTables struct{}

func (noTables) LoadShared(context.Context) ([]*schema.Table, error)        { return nil, nil }
func (noTables) LoadOwned(context.Context, []byte) ([]*schema.Table, error) { return nil, nil }

// FuzzParseBackupARN: a backup ARN is client input. Parsing never panics;
// whatever it accepts names a table and a backup id that format back to
// the same ARN, and the id's collection is never a table's (bit 63).
func FuzzParseBackupARN(f *testing.F) {
	res, err := resolve.New(context.Background(), noTables{}, resolve.Options{Region: "us-east-1", Account: "000000000000"})
	if err != nil {
		f.Fatal(err)
	}
	b := &Backend{res: res}
	f.Add("arn:aws:dynamodb:us-east-1:000000000000:table/Music/backup/01489602797149-73d8d5bc")
	f.Add("arn:aws:dynamodb:us-east-1:000000000000:table//backup/")
	f.Add("arn:aws:dynamodb:eu-west-1:000000000000:table/Music/backup/01489602797149-73d8d5bc")
	f.Add("arn:aws:dynamodb:us-east-1:000000000000:table/a/backup/x/backup/01489602797149-73d8d5bc")
	f.Fuzz(func(t *testing.T, arn string) {
		table, id, err := b.parseBackupARN(arn)
		if err != nil {
			return
		}
		if got := b.backupARN(table, id); got != arn {
			t.Errorf("parseBackupARN(%q) = %q, %q", arn, table, id)
		}
		if !engine.ValidBackupID(id) || backupBid(id)>>63 != 1 {
			t.Errorf("parseBackupARN(%q) accepted id %q (collection %x)", arn, id, backupBid(id))
		}
	})
}
