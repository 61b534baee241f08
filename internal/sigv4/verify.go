package sigv4

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// SigningKey derives the SigV4 signing key
// HMAC(HMAC(HMAC(HMAC("AWS4"+secret, date), region), service), "aws4_request").
// It depends only on its arguments, so callers may cache it per (secret,
// date, region, service); date is the credential scope's yyyymmdd.
func SigningKey(secret, date, region, service string) []byte {
	var kb [64]byte
	k := append(append(kb[:0], "AWS4"...), secret...)
	var sum [sha256.Size]byte
	for _, part := range [...]string{date, region, service, Terminator} {
		var mb [64]byte
		sum = hmacSHA256(k, append(mb[:0], part...))
		k = sum[:]
	}
	return append([]byte(nil), sum[:]...)
}

// Message of InvalidSignature when the signature differs, AWS's wording.
const mismatchMessage = "The request signature we calculated does not match the signature you provided. " +
	"Check your AWS Secret Access Key and signing method. Consult the service documentation for details."

// Verify checks that a, parsed from r by [Parse], is a valid signature of r
// under the signing key key (see [SigningKey]) at time now. It returns nil
// or an *apierr.Error:
//
//   - IncompleteSignature if 'host', the header that gave a.Time, or any
//     X-Amz-* header present in r is missing from the signed headers, or if
//     r has more than one X-Amz-Content-Sha256;
//   - InvalidSignature if the credential scope's date is not a.Time's date
//     (UTC), if a.Time is more than [MaxSkew] before or after now, if
//     X-Amz-Content-Sha256 is not the hex SHA-256 of r.Body (unsigned and
//     streaming payloads are refused: the body must be authenticated), if the
//     query string cannot be canonicalized, or if the signature does not
//     match.
//
// The signature is compared in constant time. Verify does not check the
// region or service (see [Auth.CheckScope]) nor whether the access key or
// session token are valid.
func Verify(r *Request, a *Auth, key []byte, now time.Time) error {
	if err := checkSigned(r, a); err != nil {
		return err
	}
	if err := checkTime(a, now); err != nil {
		return err
	}

	// The payload hash: the body's, which X-Amz-Content-Sha256 may repeat.
	var payload [2 * sha256.Size]byte
	bodySum := sha256.Sum256(r.Body)
	hex.Encode(payload[:], bodySum[:])
	if v := r.Header[hdrContentSHA256]; len(v) > 0 {
		if len(v) > 1 {
			return apierr.New(apierr.IncompleteSignature, "Request must contain at most one X-Amz-Content-Sha256 header.")
		}
		if v[0] != string(payload[:]) {
			if !isLowerHex(v[0], 2*sha256.Size) {
				return apierr.New(apierr.InvalidSignature,
					"X-Amz-Content-Sha256 must be the hex SHA-256 of the request body; unsigned and streaming payloads are not supported, got '%s'.",
					apierr.Clip(v[0]))
			}
			return apierr.New(apierr.InvalidSignature,
				"The provided 'x-amz-content-sha256' header does not match what was computed.")
		}
	}

	var want [sha256.Size]byte
	if !decodeHex(want[:], a.Signature) {
		return apierr.Wrap(apierr.InvalidSignature, errSigFormat, mismatchMessage)
	}

	// NB: everything below works in stack buffers and a sha256 digest that
	// the compiler keeps on the stack; a typical DynamoDB request verifies
	// without allocating.
	var crBuf [1024]byte
	cr, err := appendCanonicalRequest(crBuf[:0], r, a, payload[:])
	if err != nil {
		return apierr.Wrap(apierr.InvalidSignature, err, mismatchMessage)
	}
	crSum := sha256.Sum256(cr)

	var stsBuf [256]byte
	sts := append(stsBuf[:0], Algorithm...)
	sts = append(sts, '\n')
	sts = appendAmzDate(sts, a.Time.UTC())
	sts = append(sts, '\n')
	sts = appendScope(sts, a)
	sts = append(sts, '\n')
	sts = hex.AppendEncode(sts, crSum[:])

	got := hmacSHA256(key, sts)
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		return apierr.New(apierr.InvalidSignature, mismatchMessage)
	}
	return nil
}

type sigError string

func (e sigError) Error() string { return string(e) }

const errSigFormat = sigError("sigv4: signature is not 64 hex digits")

// checkSigned enforces which headers must be covered by the signature.
func checkSigned(r *Request, a *Auth) error {
	if !a.signs("host") {
		return apierr.New(apierr.IncompleteSignature, "'Host' must be a 'SignedHeader' in the AWS Authorization.")
	}
	switch a.TimeHeader {
	case "x-amz-date":
		if !a.signs("x-amz-date") {
			return apierr.New(apierr.IncompleteSignature, "'X-Amz-Date' must be a 'SignedHeader' in the AWS Authorization.")
		}
	case "date":
		if !a.signs("date") {
			return apierr.New(apierr.IncompleteSignature, "'Date' must be a 'SignedHeader' in the AWS Authorization.")
		}
	default:
		return apierr.New(apierr.IncompleteSignature,
			"Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
	}
	// Every client signs all X-Amz-* headers it sends. Requiring it keeps
	// X-Amz-Target (the operation), X-Amz-Security-Token and
	// X-Amz-Content-Sha256 from being swapped under a valid signature.
	for name := range r.Header {
		if len(name) > 6 && strings.EqualFold(name[:6], "x-amz-") && !a.signs(name) {
			return apierr.New(apierr.IncompleteSignature,
				"There were headers present in the request which were not signed: %s.", apierr.Clip(strings.ToLower(name)))
		}
	}
	return nil
}

// signs reports whether name (any case) is among the signed headers.
func (a *Auth) signs(name string) bool {
	for _, s := range a.SignedHeaders {
		if len(s) == len(name) && strings.EqualFold(s, name) {
			return true
		}
	}
	return false
}

// checkTime enforces the credential scope's date and the clock skew.
func checkTime(a *Auth, now time.Time) error {
	t := a.Time.UTC()
	// NB: the clock skew is checked before the scope's date, so a
	// request time outside the window is "Signature expired" or "not yet
	// current" whatever the scope says, as DynamoDB answers.
	now = now.UTC()
	if lo := now.Add(-MaxSkew); t.Before(lo) {
		return apierr.New(apierr.InvalidSignature, "Signature expired: %s is now earlier than %s (%s - 15 min.)",
			t.Format(amzDateLayout), lo.Format(amzDateLayout), now.Format(amzDateLayout))
	}
	if hi := now.Add(MaxSkew); t.After(hi) {
		return apierr.New(apierr.InvalidSignature, "Signature not yet current: %s is still later than %s (%s + 15 min.)",
			t.Format(amzDateLayout), hi.Format(amzDateLayout), now.Format(amzDateLayout))
	}
	var d [16]byte
	if string(appendAmzDate(d[:0], t)[:8]) != a.Date {
		return apierr.New(apierr.InvalidSignature,
			"Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '%s' != '%s', from '%s'.",
			apierr.Clip(a.Date), t.Format("20060102"), t.Format(amzDateLayout))
	}
	return nil
}

// appendAmzDate appends t as yyyymmddThhmmssZ; t must be UTC. It does
// what t.AppendFormat(b, amzDateLayout) does, several times faster.
func appendAmzDate(b []byte, t time.Time) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, amzDateLayout)
	}
	b = append(b, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	for _, v := range [...]int{int(mo), d} {
		b = append(b, byte('0'+v/10), byte('0'+v%10))
	}
	b = append(b, 'T')
	for _, v := range [...]int{h, mi, s} {
		b = append(b, byte('0'+v/10), byte('0'+v%10))
	}
	return append(b, 'Z')
}

// CheckScope reports whether a's credential scope names region and service.
// Errors are InvalidSignature with AWS's wording.
func (a *Auth) CheckScope(region, service string) error {
	if a.Region != region {
		return apierr.New(apierr.InvalidSignature, "Credential should be scoped to a valid region, not '%s'.", apierr.Clip(a.Region))
	}
	if a.Service != service {
		return apierr.New(apierr.InvalidSignature, "Credential should be scoped to correct service: '%s'.", service)
	}
	return nil
}

// appendScope appends "yyyymmdd/region/service/aws4_request".
func appendScope(b []byte, a *Auth) []byte {
	b = append(b, a.Date...)
	b = append(b, '/')
	b = append(b, a.Region...)
	b = append(b, '/')
	b = append(b, a.Service...)
	b = append(b, '/')
	return append(b, Terminator...)
}

// hmacSHA256 is HMAC-SHA256 (RFC 2104). It computes what crypto/hmac does
// without the half-dozen allocations of hmac.New per call; a test checks
// the two agree.
func hmacSHA256(key, msg []byte) (out [sha256.Size]byte) {
	const blockSize = sha256.BlockSize
	var k [blockSize]byte
	if len(key) > blockSize {
		s := sha256.Sum256(key)
		copy(k[:], s[:])
	} else {
		copy(k[:], key)
	}
	var pad [blockSize]byte
	for i := range pad {
		pad[i] = k[i] ^ 0x36
	}
	h := sha256.New()
	h.Write(pad[:])
	h.Write(msg)
	var inner [sha256.Size]byte
	h.Sum(inner[:0])

	for i := range pad {
		pad[i] = k[i] ^ 0x5c
	}
	h.Reset()
	h.Write(pad[:])
	h.Write(inner[:])
	h.Sum(out[:0])
	return out
}

// decodeHex decodes the hex string s (either case) into dst, which it must
// fill exactly.
func decodeHex(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
