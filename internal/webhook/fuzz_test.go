package webhook

import (
	"context"
	"encoding/json"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/changelog"
)

// FuzzCompileFilter: any filter, names and values either compile or fail
// with a ValidationException, and a compiled filter evaluates any record
// without panicking.
func FuzzCompileFilter(f *testing.F) {
	f.Add("begins_with(sk, :o)", `{}`, `{":o":{"S":"OUTBOX#"}}`, "INSERT,REMOVE")
	f.Add("#s = :v AND attribute_exists(pk)", `{"#s":"status"}`, `{":v":{"S":"open"}}`, "")
	f.Add("size(#a) > :n OR contains(tags, :t)", `{"#a":"a"}`, `{":n":{"N":"3"},":t":{"S":"x"}}`, "MODIFY")
	f.Add("", `{}`, `{}`, "UPSERT")
	f.Fuzz(func(t *testing.T, filter, names, values, events string) {
		var nm map[string]string
		_ = json.Unmarshal([]byte(names), &nm)
		vals, _ := attr.ParseItemJSON([]byte(values))
		flt, err := CompileFilter(filter, nm, vals, strings.Split(events, ","))
		if err != nil {
			if k := apierr.KindOf(err); k != apierr.Validation && k != apierr.Serialization {
				t.Fatalf("CompileFilter(%q) = %v, want a ValidationException", filter, err)
			}
			return
		}
		img := attr.Item{"pk": attr.Str("p"), "sk": attr.Str("OUTBOX#1"), "status": attr.Str("open")}
		for _, ev := range []changelog.Event{changelog.Insert, changelog.Modify, changelog.Remove} {
			flt.Match(changelog.Record{Event: ev, Keys: img, New: img, Old: img})
		}
	})
}

// FuzzCheckURL: any URL is accepted only as http(s) with a host, and,
// without private webhooks, never when its host is a blocked address.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hook", "http://127.0.0.1:8080/x", "https://[::ffff:169.254.169.254]/",
		"https://0x7f.1/", "https://2130706433/", "https://[fe80::1%25eth0]/", "https://a@b/", "https://10.0.0.1:99999/"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, allowPrivate bool) {
		u, err := CheckURL(context.Background(), publicResolver{}, raw, allowPrivate)
		if err != nil {
			if !apierr.Is(err, apierr.Validation) {
				t.Fatalf("CheckURL(%q) = %v, want a ValidationException", raw, err)
			}
			return
		}
		if u.Scheme != "https" && (u.Scheme != "http" || !allowPrivate) || u.Hostname() == "" || u.User != nil {
			t.Fatalf("CheckURL(%q, %v) accepted %+v", raw, allowPrivate, u)
		}
		if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && BlockedAddr(ip) {
			t.Fatalf("CheckURL(%q) accepted blocked address %s", raw, ip)
		}
	})
}

// FuzzParseFrom: a replay point parses as one kind or none, and Verify
// never accepts a signature made with another secret.
func FuzzParseFrom(f *testing.F) {
	f.Add("2026-01-02T15:04:05Z", "t=1,v1=00")
	f.Add("000000000100000000000000000042", "t=abc")
	f.Add("1.2.3", "v1=")
	f.Fuzz(func(t *testing.T, from, header string) {
		parseFromKind(from)
		body := []byte(from)
		if Verify(header, body, "secret-a", time.Time{}, 0) && Verify(header, body, "secret-b", time.Time{}, 0) &&
			!strings.Contains(header, Sign(time.Unix(0, 0), body, "secret-a")[4:]) {
			t.Fatalf("one header verified for two secrets: %q", header)
		}
		h := Sign(time.Unix(1700000000, 0), body, "s1")
		if !Verify(h, body, "s1", time.Time{}, 0) || Verify(h, body, "s2", time.Time{}, 0) {
			t.Fatalf("Sign/Verify disagree for %q", from)
		}
	})
}

// publicResolver resolves every name to a public address.
type publicResolver struct{}

func (publicResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
}

func TestBlockedAddr(t *testing.T) {
	for s, want := range map[string]bool{
		"127.0.0.1": true, "10.2.3.4": true, "172.16.0.1": true, "192.168.1.1": true, "169.254.169.254": true,
		"100.64.0.1": true, "0.0.0.0": true, "::1": true, "fd00:ec2::254": true, "fe80::1": true,
		"::ffff:127.0.0.1": true, "64:ff9b::7f00:1": true, "224.0.0.1": true,
		"93.184.216.34": false, "2606:2800:220:1:248:1893:25c8:1946": false, "8.8.8.8": false, "64:ff9b::808:808": false,
	} {
		if got := BlockedAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("BlockedAddr(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestUnavailableRefusesEveryCall(t *testing.T) {
	u, ctx := Unavailable("a gateway"), context.Background()
	var s = adminScope(t, [16]byte{1}, "live")
	_, e1 := u.Create(ctx, s, CreateInput{})
	_, e2 := u.List(ctx, s)
	_, e3 := u.Replay(ctx, s, "x", "y")
	e4 := u.Delete(ctx, s, "x")
	for _, err := range []error{e1, e2, e3, e4} {
		if !apierr.Is(err, apierr.Validation) || !strings.Contains(apierr.Message(err), "not available: a gateway") {
			t.Errorf("got %v, want a ValidationException saying why", err)
		}
	}
}
