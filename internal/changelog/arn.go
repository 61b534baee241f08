package changelog

import "strings"

// StreamARN is a parsed stream ARN:
//
//	arn:aws:dynamodb:<region>:<account>:table/<table name>/stream/<label>
//
// It names a stream by table name and label only: which table that name
// means, and whether the caller may read it, is decided by whoever
// resolves the name for the caller's scope, never by the ARN.
type StreamARN struct {
	Region  string
	Account string
	Table   string
	Label   string
	Stream  uint64 // the stream id the label names
}

// String returns the ARN.
func (a StreamARN) String() string {
	return "arn:aws:dynamodb:" + a.Region + ":" + a.Account + ":table/" + a.Table + "/stream/" + a.Label
}

// FormatStreamARN returns the ARN of stream s of the table named table.
func FormatStreamARN(region, account, table string, s Stream) string {
	return StreamARN{Region: region, Account: account, Table: table, Label: s.Label()}.String()
}

// maxARN is the longest stream ARN DynamoDB accepts.
const maxARN = 1024

// ParseStreamARN parses a stream ARN; ok is false unless s is well formed
// (table name of 3-255 characters [a-zA-Z0-9_.-], a stream label of
// Stream.Label's shape, region and account without ':' or '/').
func ParseStreamARN(s string) (a StreamARN, ok bool) {
	if len(s) < 37 || len(s) > maxARN {
		return a, false
	}
	rest, ok := strings.CutPrefix(s, "arn:aws:dynamodb:")
	if !ok {
		return a, false
	}
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 {
		return a, false
	}
	a.Region, a.Account = parts[0], parts[1]
	if !plainField(a.Region) || !plainField(a.Account) {
		return a, false
	}
	res, ok := strings.CutPrefix(parts[2], "table/")
	if !ok {
		return a, false
	}
	i := strings.Index(res, "/stream/")
	if i < 0 {
		return a, false
	}
	a.Table, a.Label = res[:i], res[i+len("/stream/"):]
	if !validTableName(a.Table) {
		return a, false
	}
	if a.Stream, ok = ParseLabel(a.Label); !ok {
		return a, false
	}
	return a, true
}

func plainField(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func validTableName(s string) bool {
	if len(s) < 3 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
