package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tenantdb/tenantdb/internal/loadgen"
)

// runTable prints the markdown comparison of `tdbload run --json` results
// (one JSON object per line), medians per workload and label.
func runTable(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tdbload table", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseline := fs.String("baseline", "noop,dynalite", "comma-separated labels to compare every target with")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("table: name one or more files of --json results")
	}
	var results []loadgen.Result
	for _, name := range fs.Args() {
		rs, err := readResults(name)
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	var bl []string
	for _, s := range strings.Split(*baseline, ",") {
		if s = strings.TrimSpace(s); s != "" {
			bl = append(bl, s)
		}
	}
	_, err := io.WriteString(stdout, loadgen.CompareTable(loadgen.Summarize(results), bl))
	return err
}

func readResults(name string) ([]loadgen.Result, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []loadgen.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || !strings.HasPrefix(s, "{") {
			continue
		}
		var r loadgen.Result
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}
