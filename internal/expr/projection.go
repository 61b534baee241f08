package expr

import (
	"sort"
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// projNode is a trie of projected paths: all means "the whole value from
// here down"; otherwise fields and elems select parts of a map or list.
type projNode struct {
	all    bool
	fields map[string]*projNode
	elems  map[int]*projNode
}

func (n *projNode) add(p Path) {
	for _, e := range p {
		if n.all {
			return
		}
		var child *projNode
		if e.IsIndex() {
			if n.elems == nil {
				n.elems = map[int]*projNode{}
			}
			if child = n.elems[e.Index]; child == nil {
				child = &projNode{}
				n.elems[e.Index] = child
			}
		} else {
			if n.fields == nil {
				n.fields = map[string]*projNode{}
			}
			if child = n.fields[e.Name]; child == nil {
				child = &projNode{}
				n.fields[e.Name] = child
			}
		}
		n = child
	}
	n.all, n.fields, n.elems = true, nil, nil
}

// project returns the parts of v that n selects, and false when nothing
// is selected (a path that does not exist, or runs into a scalar).
// Selected values are shared with v, not copied.
func (n *projNode) project(v attr.Value) (attr.Value, bool) {
	if n.all {
		return v, true
	}
	switch v.Type {
	case attr.M:
		if len(n.fields) == 0 {
			return attr.Value{}, false
		}
		m := make(map[string]attr.Value, len(n.fields))
		for name, child := range n.fields {
			if x, ok := v.M[name]; ok {
				if px, ok := child.project(x); ok {
					m[name] = px
				}
			}
		}
		if len(m) == 0 {
			return attr.Value{}, false
		}
		return attr.Map(m), true
	case attr.L:
		if len(n.elems) == 0 {
			return attr.Value{}, false
		}
		idx := make([]int, 0, len(n.elems))
		for i := range n.elems {
			if i < len(v.L) {
				idx = append(idx, i)
			}
		}
		sort.Ints(idx)
		var l []attr.Value
		for _, i := range idx {
			if px, ok := n.elems[i].project(v.L[i]); ok {
				l = append(l, px)
			}
		}
		if len(l) == 0 {
			return attr.Value{}, false
		}
		return attr.List(l), true
	}
	return attr.Value{}, false
}

// projectItem applies the root of a trie to an item.
func (n *projNode) projectItem(item attr.Item) attr.Item {
	out := make(attr.Item, len(n.fields))
	for name, child := range n.fields {
		if v, ok := item[name]; ok {
			if pv, ok := child.project(v); ok {
				out[name] = pv
			}
		}
	}
	return out
}

// compiledProjection implements Projection.
type compiledProjection struct {
	paths []Path
	root  *projNode
	top   []string
}

var _ Projection = (*compiledProjection)(nil)

func newProjection(paths []Path) *compiledProjection {
	pr := &compiledProjection{paths: paths, root: &projNode{}}
	seen := map[string]bool{}
	for _, p := range paths {
		pr.root.add(p)
		if !seen[p.Top()] {
			seen[p.Top()] = true
			pr.top = append(pr.top, p.Top())
		}
	}
	return pr
}

// Apply implements Projection. Nested paths keep their structure: a.b
// yields {a: {b: ...}}, and list indexes yield the selected elements in
// index order (a[1], a[3] yields {a: [a[1], a[3]]}). Missing paths are
// left out.
func (pr *compiledProjection) Apply(item attr.Item) attr.Item { return pr.root.projectItem(item) }

// TopNames implements Projection, in order of first appearance.
func (pr *compiledProjection) TopNames() []string { return pr.top }

// Paths returns the projected paths.
func (pr *compiledProjection) Paths() []Path { return pr.paths }

// String returns the projection with names substituted.
func (pr *compiledProjection) String() string {
	s := make([]string, len(pr.paths))
	for i, p := range pr.paths {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// ProjectPaths returns a new item holding only the given paths of item,
// with the nesting of Projection.Apply; for ReturnValues UPDATED_OLD and
// UPDATED_NEW. Overlapping paths are allowed.
func ProjectPaths(item attr.Item, paths []Path) attr.Item {
	root := &projNode{}
	for _, p := range paths {
		if len(p) > 0 {
			root.add(p)
		}
	}
	return root.projectItem(item)
}
