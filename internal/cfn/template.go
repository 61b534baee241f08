// Package cfn reads the AWS::DynamoDB::Table resources of a CloudFormation
// template (YAML or JSON) into DynamoDB CreateTable requests, and applies
// them idempotently through the DynamoDB API (see Apply).
//
// Templates are read the way CloudFormation reads them: the short-form
// tags (!Ref, !GetAtt, !Sub, !If, ...) and their long forms ({"Ref": ...},
// {"Fn::Sub": ...}) are understood everywhere; inside a table's
// properties the intrinsics that can be known before a stack exists are
// evaluated (Ref of parameters, pseudo parameters and other tables,
// Fn::Sub, Fn::Join, Fn::Select, Fn::Split, Fn::If with Conditions,
// Fn::FindInMap, Fn::Base64, Fn::Length, AWS::NoValue). Fn::GetAtt,
// Fn::ImportValue and the like are accepted in the rest of the template
// (Outputs) but are an error inside a table's properties, where no value
// can stand in for them.
package cfn

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tenantdb/tenantdb/internal/wire"
)

// TableType is the resource type Parse reads.
const TableType = "AWS::DynamoDB::Table"

// Options are the values a stack would have: parameter values and pseudo
// parameters. The zero value uses the parameters' defaults.
type Options struct {
	// Parameters overrides the template's parameter defaults.
	Parameters map[string]string
	// StackName is AWS::StackName; "" means "tenantdb".
	StackName string
	// Region is AWS::Region; "" means "us-east-1".
	Region string
	// AccountID is AWS::AccountId; "" means "000000000000".
	AccountID string
}

// Table is one AWS::DynamoDB::Table resource.
type Table struct {
	// LogicalID is the resource's name in the template.
	LogicalID string
	// CreateTable is the request that creates the table. A resource
	// without TableName gets its logical id as the name (CloudFormation
	// would generate one; a fixed name keeps apply idempotent).
	CreateTable wire.CreateTableInput
	// TimeToLive is the resource's TimeToLiveSpecification, nil if it has
	// none; Apply enables it with UpdateTimeToLive after CreateTable.
	TimeToLive *wire.TimeToLiveSpecification
}

// Template is what Parse read.
type Template struct {
	// Tables are the AWS::DynamoDB::Table resources in template order,
	// without those whose Condition is false.
	Tables []Table
	// Warnings name what was read but has no effect on tenantdb
	// (properties such as PointInTimeRecoverySpecification, resources of
	// other DynamoDB types).
	Warnings []string
}

// Error is a problem in a template, with its position.
type Error struct {
	Line, Column int
	Path         string // e.g. Resources.AppDataTable.Properties.KeySchema
	Msg          string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("cfn: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func errAt(n *yaml.Node, path, format string, args ...any) *Error {
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// Parse reads the AWS::DynamoDB::Table resources of a CloudFormation
// template in YAML or JSON. Errors are *Error for a template that is not
// valid (not YAML/JSON, no Resources, a table property of the wrong
// shape, an unknown property, an intrinsic that cannot be evaluated); the
// server, not Parse, judges whether a table definition is valid DynamoDB.
func Parse(data []byte, opts Options) (*Template, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, &Error{Msg: "not a YAML or JSON template: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, errAt(&extra, "", "a template is one YAML document; found a second one")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, errAt(root, "", "a template is a mapping with a Resources section")
	}
	top, err := mapping(root, "")
	if err != nil {
		return nil, err
	}
	for _, kv := range top.pairs {
		if !slices.Contains(sections, kv.key) {
			return nil, errAt(kv.keyNode, "", "invalid template section %s (expected %s)", kv.key, strings.Join(sections, ", "))
		}
	}
	if err := checkTags(root, ""); err != nil {
		return nil, err
	}
	ev := &evaluator{opts: opts, conds: map[string]bool{}, condBusy: map[string]bool{}, tableNameBusy: map[string]bool{}}
	if ev.opts.StackName == "" {
		ev.opts.StackName = "tenantdb"
	}
	if ev.opts.Region == "" {
		ev.opts.Region = "us-east-1"
	}
	if ev.opts.AccountID == "" {
		ev.opts.AccountID = "000000000000"
	}
	ev.params = map[string]*yaml.Node{}
	if p := top.get("Parameters"); p != nil {
		params, err := mapping(p, "Parameters")
		if err != nil {
			return nil, err
		}
		for _, kv := range params.pairs {
			ev.params[kv.key] = kv.val
		}
	}
	for name := range opts.Parameters {
		if _, ok := ev.params[name]; !ok {
			return nil, &Error{Path: "Parameters", Msg: fmt.Sprintf("parameter %s is given a value but the template does not declare it", name)}
		}
	}
	if c := top.get("Conditions"); c != nil {
		if ev.conditions, err = mapping(c, "Conditions"); err != nil {
			return nil, err
		}
	}
	if m := top.get("Mappings"); m != nil {
		if ev.mappings, err = mapping(m, "Mappings"); err != nil {
			return nil, err
		}
	}
	res := top.get("Resources")
	if res == nil {
		return nil, errAt(root, "", "the template has no Resources section")
	}
	if ev.resources, err = mapping(res, "Resources"); err != nil {
		return nil, err
	}

	t := &Template{}
	for _, kv := range ev.resources.pairs {
		path := "Resources." + kv.key
		r, err := mapping(kv.val, path)
		if err != nil {
			return nil, err
		}
		typ, err := scalarString(r.get("Type"), path+".Type")
		if err != nil {
			return nil, err
		}
		if typ != TableType {
			if strings.HasPrefix(typ, "AWS::DynamoDB::") || typ == "AWS::Serverless::SimpleTable" {
				t.Warnings = append(t.Warnings, fmt.Sprintf("%s: resource type %s is not read (only %s)", path, typ, TableType))
			}
			continue
		}
		if c := r.get("Condition"); c != nil {
			name, err := scalarString(c, path+".Condition")
			if err != nil {
				return nil, err
			}
			ok, err := ev.condition(name, c, path+".Condition")
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
		}
		tbl, warns, err := ev.table(kv.key, r)
		if err != nil {
			return nil, err
		}
		t.Tables = append(t.Tables, tbl)
		t.Warnings = append(t.Warnings, warns...)
	}
	return t, nil
}

// sections are the top-level sections of a template.
var sections = []string{"AWSTemplateFormatVersion", "Description", "Metadata", "Parameters", "Rules",
	"Mappings", "Conditions", "Transform", "Resources", "Outputs"}

// pair is one entry of a mapping.
type pair struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

// mapNode is a mapping node's entries in order.
type mapNode struct {
	node  *yaml.Node
	pairs []pair
}

func (m *mapNode) get(key string) *yaml.Node {
	if m == nil {
		return nil
	}
	for _, p := range m.pairs {
		if p.key == key {
			return p.val
		}
	}
	return nil
}

// deref follows YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapping reads a mapping node, rejecting duplicate keys as CloudFormation
// does.
func mapping(n *yaml.Node, path string) (*mapNode, error) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, errAt(n, path, "expected a mapping, got %s", describe(n))
	}
	if n.Tag != "" && n.Tag != "!!map" {
		return nil, errAt(n, path, "expected a mapping, got %s", describe(n))
	}
	m := &mapNode{node: n}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k.Kind != yaml.ScalarNode {
			return nil, errAt(k, path, "mapping keys must be strings")
		}
		if k.Value == "<<" && k.Tag == "!!merge" {
			return nil, errAt(k, path, "YAML merge keys (<<) are not supported by CloudFormation")
		}
		if seen[k.Value] {
			return nil, errAt(k, path, "duplicate key %s", k.Value)
		}
		seen[k.Value] = true
		m.pairs = append(m.pairs, pair{key: k.Value, keyNode: k, val: n.Content[i+1]})
	}
	return m, nil
}

// describe names a node's kind for error messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "nothing"
	}
	if fn, _, ok := intrinsic(n); ok {
		return fn
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an unexpected node"
}

// shortForms maps CloudFormation's YAML short-form tags to the long-form
// function names.
var shortForms = map[string]string{
	"!Ref":          "Ref",
	"!Condition":    "Condition",
	"!Base64":       "Fn::Base64",
	"!Cidr":         "Fn::Cidr",
	"!FindInMap":    "Fn::FindInMap",
	"!ForEach":      "Fn::ForEach",
	"!GetAtt":       "Fn::GetAtt",
	"!GetAZs":       "Fn::GetAZs",
	"!ImportValue":  "Fn::ImportValue",
	"!Join":         "Fn::Join",
	"!Length":       "Fn::Length",
	"!Select":       "Fn::Select",
	"!Split":        "Fn::Split",
	"!Sub":          "Fn::Sub",
	"!ToJsonString": "Fn::ToJsonString",
	"!Transform":    "Fn::Transform",
	"!And":          "Fn::And",
	"!Equals":       "Fn::Equals",
	"!If":           "Fn::If",
	"!Not":          "Fn::Not",
	"!Or":           "Fn::Or",
}

// checkTags rejects local tags CloudFormation does not define, anywhere
// in the template (as CloudFormation's parser does).
func checkTags(n *yaml.Node, path string) error {
	if n == nil || n.Kind == yaml.AliasNode {
		return nil
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		if _, ok := shortForms[n.Tag]; !ok {
			return errAt(n, path, "unknown tag %s", n.Tag)
		}
	}
	for _, c := range n.Content {
		if err := checkTags(c, path); err != nil {
			return err
		}
	}
	return nil
}

// intrinsic reports whether n is an intrinsic function call, in short
// (!Sub x) or long ({"Fn::Sub": x}) form, and returns its name and
// argument. For the short form the argument is a copy of n without the
// tag.
func intrinsic(n *yaml.Node) (fn string, arg *yaml.Node, ok bool) {
	n = deref(n)
	if n == nil {
		return "", nil, false
	}
	if name, ok := shortForms[n.Tag]; ok {
		c := *n
		c.Tag = ""
		switch c.Kind {
		case yaml.ScalarNode:
			c.Tag = "!!str"
		case yaml.SequenceNode:
			c.Tag = "!!seq"
		case yaml.MappingNode:
			c.Tag = "!!map"
		}
		return name, &c, true
	}
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		k := deref(n.Content[0])
		if k.Kind == yaml.ScalarNode && (k.Value == "Ref" || k.Value == "Condition" || strings.HasPrefix(k.Value, "Fn::")) {
			return k.Value, n.Content[1], true
		}
	}
	return "", nil, false
}

// errNoValue marks a value that is !Ref AWS::NoValue: the property is
// treated as absent.
var errNoValue = errors.New("cfn: AWS::NoValue")
