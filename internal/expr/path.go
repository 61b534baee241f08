package expr

import (
	"strconv"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// NamePath returns the one-element path of a top-level attribute.
func NamePath(name string) Path { return Path{{Name: name, Index: -1}} }

// IsIndex reports whether e is a list index.
func (e PathElem) IsIndex() bool { return e.Index >= 0 }

// String returns p in document-path form, a.b[3].c. Names are written as
// they are, without escaping.
func (p Path) String() string {
	var b strings.Builder
	for i, e := range p {
		if e.IsIndex() {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.Index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.Name)
	}
	return b.String()
}

// listString returns p the way DynamoDB prints paths in messages:
// [a, b, [3], c].
func (p Path) listString() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range p {
		if i > 0 {
			b.WriteString(", ")
		}
		if e.IsIndex() {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.Index))
			b.WriteByte(']')
		} else {
			b.WriteString(e.Name)
		}
	}
	b.WriteByte(']')
	return b.String()
}

// Equal reports whether p and q are the same path.
func (p Path) Equal(q Path) bool {
	if len(p) != len(q) {
		return false
	}
	for i := range p {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// comparePaths orders paths element by element, list indexes numerically
// and before names; a prefix sorts first.
func comparePaths(p, q Path) int {
	for i := 0; i < len(p) && i < len(q); i++ {
		a, b := p[i], q[i]
		switch {
		case a.IsIndex() && b.IsIndex():
			if a.Index != b.Index {
				if a.Index < b.Index {
					return -1
				}
				return 1
			}
		case a.IsIndex():
			return -1
		case b.IsIndex():
			return 1
		default:
			if c := strings.Compare(a.Name, b.Name); c != 0 {
				return c
			}
		}
	}
	return len(p) - len(q)
}

// Get returns the value at p in item, and whether it exists.
func (p Path) Get(item attr.Item) (attr.Value, bool) {
	if len(p) == 0 {
		return attr.Value{}, false
	}
	v, ok := item[p[0].Name]
	if !ok {
		return attr.Value{}, false
	}
	for _, e := range p[1:] {
		if e.IsIndex() {
			if v.Type != attr.L || e.Index >= len(v.L) {
				return attr.Value{}, false
			}
			v = v.L[e.Index]
			continue
		}
		if v.Type != attr.M {
			return attr.Value{}, false
		}
		if v, ok = v.M[e.Name]; !ok {
			return attr.Value{}, false
		}
	}
	return v, true
}

// pathsClash checks a set of paths the way DynamoDB checks the paths of one
// update or projection expression: no path may be a prefix of (or equal to)
// another, and two paths may not address the same value once as a map and
// once as a list. It returns the category and message of the first clash.
func pathsClash(paths []Path) (overlap, conflict string) {
	for j := 1; j < len(paths); j++ {
		for i := 0; i < j; i++ {
			p1, p2 := paths[i], paths[j]
			clash := true
			for k := 0; k < len(p1) && k < len(p2); k++ {
				if p1[k].IsIndex() != p2[k].IsIndex() {
					if conflict == "" {
						conflict = "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: " +
							p1.listString() + ", path two: " + p2.listString()
					}
					clash = false
					break
				}
				if p1[k] != p2[k] {
					clash = false
					break
				}
			}
			if clash && overlap == "" {
				overlap = "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: " +
					p1.listString() + ", path two: " + p2.listString()
			}
		}
	}
	return overlap, conflict
}
