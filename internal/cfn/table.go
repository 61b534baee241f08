package cfn

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tenantdb/tenantdb/internal/wire"
)

// resourceAttributes are the keys a resource may have besides Type.
var resourceAttributes = []string{"Type", "Properties", "Condition", "DependsOn", "DeletionPolicy",
	"UpdateReplacePolicy", "Metadata", "UpdatePolicy", "CreationPolicy"}

// noEffect are table properties tenantdb reads but has no use for.
// Properties that would promise a protection tenantdb does not give
// (point-in-time recovery, encryption at rest) are not here: enabled,
// they are refused (see table).
var noEffect = map[string]string{
	"ContributorInsightsSpecification": "tenantdb has no CloudWatch Contributor Insights",
	"KinesisStreamSpecification":       "tenantdb has no Kinesis streaming destination",
}

// table reads one AWS::DynamoDB::Table resource.
func (ev *evaluator) table(id string, r *mapNode) (Table, []string, error) {
	path := "Resources." + id
	for _, p := range r.pairs {
		if !slices.Contains(resourceAttributes, p.key) {
			return Table{}, nil, errAt(p.keyNode, path, "invalid resource attribute %s", p.key)
		}
	}
	t := Table{LogicalID: id}
	var warns []string
	propsNode := r.get("Properties")
	if propsNode == nil {
		return t, nil, errAt(r.node, path, "a table needs Properties (at least KeySchema and AttributeDefinitions)")
	}
	path += ".Properties"
	pv, err := ev.eval(propsNode, path)
	if err != nil {
		return t, nil, err
	}
	props, err := mapping(pv, path)
	if err != nil {
		return t, nil, err
	}
	in := &t.CreateTable
	for _, p := range props.pairs {
		pp := path + "." + p.key
		switch p.key {
		case "TableName":
			in.TableName, err = scalarString(p.val, pp)
		case "BillingMode":
			in.BillingMode, err = scalarString(p.val, pp)
		case "TableClass":
			in.TableClass, err = scalarString(p.val, pp)
		case "AttributeDefinitions":
			in.AttributeDefinitions, err = attributeDefinitions(p.val, pp)
		case "KeySchema":
			in.KeySchema, err = keySchema(p.val, pp)
		case "ProvisionedThroughput":
			in.ProvisionedThroughput, err = throughput(p.val, pp)
		case "GlobalSecondaryIndexes":
			in.GlobalSecondaryIndexes, warns, err = gsis(p.val, pp, warns)
		case "LocalSecondaryIndexes":
			in.LocalSecondaryIndexes, err = lsis(p.val, pp)
		case "StreamSpecification":
			in.StreamSpecification, warns, err = streamSpec(p.val, pp, warns)
		case "Tags":
			in.Tags, err = tags(p.val, pp)
		case "TimeToLiveSpecification":
			t.TimeToLive, err = ttlSpec(p.val, pp)
		case "DeletionProtectionEnabled":
			var b bool
			if b, err = boolean(p.val, pp); err == nil {
				in.DeletionProtectionEnabled = &b
			}
		case "SSESpecification":
			in.SSESpecification, err = sseSpec(p.val, pp)
		case "PointInTimeRecoverySpecification":
			err = pitrSpec(p.val, pp)
		case "OnDemandThroughput":
			in.OnDemandThroughput, err = rawObject(p.val, pp, map[string]string{"MaxReadRequestUnits": "int", "MaxWriteRequestUnits": "int"}, nil)
		case "WarmThroughput":
			in.WarmThroughput, err = rawObject(p.val, pp, map[string]string{"ReadUnitsPerSecond": "int", "WriteUnitsPerSecond": "int"}, nil)
		case "ResourcePolicy":
			in.ResourcePolicy, err = resourcePolicy(p.val, pp)
		case "ImportSourceSpecification":
			err = errAt(p.keyNode, pp, "importing a table from S3 is not supported; create the table and load the data with BatchWriteItem")
		default:
			if why, ok := noEffect[p.key]; ok {
				warns = append(warns, fmt.Sprintf("%s: ignored (%s)", pp, why))
				continue
			}
			err = errAt(p.keyNode, path, "unsupported property %s", p.key)
		}
		if err != nil {
			return t, nil, err
		}
	}
	if in.KeySchema == nil {
		return t, nil, errAt(props.node, path, "required property KeySchema is missing")
	}
	if in.TableName == "" {
		in.TableName = id
	}
	return t, warns, nil
}

// object reads a mapping whose keys must be among allowed; required keys
// must be present.
func object(n *yaml.Node, path string, allowed []string, required ...string) (*mapNode, error) {
	m, err := mapping(n, path)
	if err != nil {
		return nil, err
	}
	for _, p := range m.pairs {
		if !slices.Contains(allowed, p.key) {
			return nil, errAt(p.keyNode, path, "unsupported property %s (expected %s)", p.key, strings.Join(allowed, ", "))
		}
	}
	for _, r := range required {
		if m.get(r) == nil {
			return nil, errAt(m.node, path, "required property %s is missing", r)
		}
	}
	return m, nil
}

func list(n *yaml.Node, path string) ([]*yaml.Node, error) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, errAt(n, path, "expected a list, got %s", describe(n))
	}
	return n.Content, nil
}

// scalarString reads a string; numbers and booleans are their text, as
// CloudFormation converts them.
func scalarString(n *yaml.Node, path string) (string, error) {
	n = deref(n)
	if n == nil {
		return "", errAt(nil, path, "missing value")
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", errAt(n, path, "expected a string, got %s", describe(n))
	}
	return n.Value, nil
}

func boolean(n *yaml.Node, path string) (bool, error) {
	s, err := scalarString(n, path)
	if err != nil {
		return false, err
	}
	switch strings.ToLower(s) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errAt(n, path, "expected true or false, got %q", s)
}

func integer(n *yaml.Node, path string) (int64, error) {
	s, err := scalarString(n, path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errAt(n, path, "expected an integer, got %q", s)
	}
	return v, nil
}

func attributeDefinitions(n *yaml.Node, path string) ([]wire.AttributeDefinition, error) {
	elems, err := list(n, path)
	if err != nil {
		return nil, err
	}
	out := []wire.AttributeDefinition{}
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := object(e, p, []string{"AttributeName", "AttributeType"}, "AttributeName", "AttributeType")
		if err != nil {
			return nil, err
		}
		var d wire.AttributeDefinition
		if d.AttributeName, err = scalarString(m.get("AttributeName"), p+".AttributeName"); err != nil {
			return nil, err
		}
		if d.AttributeType, err = scalarString(m.get("AttributeType"), p+".AttributeType"); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func keySchema(n *yaml.Node, path string) ([]wire.KeySchemaElement, error) {
	elems, err := list(n, path)
	if err != nil {
		return nil, err
	}
	out := []wire.KeySchemaElement{}
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := object(e, p, []string{"AttributeName", "KeyType"}, "AttributeName", "KeyType")
		if err != nil {
			return nil, err
		}
		var k wire.KeySchemaElement
		if k.AttributeName, err = scalarString(m.get("AttributeName"), p+".AttributeName"); err != nil {
			return nil, err
		}
		if k.KeyType, err = scalarString(m.get("KeyType"), p+".KeyType"); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func throughput(n *yaml.Node, path string) (*wire.ProvisionedThroughput, error) {
	m, err := object(n, path, []string{"ReadCapacityUnits", "WriteCapacityUnits"}, "ReadCapacityUnits", "WriteCapacityUnits")
	if err != nil {
		return nil, err
	}
	r, err := integer(m.get("ReadCapacityUnits"), path+".ReadCapacityUnits")
	if err != nil {
		return nil, err
	}
	w, err := integer(m.get("WriteCapacityUnits"), path+".WriteCapacityUnits")
	if err != nil {
		return nil, err
	}
	return &wire.ProvisionedThroughput{ReadCapacityUnits: &r, WriteCapacityUnits: &w}, nil
}

func projection(n *yaml.Node, path string) (*wire.Projection, error) {
	m, err := object(n, path, []string{"ProjectionType", "NonKeyAttributes"})
	if err != nil {
		return nil, err
	}
	p := &wire.Projection{}
	if v := m.get("ProjectionType"); v != nil {
		if p.ProjectionType, err = scalarString(v, path+".ProjectionType"); err != nil {
			return nil, err
		}
	}
	if v := m.get("NonKeyAttributes"); v != nil {
		elems, err := list(v, path+".NonKeyAttributes")
		if err != nil {
			return nil, err
		}
		p.NonKeyAttributes = []string{}
		for i, e := range elems {
			s, err := scalarString(e, fmt.Sprintf("%s.NonKeyAttributes[%d]", path, i))
			if err != nil {
				return nil, err
			}
			p.NonKeyAttributes = append(p.NonKeyAttributes, s)
		}
	}
	return p, nil
}

func gsis(n *yaml.Node, path string, warns []string) ([]wire.GlobalSecondaryIndex, []string, error) {
	elems, err := list(n, path)
	if err != nil {
		return nil, nil, err
	}
	var out []wire.GlobalSecondaryIndex
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := object(e, p, []string{"IndexName", "KeySchema", "Projection", "ProvisionedThroughput",
			"OnDemandThroughput", "WarmThroughput", "ContributorInsightsSpecification"}, "IndexName", "KeySchema", "Projection")
		if err != nil {
			return nil, nil, err
		}
		var g wire.GlobalSecondaryIndex
		if g.IndexName, err = scalarString(m.get("IndexName"), p+".IndexName"); err != nil {
			return nil, nil, err
		}
		if g.KeySchema, err = keySchema(m.get("KeySchema"), p+".KeySchema"); err != nil {
			return nil, nil, err
		}
		if g.Projection, err = projection(m.get("Projection"), p+".Projection"); err != nil {
			return nil, nil, err
		}
		if v := m.get("ProvisionedThroughput"); v != nil {
			if g.ProvisionedThroughput, err = throughput(v, p+".ProvisionedThroughput"); err != nil {
				return nil, nil, err
			}
		}
		if v := m.get("OnDemandThroughput"); v != nil {
			if g.OnDemandThroughput, err = rawObject(v, p+".OnDemandThroughput", map[string]string{"MaxReadRequestUnits": "int", "MaxWriteRequestUnits": "int"}, nil); err != nil {
				return nil, nil, err
			}
		}
		if v := m.get("WarmThroughput"); v != nil {
			if g.WarmThroughput, err = rawObject(v, p+".WarmThroughput", map[string]string{"ReadUnitsPerSecond": "int", "WriteUnitsPerSecond": "int"}, nil); err != nil {
				return nil, nil, err
			}
		}
		if m.get("ContributorInsightsSpecification") != nil {
			warns = append(warns, fmt.Sprintf("%s.ContributorInsightsSpecification: ignored (%s)", p, noEffect["ContributorInsightsSpecification"]))
		}
		out = append(out, g)
	}
	return out, warns, nil
}

func lsis(n *yaml.Node, path string) ([]wire.LocalSecondaryIndex, error) {
	elems, err := list(n, path)
	if err != nil {
		return nil, err
	}
	var out []wire.LocalSecondaryIndex
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := object(e, p, []string{"IndexName", "KeySchema", "Projection"}, "IndexName", "KeySchema", "Projection")
		if err != nil {
			return nil, err
		}
		var l wire.LocalSecondaryIndex
		if l.IndexName, err = scalarString(m.get("IndexName"), p+".IndexName"); err != nil {
			return nil, err
		}
		if l.KeySchema, err = keySchema(m.get("KeySchema"), p+".KeySchema"); err != nil {
			return nil, err
		}
		if l.Projection, err = projection(m.get("Projection"), p+".Projection"); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

func streamSpec(n *yaml.Node, path string, warns []string) (*wire.StreamSpecification, []string, error) {
	m, err := object(n, path, []string{"StreamViewType", "ResourcePolicy"}, "StreamViewType")
	if err != nil {
		return nil, nil, err
	}
	vt, err := scalarString(m.get("StreamViewType"), path+".StreamViewType")
	if err != nil {
		return nil, nil, err
	}
	if m.get("ResourcePolicy") != nil {
		warns = append(warns, path+".ResourcePolicy: ignored (stream resource policies are IAM's; tenantdb scopes streams by tenant)")
	}
	// NB: in CloudFormation a StreamSpecification enables the stream.
	enabled := true
	return &wire.StreamSpecification{StreamEnabled: &enabled, StreamViewType: vt}, warns, nil
}

// pitrSpec reads PointInTimeRecoverySpecification: disabled is what every
// new table is; enabled is refused, because point-in-time recovery is
// each tenant's own (UpdateContinuousBackups with the tenant's key), not
// a setting of the shared table the operator applies.
func pitrSpec(n *yaml.Node, path string) error {
	m, err := object(n, path, []string{"PointInTimeRecoveryEnabled", "RecoveryPeriodInDays"})
	if err != nil {
		return err
	}
	if v := m.get("RecoveryPeriodInDays"); v != nil {
		if _, err := integer(v, path+".RecoveryPeriodInDays"); err != nil {
			return err
		}
	}
	if v := m.get("PointInTimeRecoveryEnabled"); v != nil {
		on, err := boolean(v, path+".PointInTimeRecoveryEnabled")
		if err != nil {
			return err
		}
		if on {
			return errAt(v, path+".PointInTimeRecoveryEnabled", "point-in-time recovery is per tenant in tenantdb: each tenant turns it on for its view with UpdateContinuousBackups; set PointInTimeRecoveryEnabled to false or remove the property")
		}
	}
	return nil
}

func tags(n *yaml.Node, path string) ([]wire.Tag, error) {
	elems, err := list(n, path)
	if err != nil {
		return nil, err
	}
	out := []wire.Tag{}
	for i, e := range elems {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, err := object(e, p, []string{"Key", "Value"}, "Key", "Value")
		if err != nil {
			return nil, err
		}
		var t wire.Tag
		if t.Key, err = scalarString(m.get("Key"), p+".Key"); err != nil {
			return nil, err
		}
		if t.Value, err = scalarString(m.get("Value"), p+".Value"); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func ttlSpec(n *yaml.Node, path string) (*wire.TimeToLiveSpecification, error) {
	m, err := object(n, path, []string{"AttributeName", "Enabled"}, "Enabled")
	if err != nil {
		return nil, err
	}
	spec := &wire.TimeToLiveSpecification{}
	if spec.Enabled, err = boolean(m.get("Enabled"), path+".Enabled"); err != nil {
		return nil, err
	}
	if v := m.get("AttributeName"); v != nil {
		if spec.AttributeName, err = scalarString(v, path+".AttributeName"); err != nil {
			return nil, err
		}
	}
	if spec.Enabled && spec.AttributeName == "" {
		return nil, errAt(m.node, path, "AttributeName is required when Enabled is true")
	}
	return spec, nil
}

// sseSpec maps CloudFormation's SSESpecification (SSEEnabled) to the
// API's (Enabled). Every table is encrypted under its tenants' data keys
// (see internal/engine/sse.go); a KMS key is refused, as there is none.
func sseSpec(n *yaml.Node, path string) (json.RawMessage, error) {
	raw, err := rawObject(n, path, map[string]string{"SSEEnabled": "bool", "SSEType": "string", "KMSMasterKeyId": "string"},
		map[string]string{"SSEEnabled": "Enabled"})
	if err != nil {
		return nil, err
	}
	var spec struct{ SSEType, KMSMasterKeyId string }
	if json.Unmarshal(raw, &spec) == nil && (spec.SSEType == "KMS" || spec.KMSMasterKeyId != "") {
		return nil, errAt(n, path, "tenantdb has no KMS keys; every table is encrypted at rest (AES-256-GCM) under each tenant's own data key; remove SSEType and KMSMasterKeyId")
	}
	return raw, nil
}

// rawObject reads a mapping of scalar members of the given kinds ("int",
// "bool", "string") into a JSON object, renaming members as rename says.
func rawObject(n *yaml.Node, path string, members, rename map[string]string) (json.RawMessage, error) {
	allowed := make([]string, 0, len(members))
	for k := range members {
		allowed = append(allowed, k)
	}
	slices.Sort(allowed)
	m, err := object(n, path, allowed)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, p := range m.pairs {
		name := p.key
		if r, ok := rename[name]; ok {
			name = r
		}
		var v any
		switch members[p.key] {
		case "int":
			v, err = integer(p.val, path+"."+p.key)
		case "bool":
			v, err = boolean(p.val, path+"."+p.key)
		default:
			v, err = scalarString(p.val, path+"."+p.key)
		}
		if err != nil {
			return nil, err
		}
		out[name] = v
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, errAt(n, path, "%v", err)
	}
	return b, nil
}

// resourcePolicy turns ResourcePolicy.PolicyDocument into the API's JSON
// string.
func resourcePolicy(n *yaml.Node, path string) (string, error) {
	m, err := object(n, path, []string{"PolicyDocument"}, "PolicyDocument")
	if err != nil {
		return "", err
	}
	doc := deref(m.get("PolicyDocument"))
	if doc.Kind == yaml.ScalarNode {
		return doc.Value, nil
	}
	v, err := toAny(doc, path+".PolicyDocument")
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "", errors.Join(errAt(doc, path, "policy document is not JSON"), err)
	}
	return string(b), nil
}
