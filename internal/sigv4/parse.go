// Package sigv4 verifies AWS Signature Version 4 on incoming requests.
//
// It is pure: no I/O, no clock, no credential store, and no net/http (only
// the server and admin packages import that). The server copies the signed
// parts of an HTTP request into a [Request], [Parse]s the Authorization
// header, looks up the secret for [Auth.AccessKeyID], derives (or takes from
// its cache) the [SigningKey] and calls [Verify].
//
// The canonical request is built the way aws-sdk-go-v2 and botocore build
// it for non-S3 services: the received (escaped) path URI-encoded once more,
// the decoded query re-encoded and sorted, signed header values trimmed with
// runs of spaces collapsed and repeated headers joined with ",", and the
// payload hash taken from X-Amz-Content-Sha256 or computed from the body.
// Only header-based auth (the Authorization header) is supported; presigned
// query-string auth is not, because no DynamoDB client uses it.
//
// Every error is an *apierr.Error with AWS's kind and, where AWS has one,
// AWS's wording.
package sigv4

import (
	"strings"
	"time"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Algorithm is the only signing algorithm accepted.
const Algorithm = "AWS4-HMAC-SHA256"

// Terminator ends every SigV4 credential scope.
const Terminator = "aws4_request"

// MaxSkew is how far a request's signing time may be from the server's clock
// in either direction.
const MaxSkew = 15 * time.Minute

// Header names, in the canonical form of Request.Header keys.
const (
	hdrAuthorization = "Authorization"
	hdrAmzDate       = "X-Amz-Date"
	hdrDate          = "Date"
	hdrSecurityToken = "X-Amz-Security-Token"
	hdrContentSHA256 = "X-Amz-Content-Sha256"
	hdrHost          = "Host"
)

// Request is the part of an HTTP request that SigV4 signs. Build it from an
// *http.Request as
//
//	sigv4.Request{Method: r.Method, Path: r.URL.EscapedPath(),
//		RawQuery: r.URL.RawQuery, Host: r.Host, Header: r.Header, Body: body}
//
// Nothing here modifies a Request.
type Request struct {
	Method   string
	Path     string              // URL path as received, escaped form (r.URL.EscapedPath())
	RawQuery string              // r.URL.RawQuery
	Host     string              // r.Host; Go removes Host from Header
	Header   map[string][]string // keys canonical-cased like http.Header
	Body     []byte              // the whole payload
}

// Auth is a parsed Authorization header, for example
//
//	AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/dynamodb/aws4_request,
//	SignedHeaders=host;x-amz-date, Signature=<64 hex digits>
//
// together with the request time and session token it refers to. String
// fields point into the request's header values.
type Auth struct {
	AccessKeyID   string
	Date          string // yyyymmdd of the credential scope
	Region        string
	Service       string
	SignedHeaders []string // as listed: lower-case, normally sorted
	Signature     string   // hex, as sent
	// Time is the signing time, from X-Amz-Date or else the Date header.
	Time time.Time
	// TimeHeader is the lower-case name of the header Time came from,
	// "x-amz-date" or "date"; Verify requires it to be signed.
	TimeHeader string
	// SecurityToken is X-Amz-Security-Token, empty without one. Checking
	// that it belongs to AccessKeyID is the caller's job.
	SecurityToken string

	signedHeaders string // SignedHeaders as sent, ';'-separated
	// NB: SignedHeaders usually points into shArr so that Parse makes one
	// allocation.
	shArr [12]string
}

// Parse reads the Authorization header and the date and token headers of r.
// It checks syntax only; [Verify] checks the signature, the clock and the
// credential scope's date.
//
// Errors: MissingAuthenticationToken if there is no Authorization header;
// IncompleteSignature if it is malformed, lacks Credential, SignedHeaders or
// Signature, names another algorithm, has a malformed credential scope, or
// if there is neither X-Amz-Date nor Date or the Date header is malformed;
// InvalidSignature if X-Amz-Date is malformed.
func Parse(r *Request) (*Auth, error) {
	hv := r.Header[hdrAuthorization]
	if len(hv) == 0 || (len(hv) == 1 && hv[0] == "") {
		return nil, apierr.New(apierr.MissingAuthenticationToken, "Request is missing Authentication Token")
	}
	if len(hv) > 1 {
		return nil, apierr.New(apierr.IncompleteSignature, "Request must contain exactly one Authorization header.")
	}
	h := hv[0]

	// AWS splits the header into tokens at commas and white space: the
	// first is the algorithm, every other must be key=value.
	var algorithm, credential, signedHeaders, signature string
	var haveCred, haveSH, haveSig bool
	rest := h
	first := true
	for {
		tok := nextToken(&rest)
		if tok == "" {
			break
		}
		if first {
			first = false
			if strings.IndexByte(tok, '=') < 0 {
				algorithm = tok
				continue
			}
		}
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			return nil, apierr.New(apierr.IncompleteSignature,
				"'%s' not a valid key=value pair (missing equal-sign) in Authorization header: '%s'.",
				apierr.Clip(tok), echo(h))
		}
		var dst *string
		var seen *bool
		switch k {
		case "Credential":
			dst, seen = &credential, &haveCred
		case "SignedHeaders":
			dst, seen = &signedHeaders, &haveSH
		case "Signature":
			dst, seen = &signature, &haveSig
		default:
			continue // AWS ignores parameters it does not know
		}
		if *seen {
			return nil, apierr.New(apierr.IncompleteSignature,
				"Authorization header has a duplicate '%s' parameter. Authorization=%s", k, echo(h))
		}
		*dst, *seen = v, true
	}

	timeHeader, timeValue, haveTime := requestTime(r)
	if !haveCred || !haveSig || !haveSH || !haveTime {
		var b strings.Builder
		if !haveCred {
			b.WriteString("Authorization header requires 'Credential' parameter. ")
		}
		if !haveSig {
			b.WriteString("Authorization header requires 'Signature' parameter. ")
		}
		if !haveSH {
			b.WriteString("Authorization header requires 'SignedHeaders' parameter. ")
		}
		if !haveTime {
			b.WriteString("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. ")
		}
		b.WriteString("Authorization=")
		b.WriteString(echo(h))
		return nil, apierr.New(apierr.IncompleteSignature, "%s", b.String())
	}
	if algorithm != Algorithm {
		return nil, apierr.New(apierr.IncompleteSignature,
			"Unsupported AWS 'algorithm': '%s'. Only '%s' is supported.", apierr.Clip(algorithm), Algorithm)
	}

	a := new(Auth)
	if err := a.setCredential(credential); err != nil {
		return nil, err
	}
	if err := a.setSignedHeaders(signedHeaders); err != nil {
		return nil, err
	}
	if signature == "" {
		return nil, apierr.New(apierr.IncompleteSignature,
			"Authorization header requires 'Signature' parameter. Authorization=%s", echo(h))
	}
	a.Signature = signature

	var err error
	if a.Time, err = parseTime(timeHeader, timeValue); err != nil {
		return nil, err
	}
	a.TimeHeader = timeHeader

	if tv := r.Header[hdrSecurityToken]; len(tv) > 0 {
		if len(tv) > 1 {
			return nil, apierr.New(apierr.IncompleteSignature,
				"Request must contain at most one X-Amz-Security-Token header.")
		}
		a.SecurityToken = tv[0]
	}
	return a, nil
}

// nextToken returns the next token of *s, skipping separators (commas,
// spaces, tabs), and advances *s past it.
func nextToken(s *string) string {
	t := *s
	i := 0
	for i < len(t) && isSep(t[i]) {
		i++
	}
	j := i
	for j < len(t) && !isSep(t[j]) {
		j++
	}
	*s = t[j:]
	return t[i:j]
}

func isSep(c byte) bool { return sepTable[c] }

var sepTable = [256]bool{',': true, ' ': true, '\t': true}

// setCredential splits "AKID/yyyymmdd/region/service/aws4_request".
func (a *Auth) setCredential(c string) error {
	if strings.Count(c, "/") != 4 {
		return credentialError(c)
	}
	var parts [5]string
	rest := c
	for i := range 4 {
		parts[i], rest, _ = strings.Cut(rest, "/")
	}
	parts[4] = rest
	for _, p := range parts[:4] {
		if p == "" {
			return credentialError(c)
		}
	}
	if parts[4] != Terminator {
		return apierr.New(apierr.IncompleteSignature,
			"Credential should be scoped with a valid terminator: '%s', not '%s'.", Terminator, apierr.Clip(parts[4]))
	}
	if !isDate(parts[1]) {
		return apierr.New(apierr.IncompleteSignature,
			"Credential should be scoped to a date in the form YYYYMMDD, not '%s'.", apierr.Clip(parts[1]))
	}
	a.AccessKeyID, a.Date, a.Region, a.Service = parts[0], parts[1], parts[2], parts[3]
	return nil
}

func credentialError(c string) error {
	return apierr.New(apierr.IncompleteSignature,
		"Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '%s'", apierr.Clip(c))
}

func isDate(s string) bool {
	if len(s) != 8 {
		return false
	}
	for i := 0; i < 8; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// setSignedHeaders splits "host;x-amz-date;...". Names must be non-empty
// and lower-case, as every client sends them.
func (a *Auth) setSignedHeaders(sh string) error {
	if sh == "" {
		return apierr.New(apierr.IncompleteSignature, "Authorization header requires 'SignedHeaders' parameter to list at least 'host'.")
	}
	n := strings.Count(sh, ";") + 1
	list := a.shArr[:0]
	if n > len(a.shArr) {
		list = make([]string, 0, n)
	}
	rest := sh
	for {
		name, tail, more := strings.Cut(rest, ";")
		if name == "" || !isLowerToken(name) {
			return apierr.New(apierr.IncompleteSignature,
				"SignedHeaders must be a ';'-separated list of lower-case header names, got '%s'.", apierr.Clip(sh))
		}
		list = append(list, name)
		if !more {
			break
		}
		rest = tail
	}
	a.SignedHeaders = list
	a.signedHeaders = sh
	return nil
}

// isLowerToken reports whether s is an HTTP token without upper-case
// letters.
func isLowerToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// requestTime finds the signing time's header: X-Amz-Date, else Date.
func requestTime(r *Request) (name, value string, ok bool) {
	if v := r.Header[hdrAmzDate]; len(v) > 0 {
		if len(v) > 1 {
			return "x-amz-date", "", true // rejected by parseTime
		}
		return "x-amz-date", v[0], true
	}
	if v := r.Header[hdrDate]; len(v) > 0 {
		if len(v) > 1 {
			return "date", "", true
		}
		return "date", v[0], true
	}
	return "", "", false
}

const amzDateLayout = "20060102T150405Z"

// parseTime parses X-Amz-Date (ISO 8601 basic) or an HTTP Date header.
func parseTime(header, v string) (time.Time, error) {
	if t, ok := parseAmzDate(v); ok {
		return t, nil
	}
	if header == "date" {
		// RFC 9110's formats, whose zone is the literal GMT (time.RFC1123
		// would read other abbreviations by the server's local zone), and
		// the numeric zone botocore sends: "Mon, 02 Jan 2006 15:04:05 -0000".
		for _, layout := range [...]string{
			"Mon, 02 Jan 2006 15:04:05 GMT", time.RFC1123Z,
			"Monday, 02-Jan-06 15:04:05 GMT", time.ANSIC,
		} {
			if t, err := time.Parse(layout, v); err == nil {
				return t.UTC(), nil
			}
		}
		return time.Time{}, apierr.New(apierr.IncompleteSignature,
			"Date header must be an HTTP date or in the ISO8601 basic format \"yyyyMMdd'T'HHmmss'Z'\", got '%s'.", apierr.Clip(v))
	}
	// NB: DynamoDB answers a malformed X-Amz-Date as it answers an
	// expired or future one, with InvalidSignatureException (issue 18);
	// a malformed Date header stays an incomplete signature.
	return time.Time{}, apierr.New(apierr.InvalidSignature,
		"X-Amz-Date must be in the ISO8601 basic format \"yyyyMMdd'T'HHmmss'Z'\", got '%s'.", apierr.Clip(v))
}

// parseAmzDate parses "yyyymmddThhmmssZ" exactly, without allocating.
func parseAmzDate(s string) (time.Time, bool) {
	if len(s) != 16 || s[8] != 'T' || s[15] != 'Z' {
		return time.Time{}, false
	}
	var f [6]int
	pos := [6][2]int{{0, 4}, {4, 6}, {6, 8}, {9, 11}, {11, 13}, {13, 15}}
	for i, p := range pos {
		n := 0
		for j := p[0]; j < p[1]; j++ {
			c := s[j]
			if c < '0' || c > '9' {
				return time.Time{}, false
			}
			n = n*10 + int(c-'0')
		}
		f[i] = n
	}
	t := time.Date(f[0], time.Month(f[1]), f[2], f[3], f[4], f[5], 0, time.UTC)
	// Reject out-of-range fields (month 13, hour 24, Feb 30) instead of
	// letting time.Date normalize them.
	y, mo, d := t.Date()
	h, mi, sec := t.Clock()
	if y != f[0] || int(mo) != f[1] || d != f[2] || h != f[3] || mi != f[4] || sec != f[5] {
		return time.Time{}, false
	}
	return t, true
}

// echo is the Authorization header h as error messages repeat it (AWS
// repeats it whole): clipped, and with the signature's value masked, so
// that a header a log keeps cannot be replayed after a small repair.
func echo(h string) string {
	const key, mask = "Signature=", "<redacted>"
	for from := 0; ; {
		i := strings.Index(h[from:], key)
		if i < 0 {
			return apierr.Clip(h)
		}
		j := from + i + len(key)
		k := j
		for k < len(h) && !isSep(h[k]) {
			k++
		}
		h = h[:j] + mask + h[k:]
		from = j + len(mask)
	}
}
