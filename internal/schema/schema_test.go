package schema

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

func TestValidateTableName(t *testing.T) {
	for _, tc := range []struct {
		name, err string
	}{
		{"abc", ""},
		{"Orders_2024.v-1", ""},
		{"ab", "length between 3 and 255"},
		{strings.Repeat("a", 256), "length between 3 and 255"},
		{"bad name", "regular expression pattern"},
		{"t#1", "regular expression pattern"},
	} {
		err := ValidateTableName(tc.name)
		if tc.err == "" {
			if err != nil {
				t.Errorf("ValidateTableName(%q) = %v, want nil", tc.name, err)
			}
			continue
		}
		if !apierr.Is(err, apierr.Validation) || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "'tableName'") {
			t.Errorf("ValidateTableName(%q) = %v, want a ValidationException about tableName containing %q", tc.name, err, tc.err)
		}
	}
	if err := ValidateIndexName("x", "globalSecondaryIndexes.1.member.indexName"); err == nil || !strings.Contains(err.Error(), "globalSecondaryIndexes.1.member.indexName") {
		t.Errorf("ValidateIndexName names its field: %v", err)
	}
}

func TestValidateKey(t *testing.T) {
	tb := &Table{
		Hash:    KeyAttr{Name: "pk", Type: attr.S},
		Range:   KeyAttr{Name: "sk", Type: attr.N},
		Indexes: []*Index{{Name: "g", Hash: KeyAttr{Name: "gpk", Type: attr.S}}},
	}
	n := func(s string) attr.Value { v, _ := attr.ParseNumber(s); return attr.Value{Type: attr.N, N: v} }
	for _, tc := range []struct {
		what string
		err  error
		want string
	}{
		{"full key", tb.ValidateKey(attr.Item{"pk": attr.Str("a"), "sk": n("1")}), ""},
		{"missing sort key", tb.ValidateKey(attr.Item{"pk": attr.Str("a")}), "does not match the schema"},
		{"wrong type", tb.ValidateKey(attr.Item{"pk": attr.Str("a"), "sk": attr.Str("1")}), "does not match the schema"},
		{"empty partition key", tb.ValidateKey(attr.Item{"pk": attr.Str(""), "sk": n("1")}), "cannot contain an empty string"},
		{"long partition key", tb.ValidateKey(attr.Item{"pk": attr.Str(strings.Repeat("a", MaxHashKeyBytes+1)), "sk": n("1")}), "Size of hashkey"},
		{"item", tb.ValidateItemKeys(attr.Item{"pk": attr.Str("a"), "sk": n("1"), "x": attr.Str("")}), ""},
		{"item without sort key", tb.ValidateItemKeys(attr.Item{"pk": attr.Str("a")}), "Missing the key sk"},
		{"item with wrong GSI key type", tb.ValidateItemKeys(attr.Item{"pk": attr.Str("a"), "sk": n("1"), "gpk": n("2")}), "Type mismatch for Index Key gpk"},
		{"item with empty GSI key", tb.ValidateItemKeys(attr.Item{"pk": attr.Str("a"), "sk": n("1"), "gpk": attr.Str("")}), "IndexName: g"},
	} {
		if tc.want == "" {
			if tc.err != nil {
				t.Errorf("%s: %v, want nil", tc.what, tc.err)
			}
			continue
		}
		if !apierr.Is(tc.err, apierr.Validation) || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want a ValidationException containing %q", tc.what, tc.err, tc.want)
		}
	}
	if k := tb.KeyOf(attr.Item{"pk": attr.Str("a"), "sk": n("1"), "x": attr.Str("y")}); len(k) != 2 {
		t.Errorf("KeyOf kept %v, want the two key attributes", k)
	}
}

// The persisted form round-trips, and Clone shares nothing mutable.
func TestEncodeDecodeClone(t *testing.T) {
	tb := &Table{ID: 7, Name: "T", Owner: tenancy.NewTenantID(), OwnerEnv: "live",
		Hash: KeyAttr{Name: "pk", Type: attr.S}, Isolation: tenancy.LeadingKeys, LeadingKeyPattern: "T#{tenant}*",
		Indexes: []*Index{{No: 1, Name: "g", Hash: KeyAttr{Name: "g", Type: attr.S}, ProjectionType: "INCLUDE", NonKey: []string{"a"}}}}
	v, err := Encode(tb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != 7 || got.Owner != tb.Owner || got.Isolation != tenancy.LeadingKeys || got.LeadingKeyPattern != tb.LeadingKeyPattern || got.Index("g") == nil || got.Index("g").NonKey[0] != "a" {
		t.Errorf("round trip: %+v, want %+v", got, tb)
	}
	if _, err := Decode([]byte("{")); !apierr.Is(err, apierr.Internal) {
		t.Errorf("Decode of a corrupt definition: %v, want Internal", err)
	}
	c := tb.Clone()
	c.Indexes[0].NonKey[0] = "changed"
	if tb.Indexes[0].NonKey[0] != "a" {
		t.Error("Clone shares index projections with the original")
	}
	if !tb.Projects(tb.Indexes[0], "a") || tb.Projects(tb.Indexes[0], "b") || !tb.Projects(tb.Indexes[0], "pk") {
		t.Error("Projects: INCLUDE projects its non-key attributes and the keys only")
	}
}

// TestTagLimitIgnoresReserved: the reserved tenantdb: tags (isolation
// mode, leading-key pattern) do not use up the user's 50 tags.
func TestTagLimitIgnoresReserved(t *testing.T) {
	reserved := []wire.Tag{{Key: "tenantdb:isolation", Value: "leading-keys"}, {Key: "tenantdb:leading-key-pattern", Value: "T#{tenant}|*"}}
	var user []wire.Tag
	for i := 0; i < MaxTags; i++ {
		user = append(user, wire.Tag{Key: fmt.Sprintf("k%d", i), Value: "v"})
	}
	if err := CheckTags(append(append([]wire.Tag{}, reserved...), user...), true); err != nil {
		t.Fatalf("CreateTable with 2 reserved and %d user tags: %v", MaxTags, err)
	}
	tbl := &Table{Tags: append([]wire.Tag{}, reserved...)}
	if err := tbl.SetTags(user); err != nil {
		t.Fatalf("TagResource up to %d user tags on a table with reserved tags: %v", MaxTags, err)
	}
	err := tbl.SetTags([]wire.Tag{{Key: "one-more", Value: "v"}})
	if apierr.KindOf(err) != apierr.LimitExceeded {
		t.Fatalf("tag %d: %v, want LimitExceededException", MaxTags+1, err)
	}
}
