package cfn

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// evaluator evaluates intrinsic functions against a template's
// Parameters, Conditions, Mappings and Resources.
type evaluator struct {
	opts       Options
	params     map[string]*yaml.Node
	conditions *mapNode
	mappings   *mapNode
	resources  *mapNode

	work          int             // nodes evaluated, against maxWork
	conds         map[string]bool // evaluated conditions
	condBusy      map[string]bool // conditions being evaluated (cycles)
	tableNameBusy map[string]bool // tables whose name is being evaluated (cycles)
}

// maxWork bounds the values Parse evaluates: YAML aliases can make a
// small file expand exponentially ("billion laughs").
const maxWork = 200_000

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

func sequence(vs []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, v := range vs {
		n.Content = append(n.Content, scalar(v))
	}
	return n
}

// eval returns n with every intrinsic function evaluated. It returns
// errNoValue if n itself is !Ref AWS::NoValue; entries of mappings and
// lists that are AWS::NoValue are dropped.
func (ev *evaluator) eval(n *yaml.Node, path string) (*yaml.Node, error) {
	n = deref(n)
	if n == nil {
		return nil, errAt(nil, path, "missing value")
	}
	if ev.work++; ev.work > maxWork {
		return nil, errAt(n, path, "the template expands to more than %d values (YAML aliases?)", maxWork)
	}
	if fn, arg, ok := intrinsic(n); ok {
		return ev.call(n, fn, arg, path)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m, err := mapping(n, path)
		if err != nil {
			return nil, err
		}
		out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
		for _, p := range m.pairs {
			v, err := ev.eval(p.val, path+"."+p.key)
			if errors.Is(err, errNoValue) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, p.keyNode, v)
		}
		return out, nil
	case yaml.SequenceNode:
		out := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: n.Line, Column: n.Column}
		for i, c := range n.Content {
			v, err := ev.eval(c, fmt.Sprintf("%s[%d]", path, i))
			if errors.Is(err, errNoValue) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, v)
		}
		return out, nil
	}
	return n, nil
}

// evalScalar evaluates n and requires a scalar (string, number, bool).
func (ev *evaluator) evalScalar(n *yaml.Node, path string) (string, error) {
	v, err := ev.eval(n, path)
	if err != nil {
		return "", err
	}
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", errAt(n, path, "expected a string, got %s", describe(v))
	}
	return v.Value, nil
}

// evalList evaluates n and requires a list; fixed says how many elements
// it must have (0: any number).
func (ev *evaluator) evalList(n *yaml.Node, path string, fixed int) ([]*yaml.Node, error) {
	v, err := ev.eval(n, path)
	if err != nil {
		return nil, err
	}
	if v.Kind != yaml.SequenceNode {
		return nil, errAt(n, path, "expected a list, got %s", describe(v))
	}
	if fixed > 0 && len(v.Content) != fixed {
		return nil, errAt(n, path, "expected a list of %d elements, got %d", fixed, len(v.Content))
	}
	return v.Content, nil
}

// rawList requires n to be a literal list with n elements, without
// evaluating it (for functions whose elements are evaluated one by one).
func rawList(n *yaml.Node, path, fn string, min, max int) ([]*yaml.Node, error) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, errAt(n, path, "%s takes a list, got %s", fn, describe(n))
	}
	if len(n.Content) < min || len(n.Content) > max {
		if min == max {
			return nil, errAt(n, path, "%s takes a list of %d elements, got %d", fn, min, len(n.Content))
		}
		return nil, errAt(n, path, "%s takes a list of %d to %d elements, got %d", fn, min, max, len(n.Content))
	}
	return n.Content, nil
}

func (ev *evaluator) call(n *yaml.Node, fn string, arg *yaml.Node, path string) (*yaml.Node, error) {
	path += "." + fn
	switch fn {
	case "Ref":
		arg = deref(arg)
		if arg.Kind != yaml.ScalarNode {
			return nil, errAt(arg, path, "Ref takes the name of a parameter or resource, got %s", describe(arg))
		}
		return ev.ref(arg, arg.Value, path)
	case "Fn::Sub":
		return ev.sub(arg, path)
	case "Fn::Join":
		args, err := rawList(arg, path, fn, 2, 2)
		if err != nil {
			return nil, err
		}
		delim, err := ev.evalScalar(args[0], path+"[0]")
		if err != nil {
			return nil, err
		}
		elems, err := ev.evalList(args[1], path+"[1]", 0)
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(elems))
		for i, e := range elems {
			if e.Kind != yaml.ScalarNode {
				return nil, errAt(args[1], path+"[1]", "Fn::Join joins strings, got %s", describe(e))
			}
			parts[i] = e.Value
		}
		return scalar(strings.Join(parts, delim)), nil
	case "Fn::Select":
		args, err := rawList(arg, path, fn, 2, 2)
		if err != nil {
			return nil, err
		}
		is, err := ev.evalScalar(args[0], path+"[0]")
		if err != nil {
			return nil, err
		}
		elems, err := ev.evalList(args[1], path+"[1]", 0)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(is)
		if err != nil || i < 0 || i >= len(elems) {
			return nil, errAt(args[0], path, "Fn::Select index %q is not within the list of %d elements", is, len(elems))
		}
		return elems[i], nil
	case "Fn::Split":
		args, err := rawList(arg, path, fn, 2, 2)
		if err != nil {
			return nil, err
		}
		delim, err := ev.evalScalar(args[0], path+"[0]")
		if err != nil {
			return nil, err
		}
		s, err := ev.evalScalar(args[1], path+"[1]")
		if err != nil {
			return nil, err
		}
		if delim == "" {
			return nil, errAt(args[0], path, "Fn::Split needs a non-empty delimiter")
		}
		return sequence(strings.Split(s, delim)), nil
	case "Fn::If":
		args, err := rawList(arg, path, fn, 3, 3)
		if err != nil {
			return nil, err
		}
		name := deref(args[0])
		if name.Kind != yaml.ScalarNode {
			return nil, errAt(name, path, "Fn::If takes a condition name first, got %s", describe(name))
		}
		ok, err := ev.condition(name.Value, name, path)
		if err != nil {
			return nil, err
		}
		if ok {
			return ev.eval(args[1], path+"[1]")
		}
		return ev.eval(args[2], path+"[2]")
	case "Fn::FindInMap":
		args, err := rawList(arg, path, fn, 3, 3)
		if err != nil {
			return nil, err
		}
		var keys [3]string
		for i := range args {
			if keys[i], err = ev.evalScalar(args[i], fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return nil, err
			}
		}
		var v *yaml.Node
		if m := ev.mappings.get(keys[0]); m != nil {
			if top, err := mapping(m, "Mappings."+keys[0]); err != nil {
				return nil, err
			} else if second := top.get(keys[1]); second != nil {
				sm, err := mapping(second, "Mappings."+keys[0]+"."+keys[1])
				if err != nil {
					return nil, err
				}
				v = sm.get(keys[2])
			}
		}
		if v == nil {
			return nil, errAt(n, path, "Mappings has no %s.%s.%s", keys[0], keys[1], keys[2])
		}
		return ev.eval(v, "Mappings."+strings.Join(keys[:], "."))
	case "Fn::Base64":
		s, err := ev.evalScalar(arg, path)
		if err != nil {
			return nil, err
		}
		return scalar(base64.StdEncoding.EncodeToString([]byte(s))), nil
	case "Fn::Length":
		elems, err := ev.evalList(arg, path, 0)
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(len(elems))}, nil
	case "Fn::ToJsonString":
		v, err := ev.eval(arg, path)
		if err != nil {
			return nil, err
		}
		a, err := toAny(v, path)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(a)
		if err != nil {
			return nil, errAt(arg, path, "%v", err)
		}
		return scalar(string(b)), nil
	case "Fn::GetAtt":
		return nil, errAt(n, path, "Fn::GetAtt %s has no value before the stack exists; it cannot be used in a table's properties", getAttName(arg))
	case "Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or", "Condition":
		return nil, errAt(n, path, "%s can be used only in Conditions (use Fn::If in properties)", fn)
	case "Fn::ImportValue", "Fn::GetAZs", "Fn::Cidr", "Fn::Transform", "Fn::ForEach":
		return nil, errAt(n, path, "%s cannot be evaluated outside AWS; it cannot be used in a table's properties", fn)
	}
	return nil, errAt(n, path, "unknown intrinsic function %s", fn)
}

func getAttName(arg *yaml.Node) string {
	arg = deref(arg)
	switch arg.Kind {
	case yaml.ScalarNode:
		return arg.Value
	case yaml.SequenceNode:
		var parts []string
		for _, c := range arg.Content {
			parts = append(parts, deref(c).Value)
		}
		return strings.Join(parts, ".")
	}
	return "(?)"
}

// ref evaluates Ref name.
func (ev *evaluator) ref(at *yaml.Node, name, path string) (*yaml.Node, error) {
	switch name {
	case "AWS::NoValue":
		return nil, errNoValue
	case "AWS::Region":
		return scalar(ev.opts.Region), nil
	case "AWS::AccountId":
		return scalar(ev.opts.AccountID), nil
	case "AWS::StackName":
		return scalar(ev.opts.StackName), nil
	case "AWS::StackId":
		return scalar("arn:aws:cloudformation:" + ev.opts.Region + ":" + ev.opts.AccountID + ":stack/" + ev.opts.StackName + "/tenantdb"), nil
	case "AWS::Partition":
		return scalar("aws"), nil
	case "AWS::URLSuffix":
		return scalar("amazonaws.com"), nil
	case "AWS::NotificationARNs":
		return sequence(nil), nil
	}
	if p, ok := ev.params[name]; ok {
		return ev.param(name, p)
	}
	if r := ev.resources.get(name); r != nil {
		return ev.tableNameOf(at, name, r, path)
	}
	return nil, errAt(at, path, "unresolved reference %s: no parameter, pseudo parameter or resource has that name", name)
}

// param returns the value of parameter name.
func (ev *evaluator) param(name string, decl *yaml.Node) (*yaml.Node, error) {
	path := "Parameters." + name
	d, err := mapping(decl, path)
	if err != nil {
		return nil, err
	}
	typ := "String"
	if t := d.get("Type"); t != nil {
		if typ, err = scalarString(t, path+".Type"); err != nil {
			return nil, err
		}
	}
	if strings.HasPrefix(typ, "AWS::SSM::Parameter::") {
		return nil, errAt(decl, path, "parameter %s is of type %s, which is read from AWS Systems Manager and cannot be resolved outside AWS", name, typ)
	}
	v, given := ev.opts.Parameters[name]
	if !given {
		def := d.get("Default")
		if def == nil {
			return nil, errAt(decl, path, "parameter %s has no Default; give it a value", name)
		}
		def = deref(def)
		switch def.Kind {
		case yaml.SequenceNode:
			var vs []string
			for _, c := range def.Content {
				vs = append(vs, deref(c).Value)
			}
			v = strings.Join(vs, ",")
		case yaml.ScalarNode:
			v = def.Value
		default:
			return nil, errAt(def, path+".Default", "expected a string, got %s", describe(def))
		}
	}
	list := typ == "CommaDelimitedList" || strings.HasPrefix(typ, "List<")
	if av := d.get("AllowedValues"); av != nil {
		av = deref(av)
		if av.Kind != yaml.SequenceNode {
			return nil, errAt(av, path+".AllowedValues", "expected a list, got %s", describe(av))
		}
		var allowed []string
		for _, c := range av.Content {
			allowed = append(allowed, deref(c).Value)
		}
		vals := []string{v}
		if list {
			vals = splitList(v)
		}
		for _, x := range vals {
			if !slices.Contains(allowed, x) {
				return nil, &Error{Path: path, Msg: fmt.Sprintf("parameter %s: value %q is not one of the AllowedValues %v", name, x, allowed)}
			}
		}
	}
	if typ == "Number" {
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return nil, &Error{Path: path, Msg: fmt.Sprintf("parameter %s is a Number; %q is not a number", name, v)}
		}
	}
	if list {
		return sequence(splitList(v)), nil
	}
	return scalar(v), nil
}

func splitList(v string) []string {
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// tableNameOf is Ref of a resource: for a table, its name.
func (ev *evaluator) tableNameOf(at *yaml.Node, id string, r *yaml.Node, path string) (*yaml.Node, error) {
	rm, err := mapping(r, "Resources."+id)
	if err != nil {
		return nil, err
	}
	typ, _ := scalarString(rm.get("Type"), "Resources."+id+".Type")
	if typ != TableType {
		return nil, errAt(at, path, "Ref %s: a %s has no value before the stack exists", id, typ)
	}
	if ev.tableNameBusy[id] {
		return nil, errAt(at, path, "Ref %s: circular reference", id)
	}
	ev.tableNameBusy[id] = true
	defer delete(ev.tableNameBusy, id)
	props := rm.get("Properties")
	if props == nil {
		return scalar(id), nil
	}
	pm, err := mapping(props, "Resources."+id+".Properties")
	if err != nil {
		return nil, err
	}
	tn := pm.get("TableName")
	if tn == nil {
		return scalar(id), nil
	}
	v, err := ev.evalScalar(tn, "Resources."+id+".Properties.TableName")
	if errors.Is(err, errNoValue) {
		return scalar(id), nil
	}
	if err != nil {
		return nil, err
	}
	return scalar(v), nil
}

// sub evaluates Fn::Sub.
func (ev *evaluator) sub(arg *yaml.Node, path string) (*yaml.Node, error) {
	arg = deref(arg)
	var tmpl *yaml.Node
	vars := map[string]*yaml.Node{}
	switch arg.Kind {
	case yaml.ScalarNode:
		tmpl = arg
	case yaml.SequenceNode:
		if len(arg.Content) != 2 {
			return nil, errAt(arg, path, "Fn::Sub takes a string or a list of a string and a mapping of variables, got a list of %d elements", len(arg.Content))
		}
		tmpl = deref(arg.Content[0])
		vm, err := mapping(arg.Content[1], path+"[1]")
		if err != nil {
			return nil, err
		}
		for _, p := range vm.pairs {
			vars[p.key] = p.val
		}
	default:
		return nil, errAt(arg, path, "Fn::Sub takes a string or a list of a string and a mapping of variables, got %s", describe(arg))
	}
	if tmpl.Kind != yaml.ScalarNode {
		return nil, errAt(tmpl, path, "Fn::Sub's template must be a string, got %s", describe(tmpl))
	}
	s := tmpl.Value
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i+2:]
		if strings.HasPrefix(s, "!") { // ${!Literal} is the text ${Literal}
			b.WriteString("${")
			s = s[1:]
			continue
		}
		j := strings.IndexByte(s, '}')
		if j < 0 {
			return nil, errAt(tmpl, path, "Fn::Sub: unterminated ${ in %q", tmpl.Value)
		}
		name := strings.TrimSpace(s[:j])
		s = s[j+1:]
		var v string
		var err error
		switch vn, ok := vars[name]; {
		case ok:
			v, err = ev.evalScalar(vn, path+"."+name)
		case strings.Contains(name, ".") && !strings.HasPrefix(name, "AWS::"):
			return nil, errAt(tmpl, path, "Fn::Sub: ${%s} is an attribute (Fn::GetAtt), which has no value before the stack exists", name)
		default:
			var r *yaml.Node
			r, err = ev.ref(tmpl, name, path)
			if err == nil && r.Kind != yaml.ScalarNode {
				err = errAt(tmpl, path, "Fn::Sub: ${%s} is a list, not a string", name)
			}
			if err == nil {
				v = r.Value
			}
		}
		if errors.Is(err, errNoValue) {
			return nil, errAt(tmpl, path, "Fn::Sub: ${%s} has no value", name)
		}
		if err != nil {
			return nil, err
		}
		b.WriteString(v)
	}
	return scalar(b.String()), nil
}

// condition evaluates the named condition of the Conditions section.
func (ev *evaluator) condition(name string, at *yaml.Node, path string) (bool, error) {
	if v, ok := ev.conds[name]; ok {
		return v, nil
	}
	def := ev.conditions.get(name)
	if def == nil {
		return false, errAt(at, path, "condition %s is not defined in Conditions", name)
	}
	if ev.condBusy[name] {
		return false, errAt(at, path, "condition %s refers to itself", name)
	}
	ev.condBusy[name] = true
	defer delete(ev.condBusy, name)
	v, err := ev.condExpr(def, "Conditions."+name)
	if err != nil {
		return false, err
	}
	ev.conds[name] = v
	return v, nil
}

// condExpr evaluates a condition function.
func (ev *evaluator) condExpr(n *yaml.Node, path string) (bool, error) {
	fn, arg, ok := intrinsic(n)
	if !ok {
		return false, errAt(n, path, "a condition is Fn::Equals, Fn::Not, Fn::And, Fn::Or or Condition, got %s", describe(n))
	}
	path += "." + fn
	switch fn {
	case "Condition":
		a := deref(arg)
		if a.Kind != yaml.ScalarNode {
			return false, errAt(a, path, "Condition takes a condition name, got %s", describe(a))
		}
		return ev.condition(a.Value, a, path)
	case "Fn::Equals":
		args, err := rawList(arg, path, fn, 2, 2)
		if err != nil {
			return false, err
		}
		a, err := ev.eval(args[0], path+"[0]")
		if err != nil {
			return false, err
		}
		b, err := ev.eval(args[1], path+"[1]")
		if err != nil {
			return false, err
		}
		av, err := toAny(a, path)
		if err != nil {
			return false, err
		}
		bv, err := toAny(b, path)
		if err != nil {
			return false, err
		}
		return fmt.Sprint(av) == fmt.Sprint(bv), nil
	case "Fn::Not":
		args, err := rawList(arg, path, fn, 1, 1)
		if err != nil {
			return false, err
		}
		v, err := ev.condExpr(args[0], path+"[0]")
		return !v, err
	case "Fn::And", "Fn::Or":
		args, err := rawList(arg, path, fn, 2, 10)
		if err != nil {
			return false, err
		}
		and := fn == "Fn::And"
		res := and
		for i, a := range args {
			v, err := ev.condExpr(a, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return false, err
			}
			if and {
				res = res && v
			} else {
				res = res || v
			}
		}
		return res, nil
	}
	return false, errAt(n, path, "%s is not a condition function", fn)
}

// toAny converts an evaluated node to plain Go values (string, bool,
// json.Number, []any, map[string]any) for JSON.
func toAny(n *yaml.Node, path string) (any, error) {
	n = deref(n)
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return nil, nil
		case "!!bool":
			return strings.EqualFold(n.Value, "true"), nil
		case "!!int", "!!float":
			return json.Number(n.Value), nil
		}
		return n.Value, nil
	case yaml.SequenceNode:
		out := []any{}
		for i, c := range n.Content {
			v, err := toAny(c, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		m, err := mapping(n, path)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, p := range m.pairs {
			v, err := toAny(p.val, path+"."+p.key)
			if err != nil {
				return nil, err
			}
			out[p.key] = v
		}
		return out, nil
	}
	return nil, errAt(n, path, "unexpected YAML node")
}
