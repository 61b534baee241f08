package sigv4

import (
	"net/url"
	"slices"
	"strings"
)

// appendCanonicalRequest appends SigV4's canonical request:
//
//	Method \n CanonicalURI \n CanonicalQuery \n
//	name:value \n ... (one line per signed header) \n
//	SignedHeaders \n PayloadHash
func appendCanonicalRequest(b []byte, r *Request, a *Auth, payloadHash []byte) ([]byte, error) {
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = appendURI(b, r.Path)
	b = append(b, '\n')
	b, err := appendQuery(b, r.RawQuery)
	if err != nil {
		return b, err
	}
	b = append(b, '\n')
	for _, name := range a.SignedHeaders {
		b = append(b, name...)
		b = append(b, ':')
		if name == "host" && r.Host != "" {
			b = appendTrimmed(b, r.Host)
		} else {
			for i, v := range headerValues(r.Header, name) {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendTrimmed(b, v)
			}
		}
		b = append(b, '\n')
	}
	b = append(b, '\n')
	if a.signedHeaders != "" {
		b = append(b, a.signedHeaders...)
	} else { // an Auth not made by Parse
		for i, name := range a.SignedHeaders {
			if i > 0 {
				b = append(b, ';')
			}
			b = append(b, name...)
		}
	}
	b = append(b, '\n')
	return append(b, payloadHash...), nil
}

// appendURI appends the canonical URI of the escaped path p: every byte
// except unreserved characters and '/' percent-encoded, so an escape that
// is already in p is encoded a second time. That is what the SDKs do for
// every service but S3. The path is not normalized: aws-sdk-go-v2 signs it
// as is, and accepting a signature for a different spelling of the path
// would let a captured request be replayed against it.
func appendURI(b []byte, p string) []byte {
	if p == "" {
		return append(b, '/')
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', upperHex[c>>4], upperHex[c&0xf])
		}
	}
	return b
}

const upperHex = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// escape is SigV4's URI encoding of a query key or value.
func escape(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', upperHex[c>>4], upperHex[c&0xf])
		}
	}
	return string(b)
}

const errQuery = sigError("sigv4: query string cannot be canonicalized")

// appendQuery appends the canonical query string of raw: each parameter
// decoded as net/url does ('+' is a space) and re-encoded, sorted by key,
// then value. A parameter with a ';' or a bad escape is an error rather
// than dropped, so that no part of the query escapes the signature.
func appendQuery(b []byte, raw string) ([]byte, error) {
	if raw == "" {
		return b, nil
	}
	type param struct{ k, v string }
	var params []param
	for raw != "" {
		var piece string
		piece, raw, _ = strings.Cut(raw, "&")
		if piece == "" {
			continue
		}
		if strings.IndexByte(piece, ';') >= 0 {
			return b, errQuery
		}
		k, v, _ := strings.Cut(piece, "=")
		k, err1 := url.QueryUnescape(k)
		v, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return b, errQuery
		}
		params = append(params, param{escape(k), escape(v)})
	}
	slices.SortFunc(params, func(x, y param) int {
		if c := strings.Compare(x.k, y.k); c != 0 {
			return c
		}
		return strings.Compare(x.v, y.v)
	})
	for i, p := range params {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, p.k...)
		b = append(b, '=')
		b = append(b, p.v...)
	}
	return b, nil
}

// headerValues returns the values of the lower-case header name in h,
// whose keys are canonical as in http.Header.
func headerValues(h map[string][]string, name string) []string {
	var kb [64]byte
	if len(name) <= len(kb) {
		k := kb[:len(name)]
		upper := true
		for i := 0; i < len(name); i++ {
			c := name[i]
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			k[i] = c
			upper = c == '-'
		}
		if v, ok := h[string(k)]; ok {
			return v
		}
	}
	// Go leaves a name with unusual characters uncanonicalized, and a
	// hand-built Header may not be canonical.
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// appendTrimmed appends v without leading and trailing white space and with
// each run of spaces collapsed to one, as aws-sdk-go-v2 and botocore do.
func appendTrimmed(b []byte, v string) []byte {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' && i > 0 && v[i-1] == ' ' {
			continue
		}
		b = append(b, c)
	}
	return b
}
