package console

import "testing"

func TestSafeNext(t *testing.T) {
	for in, want := range map[string]string{
		"/console/tenants/x/usage?a=b": "/console/tenants/x/usage?a=b",
		"":                             "/console/",
		"https://evil.example/":        "/console/",
		"//evil.example/console/":      "/console/",
		"/console/../v1/tenants":       "/console/",
		"/console/\r\nSet-Cookie: x":   "/console/",
		"/console\\evil":               "/console/",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
}
