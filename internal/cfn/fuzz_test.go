package cfn

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse never panics or runs away, and what it accepts has a
// table name and a key schema for every table. (Run with
// -fuzzminimizetime 1x: minimizing the multi-KB seed templates takes
// longer than finding new inputs.)
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	json, _ := filepath.Glob("testdata/*.json")
	for _, p := range append(files, json...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(laughs))
	f.Add([]byte("Resources: {T: {Type: AWS::DynamoDB::Table, Properties: {KeySchema: !If [c, [], !Ref AWS::NoValue]}}}"))
	f.Add([]byte("Conditions: {c: !Equals [!Sub '${AWS::Region}', us-east-1]}\nResources: {T: {Type: AWS::DynamoDB::Table, Condition: c, Properties: {KeySchema: [], TableName: !Join ['', [!Select [0, !Split [',', 'a,b']]]]}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmpl, err := Parse(data, Options{})
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %v is %T, want *cfn.Error", err, err)
			}
			return
		}
		for _, tb := range tmpl.Tables {
			if tb.CreateTable.TableName == "" || tb.CreateTable.KeySchema == nil {
				t.Fatalf("table %s: name %q, key schema %v", tb.LogicalID, tb.CreateTable.TableName, tb.CreateTable.KeySchema)
			}
		}
	})
}
