package engine

import "testing"

// FuzzParseBackupARN: a backup ARN is client input. Parsing never panics,
// and whatever it accepts names a table and a backup id that format back
// to the same ARN.
func FuzzParseBackupARN(f *testing.F) {
	e := &Engine{opts: Options{Region: "us-east-1", Account: "000000000000"}}
	f.Add("arn:aws:dynamodb:us-east-1:000000000000:table/Music/backup/01489602797149-73d8d5bc")
	f.Add("arn:aws:dynamodb:us-east-1:000000000000:table//backup/")
	f.Add("arn:aws:dynamodb:eu-west-1:000000000000:table/Music/backup/01489602797149-73d8d5bc")
	f.Fuzz(func(t *testing.T, arn string) {
		table, id, err := e.parseBackupARN(arn)
		if err != nil {
			return
		}
		if got := "arn:aws:dynamodb:us-east-1:000000000000:table/" + table + "/backup/" + id; got != arn {
			t.Errorf("parseBackupARN(%q) = %q, %q", arn, table, id)
		}
	})
}
