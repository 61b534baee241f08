package schema

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// Tags: the rules every backend applies to a table's tags. Keys starting
// with "tenantdb:" are reserved: they are set at CreateTable (isolation)
// and cannot be added or removed later. Who may tag a table is decided by
// resolve (CheckManage), not here.

// MaxTags is DynamoDB's limit of tags per resource. The reserved
// tenantdb: tags do not count against it: they are the server's, not the
// user's.
const MaxTags = 50

// userTags returns how many of tags are the user's (not reserved).
func userTags(tags []wire.Tag) int {
	n := 0
	for _, tg := range tags {
		if !strings.HasPrefix(tg.Key, "tenantdb:") {
			n++
		}
	}
	return n
}

// CheckTagResource validates a TagResource request's tags.
func CheckTagResource(in *wire.TagResourceInput) error {
	if len(in.Tags) == 0 {
		return apierr.Validationf("1 validation error detected: Value '[]' at 'tags' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	return CheckTags(in.Tags, false)
}

// CheckUntagResource validates an UntagResource request's keys.
func CheckUntagResource(in *wire.UntagResourceInput) error {
	if len(in.TagKeys) == 0 {
		return apierr.Validationf("1 validation error detected: Value '[]' at 'tagKeys' failed to satisfy constraint: Member must have length greater than or equal to 1")
	}
	for _, k := range in.TagKeys {
		if strings.HasPrefix(k, "tenantdb:") {
			return apierr.Validationf("One or more parameter values were invalid: Tag key %s is reserved: tenantdb: tags are set only at CreateTable", k)
		}
	}
	return nil
}

// CheckTaggableARN refuses an index's or a stream's ARN: only a table is a
// taggable resource (our wording; DynamoDB refuses tags on indexes).
func CheckTaggableARN(arn string) error {
	if i := strings.Index(arn, ":table/"); i >= 0 && strings.Contains(arn[i+len(":table/"):], "/") {
		return apierr.Validationf("Invalid TableArn: Invalid ResourceArn provided as input %s", arn)
	}
	return nil
}

// SetTags adds tags to t, replacing the values of keys it has.
// Errors: LimitExceededException past MaxTags.
func (t *Table) SetTags(tags []wire.Tag) error {
	for _, tg := range tags {
		replaced := false
		for i := range t.Tags {
			if t.Tags[i].Key == tg.Key {
				t.Tags[i].Value = tg.Value
				replaced = true
			}
		}
		if !replaced {
			t.Tags = append(t.Tags, tg)
		}
	}
	if userTags(t.Tags) > MaxTags {
		return apierr.New(apierr.LimitExceeded, "The number of tags exceeds the limit of %d", MaxTags)
	}
	return nil
}

// RemoveTags removes the tags with the given keys (absent keys are
// ignored).
func (t *Table) RemoveTags(keys []string) {
	t.Tags = slices.DeleteFunc(t.Tags, func(tg wire.Tag) bool { return slices.Contains(keys, tg.Key) })
}

// CheckTags validates tags as DynamoDB does. atCreate allows the reserved tenantdb:* keys,
// which choose isolation and are fixed for the table's life.
func CheckTags(tags []wire.Tag, atCreate bool) error {
	if userTags(tags) > MaxTags {
		return apierr.New(apierr.LimitExceeded, "The number of tags exceeds the limit of %d", MaxTags)
	}
	seen := map[string]bool{}
	for i, tg := range tags {
		field := fmt.Sprintf("tags.%d.member", i+1)
		// NB: lengths count Unicode characters, not bytes.
		switch n := utf8.RuneCountInString(tg.Key); {
		case tg.KeyNull():
			return apierr.Validationf("1 validation error detected: Value null at '%s.key' failed to satisfy constraint: Member must not be null", field)
		case n < 1 || n > 128:
			return apierr.Validationf("1 validation error detected: Value '%s' at '%s.key' failed to satisfy constraint: Member must have length between 1 and 128", tg.Key, field)
		case !tagChars(tg.Key) && !strings.HasPrefix(tg.Key, "tenantdb:"):
			return apierr.Validationf("1 validation error detected: Value '%s' at '%s.key' failed to satisfy constraint: Member must satisfy regular expression pattern: %s", tg.Key, field, tagPattern)
		}
		switch {
		case tg.ValueNull():
			return apierr.Validationf("1 validation error detected: Value null at '%s.value' failed to satisfy constraint: Member must not be null", field)
		case utf8.RuneCountInString(tg.Value) > 256:
			return apierr.Validationf("1 validation error detected: Value '%s' at '%s.value' failed to satisfy constraint: Member must have length less than or equal to 256", tg.Value, field)
		case !tagChars(tg.Value) && !strings.HasPrefix(tg.Key, "tenantdb:"):
			return apierr.Validationf("1 validation error detected: Value '%s' at '%s.value' failed to satisfy constraint: Member must satisfy regular expression pattern: %s", tg.Value, field, tagPattern)
		}
		if strings.HasPrefix(tg.Key, "aws:") {
			return apierr.Validationf("One or more parameter values were invalid: Tag keys starting with aws: are reserved")
		}
		if !atCreate && strings.HasPrefix(tg.Key, "tenantdb:") {
			return apierr.Validationf("One or more parameter values were invalid: Tag key %s is reserved: tenantdb: tags are set only at CreateTable", tg.Key)
		}
		if seen[tg.Key] {
			return apierr.Validationf("One or more parameter values were invalid: Duplicate tag key: %s", tg.Key)
		}
		seen[tg.Key] = true
	}
	return nil
}

// tagPattern is the characters AWS allows in tag keys and values: letters,
// white space, digits and _ . : / = + - @. Our reserved tenantdb: tags
// (a leading-key pattern, for one) are exempt.
//
// NB: DynamoDB documents the characters but not the wording of its
// refusal; the constraint message is ours.
const tagPattern = `^([\p{L}\p{Z}\p{N}_.:/=+\-@]*)$`

func tagChars(s string) bool {
	for _, r := range s {
		if !(unicode.IsLetter(r) || unicode.In(r, unicode.Z) || unicode.IsNumber(r) || strings.ContainsRune("_.:/=+-@", r)) {
			return false
		}
	}
	return true
}
