package node

import "testing"

func TestClientEndpoint(t *testing.T) {
	for addr, want := range map[string]string{
		"":               "",
		"127.0.0.1:8000": "http://127.0.0.1:8000",
		"0.0.0.0:9000":   "http://127.0.0.1:9000",
		"[::]:9001":      "http://127.0.0.1:9001",
		":9003":          "http://127.0.0.1:9003",
		"[::1]:9002":     "http://[::1]:9002",
		"10.1.2.3:80":    "http://10.1.2.3:80",
	} {
		if got := clientEndpoint(addr); got != want {
			t.Errorf("clientEndpoint(%q) = %q, want %q", addr, got, want)
		}
	}
}
