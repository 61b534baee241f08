package main

// Plumbing shared by the client subcommands (tenant, key, session, audit,
// platform): global flags, credentials, output.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/auth"
)

// Defaults of the client's global flags.
const (
	defaultEndpoint    = "http://127.0.0.1:8000"
	defaultCredentials = "./tenantdb-data/" + auth.OperatorCredentialsFile
)

// clientFlags are the global flags of every client subcommand.
type clientFlags struct {
	endpoint    string
	credentials string
	profile     string
	key         string
	json        bool
}

// newClientFlagSet returns a flag set with the global client flags, their
// defaults taken from the environment.
func newClientFlagSet(name string, stderr io.Writer, getenv func(string) string) (*flag.FlagSet, *clientFlags) {
	cf := &clientFlags{endpoint: defaultEndpoint, credentials: defaultCredentials}
	if v := getenv("TENANTDB_ENDPOINT"); v != "" {
		cf.endpoint = v
	}
	if v := getenv("TENANTDB_CREDENTIALS"); v != "" {
		cf.credentials = v
	}
	cf.profile = getenv("TENANTDB_PROFILE")
	cf.key = getenv("TENANTDB_KEY")
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cf.endpoint, "endpoint", cf.endpoint, "server URL (env TENANTDB_ENDPOINT)")
	fs.StringVar(&cf.credentials, "credentials", cf.credentials, "AWS shared-credentials file holding the key to use (env TENANTDB_CREDENTIALS)")
	fs.StringVar(&cf.profile, "profile", cf.profile, "profile in the credentials file; empty means the first (env TENANTDB_PROFILE)")
	fs.StringVar(&cf.key, "key", cf.key, "a full sk_... key to use instead of the credentials file (env TENANTDB_KEY)")
	fs.BoolVar(&cf.json, "json", false, "print exactly one JSON value on stdout")
	return fs, cf
}

// parseInterspersed parses flags that may appear before, between or after
// positional arguments (tenantdb tenant create NAME --json), and returns
// the positional arguments. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// client returns the admin client for the global flags.
func (cf *clientFlags) client() (*client.Client, error) {
	key := strings.TrimSpace(cf.key)
	if key == "" {
		k, err := cf.fileKey()
		if err != nil {
			return nil, err
		}
		key = k.String()
	}
	return &client.Client{Endpoint: cf.endpoint, Key: key}, nil
}

// apiKey returns the key of the global flags: --key, or the one in the
// credentials file.
func (cf *clientFlags) apiKey() (auth.APIKey, error) {
	if key := strings.TrimSpace(cf.key); key != "" {
		return auth.ParseKey(key)
	}
	return cf.fileKey()
}

func (cf *clientFlags) fileKey() (auth.APIKey, error) {
	k, err := auth.ReadCredentialsFile(cf.credentials, cf.profile)
	if errors.Is(err, os.ErrNotExist) {
		return k, fmt.Errorf("no credentials at %s: start the server once (it writes the operator's there), or give --credentials or --key", cf.credentials)
	}
	return k, err
}

// output prints v as JSON (with --json) or calls human to print it.
func (cf *clientFlags) output(stdout io.Writer, v any, human func(w *tabwriter.Writer)) error {
	if cf.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	human(tw)
	return tw.Flush()
}

// usageFunc sets fs's usage text.
func usageFunc(fs *flag.FlagSet, stderr io.Writer, lines ...string) {
	fs.Usage = func() {
		for _, l := range lines {
			fmt.Fprintln(stderr, l)
		}
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "flags:")
		fs.PrintDefaults()
	}
}

// subcommand dispatches a command with verbs (tenant create, key list ...).
type verb struct {
	name, usage string
	run         func(args []string, stdout, stderr io.Writer) error
}

func dispatchVerb(cmd string, verbs []verb, args []string, stdout, stderr io.Writer) error {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: tenantdb %s <command> [flags]\n\n", cmd)
		for _, v := range verbs {
			fmt.Fprintf(w, "  tenantdb %s %s\n", cmd, v.usage)
		}
		fmt.Fprintf(w, "\nRun \"tenantdb %s <command> -h\" for the flags.\n", cmd)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		return flag.ErrHelp
	}
	// The command is the first argument that names one, so that global
	// flags may come before it (tenantdb tenant --json list).
	for i, a := range args {
		for _, v := range verbs {
			if v.name == a {
				rest := append(append([]string{}, args[:i]...), args[i+1:]...)
				return v.run(rest, stdout, stderr)
			}
		}
		if !strings.HasPrefix(a, "-") && (i == 0 || !strings.HasPrefix(args[i-1], "-") || strings.Contains(args[i-1], "=")) {
			break // a positional argument that is not a command
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown command %q", args[0])
}

// needArgs checks the number of positional arguments.
// parse parses args into fs (flags interspersed), wants n positional
// arguments (what names them in the error) and returns them with the
// admin client the global flags name.
func (cf *clientFlags) parse(fs *flag.FlagSet, args []string, n int, what string) ([]string, *client.Client, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if err := needArgs(pos, n, what); err != nil {
		return nil, nil, err
	}
	c, err := cf.client()
	if err != nil {
		return nil, nil, err
	}
	return pos, c, nil
}

func needArgs(pos []string, n int, what string) error {
	if len(pos) != n {
		return fmt.Errorf("want %s, got %d argument(s)", what, len(pos))
	}
	return nil
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func fmtTimePtr(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return fmtTime(*t)
}

// parseWhen parses an RFC 3339 time or a duration from now ("24h").
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return time.Now().Add(d), nil
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time nor a duration", s)
}
