package wire

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/tenantdb/tenantdb/internal/apierr"
)

// FuzzDecode feeds arbitrary (operation, body) pairs to Decode. Decode must
// never panic; it either fails with a client error whose response is valid
// JSON, or returns an input that encodes and decodes again.
func FuzzDecode(f *testing.F) {
	for _, op := range OpNames {
		f.Add(op, []byte(`{}`))
	}
	addDecodeSeeds(f)
	f.Fuzz(func(t *testing.T, op string, body []byte) {
		in, err := decodeOp(op, body)
		if err != nil {
			var e *apierr.Error
			if !errors.As(err, &e) {
				t.Fatalf("Decode(%q) error %v is not an *apierr.Error", op, err)
			}
			switch e.Kind {
			case apierr.Serialization, apierr.Validation, apierr.UnknownOperation:
			default:
				t.Fatalf("Decode(%q) error kind %v: %v", op, e.Kind, err)
			}
			b, status := AppendError(nil, err)
			if status != 400 || !json.Valid(b) {
				t.Fatalf("error response %d %s", status, b)
			}
			return
		}
		enc, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("re-encoding %T: %v", in, err)
		}
		if _, err := decodeOp(op, enc); err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
	})
}
