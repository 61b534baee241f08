package keyspace

import (
	"encoding/binary"

	"github.com/tenantdb/tenantdb/internal/tenancy"
)

// Keys of webhook subscriptions (package webhook). Everything of a
// subscription lives in its tenant's range, so deleting the tenant deletes
// it; the system registry only lets the server find subscriptions at
// start without scanning every tenant:
//
//	t<tenant> w s <id>              the subscription
//	t<tenant> w c <id>              its delivery cursor
//	t<tenant> w d <id> 0x00 <n:8>   its dead-letter list, oldest first
//	t<tenant> w d <id> 0x00 <n:8> <p:2>  part p of a dead letter too large for one record
//	t<tenant> w a <id> 0x00 <n:8>   its recent delivery attempts, oldest first
//	t<tenant> w k <id>              how many dead letters it holds
//	t<tenant> w n                   how many subscriptions the tenant has
//	s whk/ <tenant:16> <id>         the tenant has subscription id

func webhook(t tenancy.TenantID, kind byte, id string) []byte {
	return append(append(Tenant(t), subWebhook, kind), id...)
}

// WebhookSubscription returns the key of subscription id of tenant t.
func WebhookSubscription(t tenancy.TenantID, id string) []byte { return webhook(t, whSubscription, id) }

// WebhookSubscriptions returns the range of all subscriptions of tenant t.
func WebhookSubscriptions(t tenancy.TenantID) (lo, hi []byte) {
	return prefixRange(webhook(t, whSubscription, ""))
}

// WebhookCursor returns the key of subscription id's delivery cursor.
func WebhookCursor(t tenancy.TenantID, id string) []byte { return webhook(t, whCursor, id) }

// WebhookDeadLetter returns the key of dead letter n of subscription id.
func WebhookDeadLetter(t tenancy.TenantID, id string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(webhook(t, whDead, id), 0), n)
}

// WebhookDeadLetterPart returns the key of part p of dead letter n of
// subscription id (inside WebhookDeadLetters, right after the letter).
func WebhookDeadLetterPart(t tenancy.TenantID, id string, n uint64, p uint16) []byte {
	return binary.BigEndian.AppendUint16(WebhookDeadLetter(t, id, n), p)
}

// WebhookDeadLetterParts returns the range of dead letter n's parts.
func WebhookDeadLetterParts(t tenancy.TenantID, id string, n uint64) (lo, hi []byte) {
	return WebhookDeadLetterPart(t, id, n, 0), WebhookDeadLetterPart(t, id, n, 0xffff)
}

// WebhookDeadLetters returns the range of subscription id's dead letters.
func WebhookDeadLetters(t tenancy.TenantID, id string) (lo, hi []byte) {
	return prefixRange(append(webhook(t, whDead, id), 0))
}

// WebhookAttempt returns the key of delivery attempt n of subscription id.
func WebhookAttempt(t tenancy.TenantID, id string, n uint64) []byte {
	return binary.BigEndian.AppendUint64(append(webhook(t, whAttempt, id), 0), n)
}

// WebhookAttempts returns the range of subscription id's attempts.
func WebhookAttempts(t tenancy.TenantID, id string) (lo, hi []byte) {
	return prefixRange(append(webhook(t, whAttempt, id), 0))
}

// WebhookDeadCount returns the key of the count of subscription id's
// dead letters (written in the batch that adds or removes one).
func WebhookDeadCount(t tenancy.TenantID, id string) []byte { return webhook(t, whDeadCount, id) }

// WebhookCount returns the key of the count of tenant t's subscriptions
// (written in the batch that creates or deletes one).
func WebhookCount(t tenancy.TenantID) []byte { return webhook(t, whCount, "") }

// WebhookRegistry returns the system key saying tenant t has subscription
// id.
func WebhookRegistry(t tenancy.TenantID, id string) []byte {
	return append(append(System(SysWebhooks), t[:]...), id...)
}

// WebhookRegistryRange returns the range of the whole registry.
func WebhookRegistryRange() (lo, hi []byte) { return prefixRange(System(SysWebhooks)) }

// WebhookRegistryEntry returns the tenant and subscription id of registry
// key k; ok is false for a key of another shape.
func WebhookRegistryEntry(k []byte) (t tenancy.TenantID, id string, ok bool) {
	p := System(SysWebhooks)
	if len(k) <= len(p)+len(t) || string(k[:len(p)]) != string(p) {
		return t, "", false
	}
	copy(t[:], k[len(p):])
	return t, string(k[len(p)+len(t):]), true
}
