package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/tests/harness"
)

// BenchmarkConsoleRequest is the cost of one signed-in console request on
// the embedded server: Home reads the session and redirects (the session
// lookup is most of its work); Tenant renders a tenant's page (the session
// plus the admin API calls of the page, in-process).
func BenchmarkConsoleRequest(b *testing.B) {
	s := harness.Start(b)
	admin := s.NewTenant(b, "bench", "admin")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string) (int, string) {
		resp, err := c.Get(s.Endpoint + path)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	_, body := get("/console/signin")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.Fatal("no CSRF token on the sign-in page")
	}
	resp, err := c.PostForm(s.Endpoint+"/console/signin", url.Values{"key": {admin.Key}, "csrf": {m[1]}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		b.Fatalf("sign in: %v %v", resp, err)
	}
	resp.Body.Close()
	for _, bc := range []struct {
		name, path string
		want       int
	}{
		{"Home", "/console/", http.StatusSeeOther},
		{"Tenant", "/console/tenants/" + admin.TenantID, http.StatusOK},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			// NB: CPU time of the process (server and client), which a
			// loaded machine disturbs less than wall time.
			cpu0 := cpuTime()
			for range b.N {
				if st, body := get(bc.path); st != bc.want {
					b.Fatalf("%s: %d %s", bc.path, st, body)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
