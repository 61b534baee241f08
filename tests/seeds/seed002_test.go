package seeds

// Seed 002 ("DynamoDB Single-Table Design for Multi-Tenant Platform"): its
// CloudFormation table, a data set following every key pattern of the
// document, and every access pattern it lists.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/cfn"
	"github.com/tenantdb/tenantdb/tests/harness"
)

type item = map[string]types.AttributeValue

// attrs builds an item from alternating names and values: a string is an
// S (an empty one is left out: sparse attributes), an int an N, a map a
// M of strings.
func attrs(kv ...any) item {
	it := item{}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		switch v := kv[i+1].(type) {
		case string:
			if v != "" {
				it[name] = &types.AttributeValueMemberS{Value: v}
			}
		case int:
			it[name] = &types.AttributeValueMemberN{Value: strconv.Itoa(v)}
		case bool:
			it[name] = &types.AttributeValueMemberBOOL{Value: v}
		case map[string]string:
			m := item{}
			for k, s := range v {
				m[k] = &types.AttributeValueMemberS{Value: s}
			}
			it[name] = &types.AttributeValueMemberM{Value: m}
		default:
			panic(fmt.Sprintf("attrs: %T", v))
		}
	}
	return it
}

// appData is one tenant's data set in app_data, built with the key
// patterns of seed 002's "Key Patterns by Entity".
type appData struct {
	items []item
}

func (d *appData) put(pk, sk string, kv ...any) {
	d.items = append(d.items, attrs(append([]any{"PK", pk, "SK", sk}, kv...)...))
}

// 1. Accounts, with their addresses and technical users.
func (d *appData) account(id, name string) {
	d.put("ACCOUNT#"+id, "METADATA", "GSI1PK", "ENTITY#ACCOUNT", "GSI1SK", "ACCOUNT#"+id,
		"id", id, "name", name, "status", "active", "createdAt", "2024-01-02T08:00:00.000Z")
}

func (d *appData) address(acc, id, city string) {
	d.put("ACCOUNT#"+acc, "ADDRESS#"+id, "id", id, "street", "1 Main St", "city", city, "country", "DE")
}

func (d *appData) techUser(acc, id, email string) {
	d.put("ACCOUNT#"+acc, "TECH_USER#"+id, "id", id, "email", email, "firstName", "Tech", "lastName", "Contact")
}

// 2. Enterprises, with their products and services.
func (d *appData) enterprise(id, name string) {
	d.put("ENTERPRISE#"+id, "METADATA", "GSI1PK", "ENTITY#ENTERPRISE", "GSI1SK", "ENTERPRISE#"+id, "id", id, "name", name)
}

func (d *appData) enterpriseProduct(ent, prod string) {
	d.put("ENTERPRISE#"+ent, "PRODUCT#"+prod, "productId", prod, "assignedAt", "2024-02-01")
}

func (d *appData) enterpriseService(ent, svc string) {
	d.put("ENTERPRISE#"+ent, "SERVICE#"+svc, "serviceId", svc, "assignedAt", "2024-02-01")
}

// 3. Licenses.
func (d *appData) license(acc, id, ent, status, endDate string, seats int) {
	d.put("ACCOUNT#"+acc, "LICENSE#"+id, "GSI1PK", "ENTITY#LICENSE", "GSI1SK", "LICENSE#"+id,
		"GSI2PK", "ENTERPRISE#"+ent, "GSI2SK", "LICENSE#"+id,
		"GSI3PK", "LICENSE#STATUS#"+status, "GSI3SK", endDate+"#"+id,
		"id", id, "accountId", acc, "enterpriseId", ent, "status", status, "endDate", endDate, "seats", seats)
}

// 4. Workstreams and their tools.
func (d *appData) workstream(acc, id, ent, name string) {
	d.put("ACCOUNT#"+acc, "WORKSTREAM#"+id, "GSI1PK", "ENTITY#WORKSTREAM", "GSI1SK", "WORKSTREAM#"+id,
		"GSI2PK", "ENTERPRISE#"+ent, "GSI2SK", "WORKSTREAM#"+id, "id", id, "name", name)
}

func (d *appData) tool(ws, id, name string) {
	d.put("WORKSTREAM#"+ws, "TOOL#"+id, "id", id, "name", name)
}

// 5. Users and their workstream assignments.
func (d *appData) user(id, acc, status, endDate, email string) {
	d.put("USER#"+id, "METADATA", "GSI1PK", "ENTITY#USER", "GSI1SK", "USER#"+id,
		"GSI2PK", "ACCOUNT#"+acc+"#USERS", "GSI2SK", "USER#"+id,
		"GSI3PK", "USER#STATUS#"+status, "GSI3SK", endDate+"#"+id,
		"id", id, "accountId", acc, "email", email, "status", status, "endDate", endDate)
}

func (d *appData) userWorkstream(user, ws string) {
	d.put("USER#"+user, "WORKSTREAM#"+ws, "workstreamId", ws, "assignedAt", "2024-03-01")
}

// 6. Roles (GSI2 only when scoped to an account) and permissions.
func (d *appData) role(id, acc, name string) {
	gsi2pk, gsi2sk := "", ""
	if acc != "" {
		gsi2pk, gsi2sk = "ACCOUNT#"+acc+"#ROLES", "ROLE#"+id
	}
	d.put("ROLE#"+id, "METADATA", "GSI1PK", "ENTITY#ROLE", "GSI1SK", "ROLE#"+id, "GSI2PK", gsi2pk, "GSI2SK", gsi2sk, "id", id, "name", name)
}

func (d *appData) permission(role, menu string, write bool) {
	d.put("ROLE#"+role, "PERMISSION#"+menu, "menuKey", menu, "canRead", true, "canWrite", write)
}

// 7. Groups; 8. products and services.
func (d *appData) entity(kind, id, name string) {
	d.put(kind+"#"+id, "METADATA", "GSI1PK", "ENTITY#"+kind, "GSI1SK", kind+"#"+id, "id", id, "name", name)
}

// 9. Notification audit log: sentAt orders GSI2 and GSI3.
func (d *appData) notification(id, acc, accName, status, sentAt, subject string) {
	var ses, errMsg, skip string
	switch status {
	case "sent":
		ses = "0100018d-" + id
	case "failed":
		errMsg = "MessageRejected: Email address is not verified"
	case "skipped":
		skip = "recipient unsubscribed"
	}
	d.put("NOTIFICATION_AUDIT#"+id, "METADATA", "GSI1PK", "ENTITY#NOTIFICATION_AUDIT", "GSI1SK", "NOTIFICATION_AUDIT#"+id,
		"GSI2PK", "ACCOUNT#"+acc+"#NOTIFICATIONS", "GSI2SK", sentAt+"#"+id,
		"GSI3PK", "NOTIFICATION#STATUS#"+status, "GSI3SK", sentAt+"#"+id,
		"id", id, "notificationType", "LICENSE_EXPIRY", "recipientEmail", "ops@"+acc+".example",
		"recipientFirstName", "Olga", "recipientLastName", "Ops", "accountId", acc, "accountName", accName,
		"userId", "usr-01", "deliveryStatus", status, "sesMessageId", ses, "errorMessage", errMsg, "skipReason", skip,
		"senderEmail", "noreply@platform.example", "subject", subject, "sentAt", sentAt, "createdAt", sentAt,
		"metadata", map[string]string{"template": "license-expiry-v2", "locale": "en"})
}

// acmeData is the first tenant's data set: every entity of the document.
func acmeData() *appData {
	d := &appData{}
	for _, a := range [][2]string{{"acc-003", "Gamma Retail"}, {"acc-001", "Acme Logistics"}, {"acc-002", "Beta Health"}} {
		d.account(a[0], a[1])
	}
	d.address("acc-001", "addr-02", "Hamburg")
	d.address("acc-001", "addr-01", "Berlin")
	d.address("acc-002", "addr-03", "Munich")
	d.techUser("acc-001", "usr-tech-1", "it@acme.example")
	d.license("acc-001", "lic-001", "ent-01", "active", "2025-03-10", 50)
	d.license("acc-001", "lic-002", "ent-01", "active", "2025-03-31", 10)
	d.license("acc-001", "lic-003", "ent-02", "active", "2025-04-15", 5)
	d.license("acc-002", "lic-004", "ent-01", "expired", "2024-12-31", 20)
	d.license("acc-002", "lic-005", "ent-02", "active", "2025-02-20", 8)
	d.workstream("acc-001", "ws-01", "ent-01", "Onboarding")
	d.workstream("acc-001", "ws-02", "ent-02", "Billing")
	d.workstream("acc-002", "ws-03", "ent-01", "Clinical")
	d.tool("ws-01", "tool-slack", "Slack")
	d.tool("ws-01", "tool-jira", "Jira")
	d.tool("ws-03", "tool-figma", "Figma")
	d.user("usr-01", "acc-001", "active", "2025-12-31", "ann@acme.example")
	d.user("usr-02", "acc-001", "inactive", "2024-06-30", "bob@acme.example")
	d.user("usr-03", "acc-002", "inactive", "2024-01-15", "cem@beta.example")
	d.user("usr-04", "acc-001", "active", "2026-01-31", "dia@acme.example")
	d.userWorkstream("usr-01", "ws-02")
	d.userWorkstream("usr-01", "ws-01")
	d.userWorkstream("usr-03", "ws-03")
	d.role("role-admin", "", "Administrator")
	d.role("role-viewer", "acc-001", "Viewer")
	d.permission("role-admin", "users", true)
	d.permission("role-admin", "dashboard", true)
	d.permission("role-admin", "settings", true)
	d.permission("role-viewer", "dashboard", false)
	d.entity("GROUP", "grp-02", "Auditors")
	d.entity("GROUP", "grp-01", "Support")
	d.enterprise("ent-02", "Beta Group")
	d.enterprise("ent-01", "Acme Holding")
	d.enterpriseProduct("ent-01", "prod-02")
	d.enterpriseProduct("ent-01", "prod-01")
	d.enterpriseService("ent-01", "svc-01")
	d.enterpriseService("ent-02", "svc-02")
	d.entity("PRODUCT", "prod-01", "Fleet Tracker")
	d.entity("PRODUCT", "prod-02", "Route Planner")
	d.entity("SERVICE", "svc-01", "Onboarding Service")
	d.entity("SERVICE", "svc-02", "Premium Support")
	d.notification("na-001", "acc-001", "Acme Logistics", "sent", "2025-02-01T09:00:00.000Z", "Your license expires soon")
	d.notification("na-002", "acc-001", "Acme Logistics", "failed", "2025-02-03T12:30:00.000Z", "Your license expires soon")
	d.notification("na-003", "acc-002", "Beta Health", "sent", "2025-02-20T08:00:00.000Z", "Your license expires soon")
	d.notification("na-004", "acc-001", "Acme Logistics", "sent", "2025-02-05T17:45:00.000Z", "Your license expires soon")
	d.notification("na-005", "acc-001", "Acme Logistics", "skipped", "2025-02-16T00:00:00.000Z", "Your license expires soon")
	d.notification("na-006", "acc-002", "Beta Health", "failed", "2025-01-20T10:00:00.000Z", "Welcome")
	d.notification("na-007", "acc-001", "Acme Logistics", "sent", "2025-03-02T10:00:00.000Z", "Your license has expired")
	d.notification("na-008", "acc-002", "Beta Health", "sent", "2025-02-01T00:00:00.000Z", "Welcome")
	d.notification("na-009", "acc-001", "Acme Logistics", "sent", "2025-02-28T23:59:59.999Z", "Monthly report")
	return d
}

// bravoData is a second tenant's, smaller data set on the same shared
// table, reusing many of the first tenant's keys with other contents
// (usr-01 is inactive here, na-001 failed, lic-001 ends earlier).
func bravoData() *appData {
	d := &appData{}
	d.account("acc-001", "Bravo Corp")
	d.account("acc-900", "Bravo Labs")
	d.address("acc-001", "addr-01", "Vienna")
	d.license("acc-001", "lic-001", "ent-01", "active", "2025-03-05", 3)
	d.license("acc-900", "lic-900", "ent-01", "expired", "2023-01-01", 1)
	d.workstream("acc-001", "ws-01", "ent-01", "Research")
	d.tool("ws-01", "tool-jira", "Jira")
	d.user("usr-01", "acc-001", "inactive", "2024-02-02", "eve@bravo.example")
	d.userWorkstream("usr-01", "ws-01")
	d.role("role-admin", "", "Owner")
	d.permission("role-admin", "dashboard", true)
	d.entity("GROUP", "grp-01", "Everyone")
	d.enterprise("ent-01", "Bravo Holding")
	d.enterpriseProduct("ent-01", "prod-01")
	d.entity("PRODUCT", "prod-01", "Lab Notebook")
	d.entity("SERVICE", "svc-01", "Hosting")
	d.notification("na-001", "acc-001", "Bravo Corp", "failed", "2025-02-01T09:00:00.000Z", "Welcome")
	d.notification("na-900", "acc-001", "Bravo Corp", "sent", "2025-02-10T00:00:00.000Z", "Your license expires soon")
	return d
}

// accessPattern is one query of the document: on the table or an index,
// a key condition and its values, and the keys ("PK SK") each tenant's
// data set must return, in order.
type accessPattern struct {
	name        string
	index       string
	kce         string
	values      map[string]string
	acme, bravo []string
}

// now is the fixed "today" of pattern 5 (new Date() in the document).
var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// toISOString formats t as JavaScript's Date.prototype.toISOString.
func toISOString(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func na(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, "NOTIFICATION_AUDIT#"+id+" METADATA")
	}
	return out
}

func under(pk string, sks ...string) []string {
	var out []string
	for _, sk := range sks {
		out = append(out, pk+" "+sk)
	}
	return out
}

func metadata(prefix string, ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, prefix+id+" METADATA")
	}
	return out
}

// summaryPatterns are the 17 rows of the document's "Access Pattern
// Summary", with account acc-001, enterprise ent-01, role role-admin and
// user usr-01. NB: the summary writes begins_with(SK, ...) for the GSI2
// patterns, where the key attribute of GSI2 is GSI2SK (as pattern 4 of
// the code has it); a key condition on SK in a GSI2 query is invalid.
func summaryPatterns() []accessPattern {
	thirty := toISOString(now.AddDate(0, 0, 30)) // 2025-03-31T12:00:00.000Z
	return []accessPattern{
		{name: "all accounts", index: "GSI1", kce: "GSI1PK = :pk", values: map[string]string{":pk": "ENTITY#ACCOUNT"},
			acme:  metadata("ACCOUNT#", "acc-001", "acc-002", "acc-003"),
			bravo: metadata("ACCOUNT#", "acc-001", "acc-900")},
		{name: "all enterprises", index: "GSI1", kce: "GSI1PK = :pk", values: map[string]string{":pk": "ENTITY#ENTERPRISE"},
			acme:  metadata("ENTERPRISE#", "ent-01", "ent-02"),
			bravo: metadata("ENTERPRISE#", "ent-01")},
		{name: "account + addresses + tech user", kce: "PK = :pk", values: map[string]string{":pk": "ACCOUNT#acc-001"},
			acme: under("ACCOUNT#acc-001", "ADDRESS#addr-01", "ADDRESS#addr-02", "LICENSE#lic-001", "LICENSE#lic-002", "LICENSE#lic-003",
				"METADATA", "TECH_USER#usr-tech-1", "WORKSTREAM#ws-01", "WORKSTREAM#ws-02"),
			bravo: under("ACCOUNT#acc-001", "ADDRESS#addr-01", "LICENSE#lic-001", "METADATA", "WORKSTREAM#ws-01")},
		{name: "enterprise + products/services", kce: "PK = :pk", values: map[string]string{":pk": "ENTERPRISE#ent-01"},
			acme:  under("ENTERPRISE#ent-01", "METADATA", "PRODUCT#prod-01", "PRODUCT#prod-02", "SERVICE#svc-01"),
			bravo: under("ENTERPRISE#ent-01", "METADATA", "PRODUCT#prod-01")},
		{name: "users by account", index: "GSI2", kce: "GSI2PK = :pk", values: map[string]string{":pk": "ACCOUNT#acc-001#USERS"},
			acme:  metadata("USER#", "usr-01", "usr-02", "usr-04"),
			bravo: metadata("USER#", "usr-01")},
		{name: "licenses by account", kce: "PK = :pk AND begins_with(SK, :sk)", values: map[string]string{":pk": "ACCOUNT#acc-001", ":sk": "LICENSE#"},
			acme:  under("ACCOUNT#acc-001", "LICENSE#lic-001", "LICENSE#lic-002", "LICENSE#lic-003"),
			bravo: under("ACCOUNT#acc-001", "LICENSE#lic-001")},
		{name: "licenses by enterprise", index: "GSI2", kce: "GSI2PK = :pk AND begins_with(GSI2SK, :sk)", values: map[string]string{":pk": "ENTERPRISE#ent-01", ":sk": "LICENSE#"},
			acme:  []string{"ACCOUNT#acc-001 LICENSE#lic-001", "ACCOUNT#acc-001 LICENSE#lic-002", "ACCOUNT#acc-002 LICENSE#lic-004"},
			bravo: []string{"ACCOUNT#acc-001 LICENSE#lic-001", "ACCOUNT#acc-900 LICENSE#lic-900"}},
		{name: "workstreams by account", kce: "PK = :pk AND begins_with(SK, :sk)", values: map[string]string{":pk": "ACCOUNT#acc-001", ":sk": "WORKSTREAM#"},
			acme:  under("ACCOUNT#acc-001", "WORKSTREAM#ws-01", "WORKSTREAM#ws-02"),
			bravo: under("ACCOUNT#acc-001", "WORKSTREAM#ws-01")},
		{name: "workstreams by enterprise", index: "GSI2", kce: "GSI2PK = :pk AND begins_with(GSI2SK, :sk)", values: map[string]string{":pk": "ENTERPRISE#ent-01", ":sk": "WORKSTREAM#"},
			acme:  []string{"ACCOUNT#acc-001 WORKSTREAM#ws-01", "ACCOUNT#acc-002 WORKSTREAM#ws-03"},
			bravo: []string{"ACCOUNT#acc-001 WORKSTREAM#ws-01"}},
		{name: "role + permissions", kce: "PK = :pk", values: map[string]string{":pk": "ROLE#role-admin"},
			acme:  under("ROLE#role-admin", "METADATA", "PERMISSION#dashboard", "PERMISSION#settings", "PERMISSION#users"),
			bravo: under("ROLE#role-admin", "METADATA", "PERMISSION#dashboard")},
		{name: "user + workstream assignments", kce: "PK = :pk", values: map[string]string{":pk": "USER#usr-01"},
			acme:  under("USER#usr-01", "METADATA", "WORKSTREAM#ws-01", "WORKSTREAM#ws-02"),
			bravo: under("USER#usr-01", "METADATA", "WORKSTREAM#ws-01")},
		// End dates sort before the cutoff's time on the same day ('#' < 'T'):
		// lic-002 ends on the cutoff day and is in; lic-003 is not.
		{name: "expiring licenses", index: "GSI3", kce: "GSI3PK = :pk AND GSI3SK <= :date", values: map[string]string{":pk": "LICENSE#STATUS#active", ":date": thirty},
			acme:  []string{"ACCOUNT#acc-002 LICENSE#lic-005", "ACCOUNT#acc-001 LICENSE#lic-001", "ACCOUNT#acc-001 LICENSE#lic-002"},
			bravo: []string{"ACCOUNT#acc-001 LICENSE#lic-001"}},
		{name: "inactive users", index: "GSI3", kce: "GSI3PK = :pk", values: map[string]string{":pk": "USER#STATUS#inactive"},
			acme:  metadata("USER#", "usr-03", "usr-02"), // by end date
			bravo: metadata("USER#", "usr-01")},
		{name: "all notification audits", index: "GSI1", kce: "GSI1PK = :pk", values: map[string]string{":pk": "ENTITY#NOTIFICATION_AUDIT"},
			acme:  na("na-001", "na-002", "na-003", "na-004", "na-005", "na-006", "na-007", "na-008", "na-009"),
			bravo: na("na-001", "na-900")},
		{name: "notifications by account", index: "GSI2", kce: "GSI2PK = :pk", values: map[string]string{":pk": "ACCOUNT#acc-001#NOTIFICATIONS"},
			acme:  na("na-001", "na-002", "na-004", "na-005", "na-009", "na-007"), // by sentAt
			bravo: na("na-001", "na-900")},
		{name: "failed notifications", index: "GSI3", kce: "GSI3PK = :pk", values: map[string]string{":pk": "NOTIFICATION#STATUS#failed"},
			acme:  na("na-006", "na-002"),
			bravo: na("na-001")},
		// BETWEEN compares whole strings: na-008, sent at the start
		// instant, is in ("...000Z#na-008" > start); na-009, sent at the
		// end instant, is out ("...999Z#na-009" > end).
		{name: "sent notifications by date range", index: "GSI3", kce: "GSI3PK = :pk AND GSI3SK BETWEEN :start AND :end",
			values: map[string]string{":pk": "NOTIFICATION#STATUS#sent", ":start": "2025-02-01T00:00:00.000Z", ":end": "2025-02-28T23:59:59.999Z"},
			acme:   na("na-008", "na-001", "na-004", "na-003"),
			bravo:  na("na-900")},
	}
}

// codePatterns are the 8 "Query Patterns" of the document, with the
// parameters exactly as its code writes them.
func codePatterns() []accessPattern {
	return []accessPattern{
		{name: "pattern 1: get all accounts", index: "GSI1", kce: "GSI1PK = :pk", values: map[string]string{":pk": "ENTITY#ACCOUNT"},
			acme: metadata("ACCOUNT#", "acc-001", "acc-002", "acc-003"), bravo: metadata("ACCOUNT#", "acc-001", "acc-900")},
		// The document lists METADATA first in its results comment; in
		// sort key order it comes after ADDRESS# and LICENSE#.
		{name: "pattern 2: account with all related data", kce: "PK = :pk", values: map[string]string{":pk": "ACCOUNT#acc-002"},
			acme:  under("ACCOUNT#acc-002", "ADDRESS#addr-03", "LICENSE#lic-004", "LICENSE#lic-005", "METADATA", "WORKSTREAM#ws-03"),
			bravo: nil},
		{name: "pattern 3: users by account", index: "GSI2", kce: "GSI2PK = :pk", values: map[string]string{":pk": "ACCOUNT#acc-002#USERS"},
			acme: metadata("USER#", "usr-03"), bravo: nil},
		{name: "pattern 4: licenses by enterprise", index: "GSI2", kce: "GSI2PK = :pk AND begins_with(GSI2SK, :sk)", values: map[string]string{":pk": "ENTERPRISE#ent-02", ":sk": "LICENSE#"},
			acme: []string{"ACCOUNT#acc-001 LICENSE#lic-003", "ACCOUNT#acc-002 LICENSE#lic-005"}, bravo: nil},
		{name: "pattern 5: expiring licenses", index: "GSI3", kce: "GSI3PK = :pk AND GSI3SK <= :date",
			values: map[string]string{":pk": "LICENSE#STATUS#active", ":date": toISOString(now.AddDate(0, 0, 30))},
			acme:   []string{"ACCOUNT#acc-002 LICENSE#lic-005", "ACCOUNT#acc-001 LICENSE#lic-001", "ACCOUNT#acc-001 LICENSE#lic-002"},
			bravo:  []string{"ACCOUNT#acc-001 LICENSE#lic-001"}},
		{name: "pattern 6: role with all permissions", kce: "PK = :pk", values: map[string]string{":pk": "ROLE#role-viewer"},
			acme: under("ROLE#role-viewer", "METADATA", "PERMISSION#dashboard"), bravo: nil},
		{name: "pattern 7: user with workstreams", kce: "PK = :pk", values: map[string]string{":pk": "USER#usr-03"},
			acme: under("USER#usr-03", "METADATA", "WORKSTREAM#ws-03"), bravo: nil},
		{name: "pattern 8: enterprise with products and services", kce: "PK = :pk", values: map[string]string{":pk": "ENTERPRISE#ent-02"},
			acme: under("ENTERPRISE#ent-02", "METADATA", "SERVICE#svc-02"), bravo: nil},
	}
}

// indexPatterns are the remaining rows of the document's GSI tables and
// the workstream tools collection.
func indexPatterns() []accessPattern {
	gsi1 := func(kind string, acme, bravo []string) accessPattern {
		return accessPattern{name: "GSI1 ENTITY#" + kind, index: "GSI1", kce: "GSI1PK = :pk", values: map[string]string{":pk": "ENTITY#" + kind}, acme: acme, bravo: bravo}
	}
	return []accessPattern{
		gsi1("LICENSE", []string{"ACCOUNT#acc-001 LICENSE#lic-001", "ACCOUNT#acc-001 LICENSE#lic-002", "ACCOUNT#acc-001 LICENSE#lic-003", "ACCOUNT#acc-002 LICENSE#lic-004", "ACCOUNT#acc-002 LICENSE#lic-005"},
			[]string{"ACCOUNT#acc-001 LICENSE#lic-001", "ACCOUNT#acc-900 LICENSE#lic-900"}),
		gsi1("WORKSTREAM", []string{"ACCOUNT#acc-001 WORKSTREAM#ws-01", "ACCOUNT#acc-001 WORKSTREAM#ws-02", "ACCOUNT#acc-002 WORKSTREAM#ws-03"},
			[]string{"ACCOUNT#acc-001 WORKSTREAM#ws-01"}),
		gsi1("USER", metadata("USER#", "usr-01", "usr-02", "usr-03", "usr-04"), metadata("USER#", "usr-01")),
		gsi1("ROLE", metadata("ROLE#", "role-admin", "role-viewer"), metadata("ROLE#", "role-admin")),
		gsi1("GROUP", metadata("GROUP#", "grp-01", "grp-02"), metadata("GROUP#", "grp-01")),
		gsi1("PRODUCT", metadata("PRODUCT#", "prod-01", "prod-02"), metadata("PRODUCT#", "prod-01")),
		gsi1("SERVICE", metadata("SERVICE#", "svc-01", "svc-02"), metadata("SERVICE#", "svc-01")),
		{name: "GSI2 roles scoped to an account", index: "GSI2", kce: "GSI2PK = :pk", values: map[string]string{":pk": "ACCOUNT#acc-001#ROLES"},
			acme: metadata("ROLE#", "role-viewer"), bravo: nil},
		{name: "GSI3 expired licenses", index: "GSI3", kce: "GSI3PK = :pk", values: map[string]string{":pk": "LICENSE#STATUS#expired"},
			acme: []string{"ACCOUNT#acc-002 LICENSE#lic-004"}, bravo: []string{"ACCOUNT#acc-900 LICENSE#lic-900"}},
		{name: "GSI3 active users by end date", index: "GSI3", kce: "GSI3PK = :pk", values: map[string]string{":pk": "USER#STATUS#active"},
			acme: metadata("USER#", "usr-01", "usr-04"), bravo: nil},
		{name: "GSI3 skipped notifications", index: "GSI3", kce: "GSI3PK = :pk", values: map[string]string{":pk": "NOTIFICATION#STATUS#skipped"},
			acme: na("na-005"), bravo: nil},
		{name: "workstream tools", kce: "PK = :pk", values: map[string]string{":pk": "WORKSTREAM#ws-01"},
			acme: under("WORKSTREAM#ws-01", "TOOL#tool-jira", "TOOL#tool-slack"), bravo: under("WORKSTREAM#ws-01", "TOOL#tool-jira")},
	}
}

// seed writes d with c, 25 items per BatchWriteItem.
func seed(t *testing.T, c *dynamodb.Client, d *appData) {
	t.Helper()
	for i := 0; i < len(d.items); i += 25 {
		var reqs []types.WriteRequest
		for _, it := range d.items[i:min(i+25, len(d.items))] {
			reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
		}
		out, err := c.BatchWriteItem(ctxT(t), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"app_data": reqs}})
		if err != nil {
			t.Fatalf("BatchWriteItem: %v", err)
		}
		if len(out.UnprocessedItems) > 0 {
			t.Fatalf("BatchWriteItem left %d tables unprocessed", len(out.UnprocessedItems))
		}
	}
}

func keyString(it item) string {
	return it["PK"].(*types.AttributeValueMemberS).Value + " " + it["SK"].(*types.AttributeValueMemberS).Value
}

// query runs p with c, following pages.
func query(t *testing.T, c *dynamodb.Client, p accessPattern) []item {
	t.Helper()
	in := &dynamodb.QueryInput{TableName: aws.String("app_data"), KeyConditionExpression: aws.String(p.kce),
		ExpressionAttributeValues: map[string]types.AttributeValue{}}
	if p.index != "" {
		in.IndexName = aws.String(p.index)
	}
	for k, v := range p.values {
		in.ExpressionAttributeValues[k] = &types.AttributeValueMemberS{Value: v}
	}
	var its []item
	pg := dynamodb.NewQueryPaginator(c, in)
	for pg.HasMorePages() {
		out, err := pg.NextPage(ctxT(t))
		if err != nil {
			t.Fatalf("%s: Query: %v", p.name, err)
		}
		its = append(its, out.Items...)
	}
	return its
}

// checkPatterns runs every access pattern as one tenant and compares the
// items with that tenant's data set: the keys in order, each item in full.
func checkPatterns(t *testing.T, c *dynamodb.Client, d *appData, bravo bool, patterns []accessPattern) {
	t.Helper()
	byKey := map[string]item{}
	for _, it := range d.items {
		byKey[keyString(it)] = it
	}
	for _, p := range patterns {
		want := p.acme
		if bravo {
			want = p.bravo
		}
		got := query(t, c, p)
		var keys []string
		for _, it := range got {
			keys = append(keys, keyString(it))
		}
		if strings.Join(keys, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: got\n\t%s\nwant\n\t%s", p.name, strings.Join(keys, "\n\t"), strings.Join(want, "\n\t"))
			continue
		}
		for _, it := range got {
			if w := byKey[keyString(it)]; !reflect.DeepEqual(it, w) {
				t.Errorf("%s: item %s differs from the one written", p.name, keyString(it))
			}
		}
	}
}

// checkSparse: each GSI holds exactly the tenant's items that carry its
// key attributes.
func checkSparse(t *testing.T, c *dynamodb.Client, d *appData) {
	t.Helper()
	for _, ix := range []string{"GSI1", "GSI2", "GSI3"} {
		want := 0
		for _, it := range d.items {
			if it[ix+"PK"] != nil {
				want++
			}
		}
		out, err := c.Scan(ctxT(t), &dynamodb.ScanInput{TableName: aws.String("app_data"), IndexName: aws.String(ix), Select: types.SelectCount})
		if err != nil {
			t.Fatalf("Scan %s: %v", ix, err)
		}
		if int(out.Count) != want {
			t.Errorf("%s holds %d of the tenant's items, want %d", ix, out.Count, want)
		}
	}
}

func allPatterns() []accessPattern {
	return append(append(summaryPatterns(), codePatterns()...), indexPatterns()...)
}

// TestSeed002 creates seed 002's table from its CloudFormation template
// (package cfn, CreateTable with the operator key), seeds a data set as
// one tenant and another data set with overlapping keys as a second
// tenant on the same shared table, and runs every access pattern of the
// document as each tenant.
func TestSeed002(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	b, err := os.ReadFile("testdata/seed002_app_data.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := cfn.Parse(b, cfn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.Tables) != 1 {
		t.Fatalf("the template has %d tables, want 1", len(tmpl.Tables))
	}
	op := rawClient{srv.Endpoint, srv.Operator}
	r, err := cfn.Apply(context.Background(), op, tmpl.Tables[0], cfn.ApplyOptions{})
	if err != nil || r.Status != cfn.Created {
		t.Fatalf("Apply: %+v, %v", r, err)
	}
	if r, err := cfn.Apply(context.Background(), op, tmpl.Tables[0], cfn.ApplyOptions{}); err != nil || r.Status != cfn.Unchanged {
		t.Fatalf("Apply again: %+v, %v", r, err)
	}

	acme, bravo := srv.Client(srv.NewTenant(t, "acme", "app")), srv.Client(srv.NewTenant(t, "bravo", "app"))
	ad, bd := acmeData(), bravoData()
	seed(t, bravo, bd)
	seed(t, acme, ad)

	if n := len(summaryPatterns()); n != 17 {
		t.Fatalf("%d summary patterns, want the document's 17", n)
	}
	if n := len(codePatterns()); n != 8 {
		t.Fatalf("%d code patterns, want the document's 8", n)
	}
	t.Run("acme", func(t *testing.T) {
		checkPatterns(t, acme, ad, false, allPatterns())
		checkSparse(t, acme, ad)
	})
	t.Run("bravo", func(t *testing.T) {
		checkPatterns(t, bravo, bd, true, allPatterns())
		checkSparse(t, bravo, bd)
	})
	// The same access patterns as PartiQL statements (partiql_test.go).
	t.Run("acme-partiql", func(t *testing.T) { checkPartiQL(t, acme, allPatterns()) })
	t.Run("bravo-partiql", func(t *testing.T) { checkPartiQL(t, bravo, allPatterns()) })
}

// tenantdbBinary returns TENANTDB_BIN or builds cmd/tenantdb.
func tenantdbBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(harness.BinEnv); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "tenantdb")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/tenantdb")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tenantdb: %v\n%s", err, out)
	}
	return bin
}

// TestSeed002CLI applies seed 002's template with the built CLI, as a
// user would (`tenantdb table apply -f template.yaml` with the operator's
// credentials file), then runs the access patterns on it.
func TestSeed002CLI(t *testing.T) {
	t.Parallel()
	srv := harness.Start(t)
	bin := tenantdbBinary(t)
	creds := filepath.Join(t.TempDir(), "operator-credentials")
	profile := fmt.Sprintf("[tenantdb-operator]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.Operator.AccessKeyID, srv.Operator.SecretAccessKey)
	if err := os.WriteFile(creds, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	apply := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"table", "apply", "-f", "testdata/seed002_app_data.yaml", "--endpoint", srv.Endpoint, "--credentials", creds}, args...)...)
		cmd.Env = append(os.Environ(), "TENANTDB_KEY=", "TENANTDB_TENANT_KEY=", "TENANTDB_PROFILE=")
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%v: %s", err, ee.Stderr)
		}
		return string(out), err
	}
	out, err := apply()
	if err != nil || !strings.HasPrefix(out, "created") || !strings.Contains(out, "app_data") {
		t.Fatalf("tenantdb table apply: %q, %v", out, err)
	}
	out, err = apply("--json")
	var rep struct {
		Tables []cfn.Result `json:"tables"`
	}
	if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Tables) != 1 || rep.Tables[0].Status != cfn.Unchanged {
		t.Fatalf("tenantdb table apply --json, again: %q, %v", out, err)
	}

	c := srv.Client(srv.NewTenant(t, "acme", "app"))
	d, err := c.DescribeTable(ctxT(t), &dynamodb.DescribeTableInput{TableName: aws.String("app_data")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Table.BillingModeSummary == nil || d.Table.BillingModeSummary.BillingMode != types.BillingModePayPerRequest || len(d.Table.GlobalSecondaryIndexes) != 3 {
		t.Errorf("app_data: billing %+v, %d GSIs", d.Table.BillingModeSummary, len(d.Table.GlobalSecondaryIndexes))
	}
	ad := acmeData()
	seed(t, c, ad)
	checkPatterns(t, c, ad, false, allPatterns())
}

// TestSeed002Verbatim: testdata/seed002_app_data.yaml is the seed's
// CloudFormation template, byte for byte.
func TestSeed002Verbatim(t *testing.T) {
	seed, err := os.ReadFile(filepath.Join(seedDir, "002_dc8721d4d42bc4fc.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := os.ReadFile("testdata/seed002_app_data.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(seed), "```yaml\n"+string(tmpl)+"```") {
		t.Fatal("testdata/seed002_app_data.yaml is not the seed's ```yaml block verbatim")
	}
}
