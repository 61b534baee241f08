package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// blocked are the ranges a webhook may not reach unless the operator
// allows private webhooks: loopback, private, shared (CGNAT), link-local
// (where cloud metadata services live: 169.254.169.254, fd00:ec2::254 is
// in fc00::/7), unspecified, multicast, broadcast and reserved ranges.
var blocked = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "2001:db8::/32",
		"64:ff9b:1::/48",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// BlockedAddr reports whether a webhook may not connect to ip when
// private webhooks are not allowed. IPv4-mapped and NAT64 (64:ff9b::/96)
// addresses are judged by the IPv4 address they carry.
func BlockedAddr(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.Unmap()
	if ip.Is6() {
		if nat64 := netip.MustParsePrefix("64:ff9b::/96"); nat64.Contains(ip) {
			b := ip.As16()
			return BlockedAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		}
	}
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return true
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// ParseURL checks a subscription URL's form: absolute https (http only if
// allowPrivate), a host, no user info or fragment, at most 2048 bytes. It
// does not resolve the host (CheckURL does).
func ParseURL(raw string, allowPrivate bool) (*url.URL, error) {
	if len(raw) > maxURL {
		return nil, apierr.Validationf("the url is longer than %d bytes", maxURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, apierr.Validationf("the url is malformed: %s", apierr.Clip(err.Error()))
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowPrivate {
			return nil, apierr.Validationf("the url must use https:// (plain http:// is allowed only on servers started with --allow-private-webhooks)")
		}
	default:
		return nil, apierr.Validationf("the url must be an absolute https:// url")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, apierr.Validationf("the url must name a host")
	}
	if u.User != nil {
		return nil, apierr.Validationf("the url may not carry user information")
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, apierr.Validationf("the url may not have a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := netip.ParseAddrPort("127.0.0.1:" + p); err != nil || n.Port() == 0 {
			return nil, apierr.Validationf("the url's port is invalid")
		}
	}
	return u, nil
}

// Resolver looks up a host's addresses (net.DefaultResolver's
// LookupNetIP).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL is ParseURL and, unless allowPrivate, a refusal of hosts that
// are or resolve to a blocked address (BlockedAddr) or do not resolve.
func CheckURL(ctx context.Context, r Resolver, raw string, allowPrivate bool) (*url.URL, error) {
	u, err := ParseURL(raw, allowPrivate)
	if err != nil || allowPrivate {
		return u, err
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return nil, errPrivate
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if BlockedAddr(ip) {
			return nil, errPrivate
		}
		return u, nil
	}
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, apierr.Validationf("the url's host %s does not resolve", apierr.Clip(host))
	}
	for _, ip := range ips {
		if BlockedAddr(ip) {
			return nil, errPrivate
		}
	}
	return u, nil
}

var errPrivate = apierr.Validationf("the url resolves to a loopback, private, link-local or metadata address; such webhooks are allowed only on servers started with --allow-private-webhooks")

// errBlockedDial is the dialer's refusal (a delivery error, not retried
// sooner than any other connection error).
var errBlockedDial = errors.New("webhook: refusing to connect to a loopback, private, link-local or metadata address")

// dialControl is the net.Dialer Control hook of deliveries: it runs after
// name resolution, on the address actually dialed, so a host that
// resolved to a public address when the subscription was created and to
// a private one now (DNS rebinding) is refused.
func dialControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return errBlockedDial
	}
	if BlockedAddr(ap.Addr()) {
		return errBlockedDial
	}
	return nil
}

var _ Resolver = net.DefaultResolver
