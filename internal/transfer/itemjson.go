package transfer

import (
	"slices"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// AppendItem appends item as a JSON object of DynamoDB JSON values with
// the attribute names of every map sorted, so that equal items always
// have the same bytes (the form exports write).
func AppendItem(dst []byte, item attr.Item) []byte {
	names := make([]string, 0, len(item))
	for n := range item {
		names = append(names, n)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, n := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendName(dst, n)
		dst = append(dst, ':')
		dst = appendValue(dst, item[n])
	}
	return append(dst, '}')
}

func appendValue(dst []byte, v attr.Value) []byte {
	switch v.Type {
	case attr.M:
		dst = append(dst, `{"M":`...)
		return append(AppendItem(dst, v.M), '}')
	case attr.L:
		dst = append(dst, `{"L":[`...)
		for i, e := range v.L {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, e)
		}
		return append(dst, "]}"...)
	}
	return attr.AppendJSON(dst, v)
}

// appendName appends n as a JSON string, escaped as attr escapes strings.
func appendName(dst []byte, n string) []byte {
	start := len(dst)
	dst = attr.AppendJSON(dst, attr.Str(n)) // {"S":"..."}
	const prefix = len(`{"S":`)
	copy(dst[start:], dst[start+prefix:len(dst)-1])
	return dst[:len(dst)-prefix-1]
}
