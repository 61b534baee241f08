package expr

import (
	"strings"

	"github.com/tenantdb/tenantdb/internal/attr"
)

// MirrorTop returns the update expression s (valid under p, as Update
// accepted it) with its action on the top-level attribute name, if any,
// repeated on the attribute that the name placeholder target stands for,
// so that an engine evaluating the result keeps target equal to name
// (where name holds a number) in the same atomic update:
//
//   - SET name = v adds SET target = v (v reads the item before the
//     update, as every operand does);
//   - REMOVE name adds REMOVE target;
//   - ADD name :n of a number adds SET target = if_not_exists(name,
//     zero) + :n, zero being a value placeholder of the number 0;
//   - ADD name of a set adds REMOVE target (a set is not a number);
//   - DELETE name (sets only) and actions on paths inside name (a map or
//     a list, not a number) add nothing.
//
// changed reports whether an action was added, zeroUsed whether zero is
// used. The result keeps s's placeholders; its form is the parser's
// (clauses in s's order, one space between tokens).
func (p *Params) MirrorTop(s, name, target, zero string) (out string, changed, zeroUsed bool, err error) {
	n, err := parseUpdate(s)
	if err != nil {
		return "", false, false, invalid(labelUpdate, err.Error())
	}
	tgt := &pathNode{elems: []pathElemNode{{name: target}}}
	var set, remove *actionNode
	for _, c := range n.clauses {
		for _, a := range c.actions {
			if len(a.path.elems) != 1 || !p.namesTop(a.path.elems[0], name) {
				continue
			}
			switch c.kind {
			case "SET":
				set = &actionNode{path: tgt, value: a.value}
			case "REMOVE":
				remove = &actionNode{path: tgt}
			case "ADD":
				v, ok := a.value.(*valueNode)
				if !ok {
					continue
				}
				if p.Values[v.name].Type == attr.N {
					set = &actionNode{path: tgt, value: &arithNode{op: '+',
						l: &callNode{name: "if_not_exists", args: []node{a.path, &valueNode{name: zero}}}, r: v}}
					zeroUsed = true
				} else {
					remove = &actionNode{path: tgt}
				}
			}
		}
	}
	if set == nil && remove == nil {
		return s, false, false, nil
	}
	for _, add := range []struct {
		kind string
		a    *actionNode
	}{{"SET", set}, {"REMOVE", remove}} {
		if add.a == nil {
			continue
		}
		found := false
		for i := range n.clauses {
			if n.clauses[i].kind == add.kind {
				n.clauses[i].actions = append(n.clauses[i].actions, *add.a)
				found = true
			}
		}
		if !found {
			n.clauses = append(n.clauses, clauseNode{kind: add.kind, actions: []actionNode{*add.a}})
		}
	}
	var b strings.Builder
	n.format(&b)
	return b.String(), true, zeroUsed, nil
}

// namesTop reports whether path element e (identifier or #placeholder)
// names the attribute name.
func (p *Params) namesTop(e pathElemNode, name string) bool {
	if e.isIndex() {
		return false
	}
	if e.isPlaceholder() {
		return p.Names[e.name] == name
	}
	return e.name == name
}
