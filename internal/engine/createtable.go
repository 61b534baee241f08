package engine

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"

	"github.com/tenantdb/tenantdb/internal/apierr"
	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/resolve"
	"github.com/tenantdb/tenantdb/internal/schema"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// DynamoDB's per-table limits.
const (
	maxLSIs           = 5
	maxGSIs           = 20
	maxProjectedAttrs = 100
)

// CreateTable creates a table. The operator creates shared tables, which
// every tenant sees (each only its own items); a tenant admin creates
// tables in its own namespace, invisible to everyone else. Tags
// tenantdb:isolation and tenantdb:leading-key-pattern choose the table's
// isolation mode. Errors: ValidationException for an invalid definition,
// ResourceInUseException if the name is taken (for a tenant, also by a
// shared table), LimitExceededException when the tenant environment
// already owns Options.MaxTenantTables tables, AccessDeniedException for
// other roles.
func (e *Engine) CreateTable(ctx context.Context, s tenancy.Scope, in *wire.CreateTableInput) (*wire.CreateTableOutput, error) {
	if err := check(ctx, s); err != nil {
		return nil, err
	}
	if err := e.res.MayCreate(s, in.TableName); err != nil {
		return nil, err
	}
	t, err := e.buildTable(in)
	if err != nil {
		return nil, err
	}

	e.ddl.Lock()
	defer e.ddl.Unlock()
	if err := e.res.AdmitCreate(ctx, s, t); err != nil {
		return nil, err
	}
	if t.ID, err = e.nextTableID(); err != nil {
		return nil, err
	}
	t.Created = e.opts.Now()
	if t.BillingMode == "PAY_PER_REQUEST" {
		t.OnDemandSince = t.Created
	}
	for _, ix := range t.Indexes {
		ix.Created = t.Created
	}
	if e.opts.Streams && specEnabled(t.Stream) {
		if err := e.newStream(t, t.Stream); err != nil {
			return nil, err
		}
	}
	if err := e.persist(t); err != nil {
		return nil, err
	}
	return &wire.CreateTableOutput{TableDescription: e.describe(t, nil)}, nil
}

// buildTable validates a CreateTable request as DynamoDB does and returns
// the new table's definition (without id, owner and times).
func (e *Engine) buildTable(in *wire.CreateTableInput) (*schema.Table, error) {
	if err := schema.ValidateTableName(in.TableName); err != nil {
		return nil, err
	}
	defs, err := checkAttrDefs(in.AttributeDefinitions)
	if err != nil {
		return nil, err
	}
	billing, err := checkBillingMode(in.BillingMode)
	if err != nil {
		return nil, err
	}
	if billing == "" {
		billing = "PROVISIONED"
	}
	t := &schema.Table{
		UUID:        newUUID(),
		Name:        in.TableName,
		Status:      "ACTIVE",
		AttrDefs:    append([]wire.AttributeDefinition(nil), in.AttributeDefinitions...),
		BillingMode: billing,
		TableClass:  in.TableClass,
		NextIndexNo: 1,
	}
	if in.TableClass != "" && in.TableClass != "STANDARD" && in.TableClass != "STANDARD_INFREQUENT_ACCESS" {
		return nil, enumErr(in.TableClass, "tableClass", "STANDARD, STANDARD_INFREQUENT_ACCESS")
	}
	if t.ReadCapacity, t.WriteCapacity, err = checkThroughput(billing, in.ProvisionedThroughput, "provisionedThroughput"); err != nil {
		return nil, err
	}
	if len(in.KeySchema) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'keySchema' failed to satisfy constraint: Member must not be null")
	}
	if t.Hash, t.Range, err = checkKeySchema(in.KeySchema, defs, "keySchema"); err != nil {
		return nil, err
	}
	if in.LocalSecondaryIndexes == nil && in.GlobalSecondaryIndexes == nil && len(in.KeySchema) != len(in.AttributeDefinitions) {
		return nil, apierr.Validationf("One or more parameter values were invalid: Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	}

	names := map[string]bool{}
	projected := 0
	if in.LocalSecondaryIndexes != nil {
		if len(in.LocalSecondaryIndexes) == 0 {
			return nil, apierr.Validationf("One or more parameter values were invalid: List of LocalSecondaryIndexes is empty")
		}
		if t.Range.Name == "" {
			return nil, apierr.Validationf("One or more parameter values were invalid: Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex")
		}
		for i, l := range in.LocalSecondaryIndexes {
			field := fmt.Sprintf("localSecondaryIndexes.%d.member", i+1)
			ix, err := checkIndex(l.IndexName, l.KeySchema, l.Projection, defs, field)
			if err != nil {
				return nil, err
			}
			if ix.Range.Name == "" {
				return nil, apierr.Validationf("One or more parameter values were invalid: Index KeySchema does not have a range key for index: %s", l.IndexName)
			}
			if ix.Hash.Name != t.Hash.Name {
				return nil, apierr.Validationf("One or more parameter values were invalid: Index KeySchema does not have the same leading hash key as table KeySchema for index: %s. index hash key: %s, table hash key: %s", l.IndexName, ix.Hash.Name, t.Hash.Name)
			}
			if names[ix.Name] {
				return nil, apierr.Validationf("One or more parameter values were invalid: Duplicate index name: %s", ix.Name)
			}
			names[ix.Name] = true
			projected += len(ix.NonKey)
			ix.Local = true
			ix.Status = "ACTIVE"
			ix.No = t.NextIndexNo
			t.NextIndexNo++
			t.Indexes = append(t.Indexes, ix)
		}
		if len(in.LocalSecondaryIndexes) > maxLSIs {
			return nil, apierr.Validationf("One or more parameter values were invalid: Number of LocalSecondaryIndexes exceeds per-table limit of %d", maxLSIs)
		}
	}
	if in.GlobalSecondaryIndexes != nil {
		if len(in.GlobalSecondaryIndexes) == 0 {
			return nil, apierr.Validationf("One or more parameter values were invalid: List of GlobalSecondaryIndexes is empty")
		}
		for i, g := range in.GlobalSecondaryIndexes {
			field := fmt.Sprintf("globalSecondaryIndexes.%d.member", i+1)
			ix, err := checkIndex(g.IndexName, g.KeySchema, g.Projection, defs, field)
			if err != nil {
				return nil, err
			}
			if ix.ReadCapacity, ix.WriteCapacity, err = checkIndexThroughput(billing, g.ProvisionedThroughput, g.IndexName, field); err != nil {
				return nil, err
			}
			if names[ix.Name] {
				return nil, apierr.Validationf("One or more parameter values were invalid: Duplicate index name: %s", ix.Name)
			}
			names[ix.Name] = true
			projected += len(ix.NonKey)
			ix.Status = "ACTIVE"
			ix.No = t.NextIndexNo
			t.NextIndexNo++
			t.Indexes = append(t.Indexes, ix)
		}
		if len(in.GlobalSecondaryIndexes) > maxGSIs {
			return nil, apierr.Validationf("One or more parameter values were invalid: GlobalSecondaryIndex count exceeds the per-table limit of %d", maxGSIs)
		}
	}
	if projected > maxProjectedAttrs {
		return nil, apierr.Validationf("One or more parameter values were invalid: The number of attributes projected into all secondary indexes exceeds the per-table limit of %d", maxProjectedAttrs)
	}
	if err := checkDefsUsed(t, in.AttributeDefinitions); err != nil {
		return nil, err
	}
	if in.StreamSpecification != nil {
		// A disabled stream is accepted and not stored: the table has none.
		if err := e.checkStreamSpec(in.StreamSpecification); err != nil {
			return nil, err
		}
		if specEnabled(in.StreamSpecification) {
			spec := *in.StreamSpecification // only with Options.Streams
			t.Stream = &spec
		}
	}
	if err := e.checkSSE(in.SSESpecification); err != nil {
		return nil, err
	}
	if in.DeletionProtectionEnabled != nil {
		t.DeletionProtection = *in.DeletionProtectionEnabled
	}
	if err := schema.CheckTags(in.Tags, true); err != nil {
		return nil, err
	}
	t.Tags = append([]wire.Tag(nil), in.Tags...)
	if err := resolve.ApplyIsolationTags(t); err != nil {
		return nil, err
	}
	return t, nil
}

// checkAttrDefs validates AttributeDefinitions and returns name -> type.
func checkAttrDefs(defs []wire.AttributeDefinition) (map[string]attr.Type, error) {
	if defs == nil {
		return nil, apierr.Validationf("1 validation error detected: Value null at 'attributeDefinitions' failed to satisfy constraint: Member must not be null")
	}
	m := make(map[string]attr.Type, len(defs))
	for i, d := range defs {
		if d.AttributeName == "" {
			return nil, emptyName(d.NameNull(), fmt.Sprintf("attributeDefinitions.%d.member.attributeName", i+1))
		}
		if len(d.AttributeName) > schema.MaxKeyNameBytes {
			return nil, nameTooLong(d.AttributeName, fmt.Sprintf("attributeDefinitions.%d.member.attributeName", i+1))
		}
		ty, ok := attr.ParseType(d.AttributeType)
		if !ok || !ty.IsScalarKey() {
			return nil, enumErr(d.AttributeType, fmt.Sprintf("attributeDefinitions.%d.member.attributeType", i+1), "B, N, S")
		}
		if _, dup := m[d.AttributeName]; dup {
			return nil, apierr.Validationf("Cannot have two attributes with the same name")
		}
		m[d.AttributeName] = ty
	}
	return m, nil
}

// emptyName is the error for a key attribute name that is absent (null)
// or empty in the request member at field: DynamoDB tells the two apart.
func emptyName(null bool, field string) error {
	if null {
		return apierr.Validationf("1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", field)
	}
	return apierr.Validationf("1 validation error detected: Value '' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", field)
}

// nameTooLong is the error for a key attribute name over 255 bytes in the
// request member at field.
func nameTooLong(name, field string) error {
	return apierr.Validationf("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have length less than or equal to 255", name, field)
}

// checkKeySchema validates a table's or index's key schema against the
// attribute definitions.
func checkKeySchema(ks []wire.KeySchemaElement, defs map[string]attr.Type, field string) (h, r schema.KeyAttr, err error) {
	if len(ks) == 0 {
		return h, r, apierr.Validationf("1 validation error detected: Value '[]' at '%s' failed to satisfy constraint: Member must have length greater than or equal to 1", field)
	}
	if len(ks) > 2 {
		return h, r, apierr.Validationf("1 validation error detected: Value '%v' at '%s' failed to satisfy constraint: Member must have length less than or equal to 2", ks, field)
	}
	for i, k := range ks {
		if k.AttributeName == "" {
			return h, r, emptyName(k.NameNull(), fmt.Sprintf("%s.%d.member.attributeName", field, i+1))
		}
		if len(k.AttributeName) > schema.MaxKeyNameBytes {
			return h, r, nameTooLong(k.AttributeName, fmt.Sprintf("%s.%d.member.attributeName", field, i+1))
		}
		if k.KeyType != "HASH" && k.KeyType != "RANGE" {
			return h, r, enumErr(k.KeyType, fmt.Sprintf("%s.%d.member.keyType", field, i+1), "HASH, RANGE")
		}
	}
	var missing bool
	var keys []string
	for _, k := range ks {
		keys = append(keys, k.AttributeName)
		if _, ok := defs[k.AttributeName]; !ok {
			missing = true
		}
	}
	if missing {
		names := make([]string, 0, len(defs))
		for n := range defs {
			names = append(names, n)
		}
		sort.Strings(names)
		return h, r, apierr.Validationf("One or more parameter values were invalid: Some index key attributes are not defined in AttributeDefinitions. Keys: [%s], AttributeDefinitions: [%s]",
			strings.Join(keys, ", "), strings.Join(names, ", "))
	}
	if len(ks) == 2 && ks[0].AttributeName == ks[1].AttributeName {
		return h, r, apierr.Validationf("Both the Hash Key and the Range Key element in the KeySchema have the same name")
	}
	if ks[0].KeyType != "HASH" {
		return h, r, apierr.Validationf("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
	}
	if len(ks) == 2 && ks[1].KeyType != "RANGE" {
		return h, r, apierr.Validationf("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")
	}
	h = schema.KeyAttr{Name: ks[0].AttributeName, Type: defs[ks[0].AttributeName]}
	if len(ks) == 2 {
		r = schema.KeyAttr{Name: ks[1].AttributeName, Type: defs[ks[1].AttributeName]}
	}
	return h, r, nil
}

// checkIndex validates one index definition.
func checkIndex(name string, ks []wire.KeySchemaElement, p *wire.Projection, defs map[string]attr.Type, field string) (*schema.Index, error) {
	if err := schema.ValidateIndexName(name, field+".indexName"); err != nil {
		return nil, err
	}
	h, r, err := checkKeySchema(ks, defs, field+".keySchema")
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, apierr.Validationf("1 validation error detected: Value null at '%s.projection' failed to satisfy constraint: Member must not be null", field)
	}
	switch p.ProjectionType {
	case "":
		return nil, apierr.Validationf("One or more parameter values were invalid: Unknown ProjectionType: null")
	case "ALL", "KEYS_ONLY", "INCLUDE":
	default:
		return nil, enumErr(p.ProjectionType, field+".projection.projectionType", "ALL, INCLUDE, KEYS_ONLY")
	}
	if p.NonKeyAttributes != nil && p.ProjectionType != "INCLUDE" {
		return nil, apierr.Validationf("One or more parameter values were invalid: ProjectionType is %s, but NonKeyAttributes is specified", p.ProjectionType)
	}
	if p.NonKeyAttributes != nil && len(p.NonKeyAttributes) == 0 {
		return nil, apierr.Validationf("1 validation error detected: Value '[]' at '%s.projection.nonKeyAttributes' failed to satisfy constraint: Member must have length greater than or equal to 1", field)
	}
	for _, n := range p.NonKeyAttributes {
		if n == "" || len(n) > schema.MaxKeyNameBytes {
			// NB: the wording of a constraint on a list's members,
			// the list printed as Java prints it.
			return nil, apierr.Validationf("1 validation error detected: Value '[%s]' at '%s.projection.nonKeyAttributes' failed to satisfy constraint: Member must satisfy constraint: [Member must have length less than or equal to 255, Member must have length greater than or equal to 1]", strings.Join(p.NonKeyAttributes, ", "), field)
		}
	}
	seen := map[string]bool{}
	for _, n := range p.NonKeyAttributes {
		if seen[n] {
			return nil, apierr.Validationf("One or more parameter values were invalid: Duplicate attribute name in NonKeyAttributes: %s", n)
		}
		seen[n] = true
	}
	return &schema.Index{
		Name:           name,
		Hash:           h,
		Range:          r,
		ProjectionType: p.ProjectionType,
		NonKey:         append([]string(nil), p.NonKeyAttributes...),
	}, nil
}

// checkDefsUsed enforces that every attribute definition is a key of the
// table or of an index.
func checkDefsUsed(t *schema.Table, defs []wire.AttributeDefinition) error {
	used := map[string]bool{}
	var keys []string
	note := func(k schema.KeyAttr) {
		if k.Name != "" && !used[k.Name] {
			used[k.Name] = true
			keys = append(keys, k.Name)
		}
	}
	note(t.Hash)
	note(t.Range)
	for _, ix := range t.Indexes {
		note(ix.Hash)
		note(ix.Range)
	}
	var names []string
	unused := false
	for _, d := range defs {
		names = append(names, d.AttributeName)
		if !used[d.AttributeName] {
			unused = true
		}
	}
	if unused {
		return apierr.Validationf("One or more parameter values were invalid: Some AttributeDefinitions are not used. AttributeDefinitions: [%s], keys used: [%s]",
			strings.Join(names, ", "), strings.Join(keys, ", "))
	}
	return nil
}

func checkBillingMode(m string) (string, error) {
	switch m {
	case "", "PROVISIONED", "PAY_PER_REQUEST":
		return m, nil
	}
	return "", enumErr(m, "billingMode", "PROVISIONED, PAY_PER_REQUEST")
}

// checkThroughput validates a table's ProvisionedThroughput for billing
// mode billing: required iff PROVISIONED.
func checkThroughput(billing string, pt *wire.ProvisionedThroughput, field string) (rcu, wcu int64, err error) {
	if billing == "PAY_PER_REQUEST" {
		if pt != nil {
			return 0, 0, apierr.Validationf("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
		}
		return 0, 0, nil
	}
	if pt == nil || pt.ReadCapacityUnits == nil || pt.WriteCapacityUnits == nil {
		return 0, 0, apierr.Validationf("One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
	}
	return checkUnits(pt, field)
}

func checkUnits(pt *wire.ProvisionedThroughput, field string) (rcu, wcu int64, err error) {
	if pt.ReadCapacityUnits == nil || pt.WriteCapacityUnits == nil {
		return 0, 0, apierr.Validationf("One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified")
	}
	rcu, wcu = *pt.ReadCapacityUnits, *pt.WriteCapacityUnits
	if rcu < 1 {
		return 0, 0, apierr.Validationf("1 validation error detected: Value '%d' at '%s.readCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1", rcu, field)
	}
	if wcu < 1 {
		return 0, 0, apierr.Validationf("1 validation error detected: Value '%d' at '%s.writeCapacityUnits' failed to satisfy constraint: Member must have value greater than or equal to 1", wcu, field)
	}
	if rcu > 1000000000000 {
		return 0, 0, apierr.Validationf("Given value %d for ReadCapacityUnits is out of bounds", rcu)
	}
	if wcu > 1000000000000 {
		return 0, 0, apierr.Validationf("Given value %d for WriteCapacityUnits is out of bounds", wcu)
	}
	return rcu, wcu, nil
}

// checkIndexThroughput validates a GSI's ProvisionedThroughput.
func checkIndexThroughput(billing string, pt *wire.ProvisionedThroughput, name, field string) (rcu, wcu int64, err error) {
	if billing == "PAY_PER_REQUEST" {
		if pt != nil {
			return 0, 0, apierr.Validationf("One or more parameter values were invalid: ProvisionedThroughput should not be specified for index: %s when BillingMode is PAY_PER_REQUEST", name)
		}
		return 0, 0, nil
	}
	if pt == nil {
		return 0, 0, apierr.Validationf("One or more parameter values were invalid: ProvisionedThroughput must be specified for index: %s", name)
	}
	return checkUnits(pt, field+".provisionedThroughput")
}

func checkStream(spec *wire.StreamSpecification) error {
	if spec.StreamEnabled == nil {
		return apierr.Validationf("1 validation error detected: Value null at 'streamSpecification.streamEnabled' failed to satisfy constraint: Member must not be null")
	}
	switch spec.StreamViewType {
	case "":
		if *spec.StreamEnabled {
			return apierr.Validationf("One or more parameter values were invalid: StreamViewType is required when StreamEnabled is true")
		}
	case "NEW_IMAGE", "OLD_IMAGE", "NEW_AND_OLD_IMAGES", "KEYS_ONLY":
		if !*spec.StreamEnabled {
			return apierr.Validationf("One or more parameter values were invalid: StreamViewType cannot be specified when StreamEnabled is false")
		}
	default:
		return enumErr(spec.StreamViewType, "streamSpecification.streamViewType", "NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY")
	}
	if *spec.StreamEnabled {
		return errNoStreams
	}
	return nil
}

// errNoStreams refuses a stream: until change streams exist, a table must
// not report one (a LatestStreamArn that nothing can read).
var errNoStreams = apierr.Validationf("One or more parameter values were invalid: StreamEnabled is not supported: tenantdb has no change streams yet")

func enumErr(v, field, set string) error {
	return apierr.Validationf("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", v, field, set)
}

// newUUID returns a random version 4 UUID string.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
