package dynexport

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"
)

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// FuzzReadData feeds arbitrary (mostly gzip) bytes to the data file
// reader: it must not panic, and every item it accepts is a JSON object.
func FuzzReadData(f *testing.F) {
	f.Add(gz(`{"Item":{"a":{"S":"x"}}}` + "\n"))
	f.Add(gz(`{"Item":{"a":{"S":"x"}}}` + "\n" + ` {"Item" : {"b":{"N":"1"}}}`))
	f.Add(gz(`{"Item":{"a":{"S":"x"}},"b":1}`))
	f.Add(gz("\n\n"))
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ReadData(bytes.NewReader(data), func(_ int64, item []byte) error {
			var v map[string]json.RawMessage
			if err := json.Unmarshal(item, &v); err != nil {
				t.Fatalf("accepted item %q is not a JSON object: %v", item, err)
			}
			return nil
		})
	})
}

// FuzzManifests parses arbitrary manifests: no panic, and an accepted
// files manifest names only data files under data/.
func FuzzManifests(f *testing.F) {
	f.Add([]byte(`{"version":"2020-06-30","itemCount":1,"outputFormat":"DYNAMODB_JSON"}`),
		[]byte(`{"itemCount":1,"md5Checksum":"x","etag":"y","dataFileS3Key":"AWSDynamoDB/1/data/a.json.gz"}`+"\n"))
	f.Add([]byte(`{"version":"2020-06-30","outputFormat":"ION"}`), []byte(`{"dataFileS3Key":"../data/x.json.gz"}`))
	f.Fuzz(func(t *testing.T, summary, files []byte) {
		ParseSummary(summary)
		fes, err := ParseFiles(files)
		if err != nil {
			return
		}
		for _, fe := range fes {
			name, err := dataFileName(fe.DataFileS3Key)
			if err != nil || bytes.ContainsAny([]byte(name), "/\\") || name == ".." {
				t.Fatalf("accepted key %q gives name %q (%v)", fe.DataFileS3Key, name, err)
			}
		}
	})
}
