package dynexport

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	def := &Definition{TableName: "T", KeySchema: []KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}}}
	w, err := Create(dir, WriterOptions{ExportID: NewExportID(now), ExportArn: "arn:x", TableArn: "arn:t", Bucket: "b",
		Prefix: "p/q", Start: now, ExportTime: now, MaxFileBytes: 200, Definition: def})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 25 {
		it := fmt.Sprintf(`{"pk":{"S":"k%02d"},"v":{"N":"%d"}}`, i, i)
		want = append(want, it)
		if err := w.Add([]byte(it), 10); err != nil {
			t.Fatal(err)
		}
	}
	s, err := w.Close(now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s.ItemCount != 25 || s.BilledSizeBytes != 250 || *s.S3Prefix != "p/q" || s.StartTime != "2026-01-02T03:04:05.006Z" {
		t.Fatalf("summary %+v", s)
	}
	dirs, err := Find(dir)
	if err != nil || len(dirs) != 1 || dirs[0] != w.Dir() {
		t.Fatalf("Find = %v, %v; want [%s]", dirs, err, w.Dir())
	}
	x, err := Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(x.Files) < 2 {
		t.Fatalf("%d data files, want several (MaxFileBytes 200)", len(x.Files))
	}
	if x.Definition == nil || x.Definition.TableName != "T" {
		t.Fatalf("definition %+v", x.Definition)
	}
	var got []string
	var positions []Position
	if err := x.Scan(Position{}, func(p Position, item []byte) error {
		got = append(got, string(item))
		positions = append(positions, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Resuming from any position yields exactly the rest.
	for i, p := range positions {
		var rest []string
		if err := x.Scan(p, func(_ Position, item []byte) error { rest = append(rest, string(item)); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(rest, "\n") != strings.Join(want[i:], "\n") {
			t.Fatalf("from %+v: got %d items, want %d", p, len(rest), len(want)-i)
		}
	}
}

// TestAWSFixture reads a file set written by hand in the format AWS
// documents (S3DataExport.Output): seed 004's SupportTicket table.
func TestAWSFixture(t *testing.T) {
	dirs, err := Find("testdata/seed004")
	if err != nil || len(dirs) != 1 {
		t.Fatalf("Find = %v, %v", dirs, err)
	}
	x, err := Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if x.Definition != nil || x.Summary.ItemCount != 13 || x.Summary.TableArn != "arn:aws:dynamodb:us-east-1:123456789012:table/SupportTicket" {
		t.Fatalf("export %+v", x)
	}
	src, err := os.ReadFile("testdata/seed004.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(src)), "\n") {
		var v struct{ Item json.RawMessage }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		want = append(want, string(v.Item))
	}
	var got []string
	if err := x.Scan(Position{}, func(_ Position, item []byte) error { got = append(got, string(item)); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestCorruption(t *testing.T) {
	mk := func(t *testing.T) *Writer {
		w, err := Create(t.TempDir(), WriterOptions{ExportID: "e1", Start: time.Now(), ExportTime: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		w.Add([]byte(`{"a":{"S":"x"}}`), 1)
		if _, err := w.Close(time.Now()); err != nil {
			t.Fatal(err)
		}
		return w
	}
	t.Run("data file changed", func(t *testing.T) {
		w := mk(t)
		x, _ := Open(w.Dir())
		name, _ := dataFileName(x.Files[0].DataFileS3Key)
		p := filepath.Join(w.Dir(), DataDir, name)
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(`{"Item":{"a":{"S":"y"}}}` + "\n"))
		zw.Close()
		os.WriteFile(p, b.Bytes(), 0o644)
		err := x.Scan(Position{}, func(Position, []byte) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "md5Checksum") {
			t.Fatalf("err = %v, want an md5Checksum mismatch", err)
		}
	})
	t.Run("manifest changed", func(t *testing.T) {
		w := mk(t)
		p := filepath.Join(w.Dir(), SummaryFile)
		b, _ := os.ReadFile(p)
		os.WriteFile(p, bytes.Replace(b, []byte(`"itemCount":1`), []byte(`"itemCount":2`), 1), 0o644)
		if _, err := Open(w.Dir()); err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("err = %v, want a checksum mismatch", err)
		}
	})
	t.Run("incomplete", func(t *testing.T) {
		w, _ := Create(t.TempDir(), WriterOptions{ExportID: "e2"})
		w.Add([]byte(`{}`), 1)
		if _, err := Open(w.Dir()); err != ErrIncomplete {
			t.Fatalf("err = %v, want ErrIncomplete", err)
		}
	})
	t.Run("traversal", func(t *testing.T) {
		for _, key := range []string{"AWSDynamoDB/x/data/../../../etc/passwd.json.gz", "x/data/.hidden.json.gz", "x/other/a.json.gz", "x/data/a b.json.gz"} {
			if _, err := dataFileName(key); err == nil {
				t.Errorf("dataFileName(%q) accepted", key)
			}
		}
		for _, p := range []string{"../x", "/abs", "a/../b", "a//b", `a\b`} {
			if CheckPrefix(p) == nil {
				t.Errorf("CheckPrefix(%q) accepted", p)
			}
		}
	})
}

func TestParseLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"Item":{"a":{"S":"x"}}}`, `{"a":{"S":"x"}}`},
		{` { "Item" : {"a":{"S":"x"}} } `, `{"a":{"S":"x"}}`},
		{`{"Item":{"a":{"S":"x"}},"b":1}`, "error"},
		{`{"Item":{"a":1}, "Item2":{}}`, "error"},
		{`{"Item":[1]}`, "error"},
		{`{"Item":{"a":{"S":"x"}}`, "error"},
		{`[]`, "error"},
	} {
		got, err := ParseLine([]byte(strings.TrimSpace(tc.in)))
		if err != nil {
			got = []byte("error")
		}
		if string(got) != tc.want {
			t.Errorf("ParseLine(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
