package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that carries a delivery's signatures.
const SignatureHeader = "Tenantdb-Signature"

// Sign returns the value of the Tenantdb-Signature header of body sent at
// t: "t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>", with
// one v1 per secret (during a rotation's overlap, the new secret's first).
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(signature(s, ts, body))
	}
	return b.String()
}

func signature(secret, ts string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether header is a valid Tenantdb-Signature of body for
// secret, made within tolerance of now (0: any age). It is what a
// receiver does (README.md shows the same in a few lines).
func Verify(header string, body []byte, secret string, now time.Time, tolerance time.Duration) bool {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return false
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return false
	}
	if tolerance > 0 {
		d := now.Sub(time.Unix(sec, 0))
		if d > tolerance || d < -tolerance {
			return false
		}
	}
	want := signature(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}
