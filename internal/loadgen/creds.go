package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Credential is one tenant's access key pair.
type Credential struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
}

// DefaultCredential is the static dummy credential used when no tenant is
// given; servers without authentication (dynalite, the no-op server) accept it.
var DefaultCredential = Credential{AccessKeyID: "tdbload", SecretAccessKey: "tdbload-secret"}

// ParseCredential parses "access-key-id:secret" (split at the first colon).
func ParseCredential(s string) (Credential, error) {
	id, secret, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || id == "" || secret == "" {
		return Credential{}, fmt.Errorf("loadgen: credential must be access-key-id:secret")
	}
	return Credential{AccessKeyID: id, SecretAccessKey: secret}, nil
}

// ParseCredentials reads credentials in one of three forms: one per line as
// "access-key-id:secret" (blank lines and lines starting with # skipped); a
// stream of JSON objects or arrays of objects with access_key_id and
// secret_access_key (the output of `tenantdb key create --json`, appended);
// or an AWS shared-credentials file (every profile with
// aws_access_key_id and aws_secret_access_key, in file order), such as the
// credential files tenantdb writes into its data directory.
// Errors never echo a secret.
func ParseCredentials(r io.Reader) ([]Credential, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("loadgen: credentials: %w", err)
	}
	var out []Credential
	t := bytes.TrimSpace(data)
	switch {
	case bytes.Contains(data, []byte("aws_access_key_id")) && !bytes.Contains(data, []byte(`"aws_access_key_id"`)):
		out, err = parseSharedCredentials(data)
	case len(t) > 0 && (t[0] == '{' || t[0] == '['):
		out, err = parseJSONCredentials(t)
	default:
		out, err = parseLineCredentials(data)
	}
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadgen: credentials: none found")
	}
	return out, nil
}

func parseLineCredentials(data []byte) ([]Credential, error) {
	var out []Credential
	for i, s := range strings.Split(string(data), "\n") {
		s = strings.TrimSpace(s)
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		c, err := ParseCredential(s)
		if err != nil {
			return nil, fmt.Errorf("loadgen: credentials line %d: %v", i+1, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func parseJSONCredentials(data []byte) ([]Credential, error) {
	var out []Credential
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("loadgen: credentials: JSON value %d is malformed", n)
		}
		var cs []Credential
		if raw[0] == '[' {
			if err := json.Unmarshal(raw, &cs); err != nil {
				return nil, fmt.Errorf("loadgen: credentials: JSON value %d is not an array of credentials", n)
			}
		} else {
			var c Credential
			if err := json.Unmarshal(raw, &c); err != nil {
				return nil, fmt.Errorf("loadgen: credentials: JSON value %d is not a credential object", n)
			}
			cs = []Credential{c}
		}
		for _, c := range cs {
			if c.AccessKeyID == "" || c.SecretAccessKey == "" {
				return nil, fmt.Errorf("loadgen: credentials: JSON value %d lacks access_key_id or secret_access_key", n)
			}
		}
		out = append(out, cs...)
	}
}

func parseSharedCredentials(data []byte) ([]Credential, error) {
	var out []Credential
	var cur Credential
	profile := ""
	flush := func() error {
		switch {
		case cur.AccessKeyID != "" && cur.SecretAccessKey != "":
			out = append(out, cur)
		case cur.AccessKeyID != "" || cur.SecretAccessKey != "":
			return fmt.Errorf("loadgen: credentials: profile [%s] lacks aws_access_key_id or aws_secret_access_key", profile)
		}
		cur = Credential{}
		return nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			if err := flush(); err != nil {
				return nil, err
			}
			profile = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "aws_access_key_id":
			cur.AccessKeyID = strings.TrimSpace(v)
		case "aws_secret_access_key":
			cur.SecretAccessKey = strings.TrimSpace(v)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}
