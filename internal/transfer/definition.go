package transfer

import (
	"context"
	"encoding/json"

	"github.com/tenantdb/tenantdb/internal/dynexport"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// describe returns the definition of table name as scope sc sees it, with
// its ARN and id.
func (s *Service) describe(ctx context.Context, sc tenancy.Scope, name string) (*dynexport.Definition, *wire.TableDescription, error) {
	e := s.o.Source
	dt, err := e.DescribeTable(ctx, sc, &wire.DescribeTableInput{TableName: name})
	if err != nil {
		return nil, nil, err
	}
	td := dt.Table
	d := &dynexport.Definition{TableName: td.TableName, BillingMode: "PAY_PER_REQUEST"}
	for _, a := range td.AttributeDefinitions {
		d.AttributeDefinitions = append(d.AttributeDefinitions, dynexport.AttributeDefinition{AttributeName: a.AttributeName, AttributeType: a.AttributeType})
	}
	d.KeySchema = keySchema(td.KeySchema)
	for _, g := range td.GlobalSecondaryIndexes {
		d.GlobalSecondaryIndexes = append(d.GlobalSecondaryIndexes, dynexport.SecondaryIndex{IndexName: g.IndexName, KeySchema: keySchema(g.KeySchema), Projection: projection(g.Projection)})
	}
	for _, l := range td.LocalSecondaryIndexes {
		d.LocalSecondaryIndexes = append(d.LocalSecondaryIndexes, dynexport.SecondaryIndex{IndexName: l.IndexName, KeySchema: keySchema(l.KeySchema), Projection: projection(l.Projection)})
	}
	if ss := td.StreamSpecification; ss != nil && ss.StreamEnabled != nil && *ss.StreamEnabled {
		d.StreamSpecification = &dynexport.StreamSpecification{StreamEnabled: true, StreamViewType: ss.StreamViewType}
	}
	ttl, err := e.DescribeTimeToLive(ctx, sc, &wire.DescribeTimeToLiveInput{TableName: name})
	if err != nil {
		return nil, nil, err
	}
	if t := ttl.TimeToLiveDescription; t.TimeToLiveStatus == "ENABLED" || t.TimeToLiveStatus == "ENABLING" {
		d.TimeToLive = &dynexport.TimeToLive{AttributeName: t.AttributeName, Enabled: true}
	}
	tags, err := e.ListTagsOfResource(ctx, sc, &wire.ListTagsOfResourceInput{ResourceArn: td.TableArn})
	if err != nil {
		return nil, nil, err
	}
	for _, t := range tags.Tags {
		d.Tags = append(d.Tags, dynexport.Tag{Key: t.Key, Value: t.Value})
	}
	return d, td, nil
}

func keySchema(ks []wire.KeySchemaElement) []dynexport.KeySchemaElement {
	out := make([]dynexport.KeySchemaElement, len(ks))
	for i, k := range ks {
		out[i] = dynexport.KeySchemaElement{AttributeName: k.AttributeName, KeyType: k.KeyType}
	}
	return out
}

func projection(p *wire.Projection) dynexport.Projection {
	if p == nil {
		return dynexport.Projection{ProjectionType: "ALL"}
	}
	return dynexport.Projection{ProjectionType: p.ProjectionType, NonKeyAttributes: p.NonKeyAttributes}
}

// createInput returns the CreateTable request of definition d, named name.
func createInput(d *dynexport.Definition, name string) *wire.CreateTableInput {
	in := &wire.CreateTableInput{TableName: name, BillingMode: "PAY_PER_REQUEST"}
	for _, a := range d.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, wire.AttributeDefinition{AttributeName: a.AttributeName, AttributeType: a.AttributeType})
	}
	in.KeySchema = wireKeySchema(d.KeySchema)
	for _, g := range d.GlobalSecondaryIndexes {
		p := wireProjection(g.Projection)
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, wire.GlobalSecondaryIndex{IndexName: g.IndexName, KeySchema: wireKeySchema(g.KeySchema), Projection: &p})
	}
	for _, l := range d.LocalSecondaryIndexes {
		p := wireProjection(l.Projection)
		in.LocalSecondaryIndexes = append(in.LocalSecondaryIndexes, wire.LocalSecondaryIndex{IndexName: l.IndexName, KeySchema: wireKeySchema(l.KeySchema), Projection: &p})
	}
	if ss := d.StreamSpecification; ss != nil && ss.StreamEnabled {
		on := true
		in.StreamSpecification = &wire.StreamSpecification{StreamEnabled: &on, StreamViewType: ss.StreamViewType}
	}
	for _, t := range d.Tags {
		in.Tags = append(in.Tags, wire.Tag{Key: t.Key, Value: t.Value})
	}
	return in
}

func wireKeySchema(ks []dynexport.KeySchemaElement) []wire.KeySchemaElement {
	out := make([]wire.KeySchemaElement, len(ks))
	for i, k := range ks {
		out[i] = wire.KeySchemaElement{AttributeName: k.AttributeName, KeyType: k.KeyType}
	}
	return out
}

func wireProjection(p dynexport.Projection) wire.Projection {
	return wire.Projection{ProjectionType: p.ProjectionType, NonKeyAttributes: p.NonKeyAttributes}
}

// parseDefinition decodes a definition given in an import request.
func parseDefinition(b json.RawMessage) (*dynexport.Definition, error) {
	if len(b) == 0 || string(b) == "null" {
		return nil, nil
	}
	var d dynexport.Definition
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return &d, nil
}
