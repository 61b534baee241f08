package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

func TestParseProcStat(t *testing.T) {
	// Field 2 may hold spaces and parentheses; utime=1234, stime=566 ticks.
	line := "4242 (node (my) srv) S 1 4242 4242 0 -1 4194560 100 0 0 0 1234 566 0 0 20 0 11 0 500 1000 200"
	got, err := parseProcStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := 18 * time.Second; got != want {
		t.Errorf("parseProcStat = %v, want %v", got, want)
	}
	if _, err := parseProcStat("4242 (x) S 1 2"); err == nil {
		t.Error("parseProcStat of a short line: got nil error")
	}
}

func TestParseMachineStat(t *testing.T) {
	busy, total, err := parseMachineStat("cpu  100 5 45 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n")
	if err != nil {
		t.Fatal(err)
	}
	if busy != 1500*time.Millisecond || total != 10*time.Second {
		t.Errorf("parseMachineStat = busy %v total %v, want 1.5s 10s", busy, total)
	}
}

func TestProcCPUSelf(t *testing.T) {
	if _, err := ProcCPU(1 << 30); err == nil {
		t.Error("ProcCPU of a missing pid: got nil error")
	}
}

func TestParseCredentials(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Credential
		wantErr  string
	}{
		{"lines", "# tenants\nAKID1:secret1\n\n  sk_live_abc_key:se:cr:et  \n",
			[]Credential{{"AKID1", "secret1"}, {"sk_live_abc_key", "se:cr:et"}}, ""},
		{"json stream", "{\"tenant_id\":\"t\",\"access_key_id\":\"A\",\"secret_access_key\":\"S\"}\n{\n \"access_key_id\": \"B\",\n \"secret_access_key\": \"T\"\n}\n",
			[]Credential{{"A", "S"}, {"B", "T"}}, ""},
		{"json array", `[{"access_key_id":"A","secret_access_key":"S"}]`, []Credential{{"A", "S"}}, ""},
		{"shared credentials file", "# made by tenantdb\n[default]\naws_access_key_id = sk_live_a_b\naws_secret_access_key = s3cr=et\nregion = us-east-1\n\n[other]\n; comment\naws_access_key_id=K2\naws_secret_access_key=S2\n[region-only]\nregion=x\n",
			[]Credential{{"sk_live_a_b", "s3cr=et"}, {"K2", "S2"}}, ""},
		{"shared credentials without secret", "[p]\naws_access_key_id = K\n", nil, "profile [p] lacks"},
		{"no colon", "AKID1:s\nAKIDsecret\n", nil, "line 2"},
		{"empty", "# nothing\n", nil, "none found"},
		{"json missing secret", `{"access_key_id":"A"}`, nil, "lacks"},
	}
	for _, tt := range tests {
		got, err := ParseCredentials(strings.NewReader(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "AKIDsecret") {
				t.Errorf("%s: error echoes the credential: %v", tt.name, err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
}

func TestErrorCode(t *testing.T) {
	tests := []struct {
		err      error
		want     string
		throttle bool
	}{
		{&smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}, "ProvisionedThroughputExceededException", true},
		{fmt.Errorf("op: %w", &smithy.GenericAPIError{Code: "ValidationException"}), "ValidationException", false},
		{fmt.Errorf("x: %w", errMiss), "ItemNotFound", false},
		{errors.New("boom"), "ClientError", false},
		{fmt.Errorf("send: %w", &smithyhttp.RequestSendError{Err: errors.New("http: server closed idle connection")}), "ConnectionError", false},
		{fmt.Errorf("send: %w", context.DeadlineExceeded), "Timeout", false},
	}
	for _, tt := range tests {
		got := ErrorCode(tt.err)
		if got != tt.want || IsThrottle(got) != tt.throttle {
			t.Errorf("ErrorCode(%v) = %q (throttle %v), want %q (throttle %v)", tt.err, got, IsThrottle(got), tt.want, tt.throttle)
		}
	}
}

func TestMix(t *testing.T) {
	m, err := ParseMix("get=3, put=1,query=0")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	counts := map[Op]int{}
	for i := 0; i < 40000; i++ {
		counts[m.Pick(r)]++
	}
	if counts[OpQuery] != 0 || counts[OpGet] < 29000 || counts[OpGet] > 31000 || counts[OpGet]+counts[OpPut] != 40000 {
		t.Errorf("Pick counts = %v, want ~30000 get, ~10000 put, no query", counts)
	}
	for _, bad := range []string{"", "get", "get=x", "nope=1", "get=1,get=2", "get=0"} {
		if _, err := ParseMix(bad); err == nil {
			t.Errorf("ParseMix(%q): got nil error", bad)
		}
	}
	if _, err := MixFor("scan", ""); err == nil {
		t.Error(`MixFor("scan"): got nil error`)
	}
	if m, err := MixFor("mixed", ""); err != nil || len(m.Ops()) != 5 {
		t.Errorf(`MixFor("mixed", "") = %v, %v; want the 5-op default mix`, m.Ops(), err)
	}
}

func TestItemLayout(t *testing.T) {
	for _, size := range []int{1024, 100, 4000} {
		it := newItems(size)
		n := 0
		for k, v := range it.item(123456) {
			n += len(k) + len(v.(*types.AttributeValueMemberS).Value)
		}
		if n != size || ItemSize(size) != size {
			t.Errorf("item of size %d: DynamoDB size %d, ItemSize %d", size, n, ItemSize(size))
		}
	}
	if got := ItemSize(1); got != itemOverhead+1 {
		t.Errorf("ItemSize(1) = %d, want the minimum %d", got, itemOverhead+1)
	}
	pk, sk := keyOf(45)
	if pk != "p00000002" || sk != "s05" {
		t.Errorf("keyOf(45) = %q %q, want p00000002 s05", pk, sk)
	}
	d := distinct(rand.New(rand.NewPCG(1, 2)), 30, 25)
	seen := map[int]bool{}
	for _, n := range d {
		if n < 0 || n >= 30 || seen[n] {
			t.Fatalf("distinct = %v: want 25 distinct numbers below 30", d)
		}
		seen[n] = true
	}
}
