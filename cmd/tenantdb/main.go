// Command tenantdb is the tenantdb server and its command-line client.
//
//	tenantdb serve [flags]       run the server (see serve.go)
//	tenantdb help                list the subcommands
//
// Each subcommand lives in its own file and adds itself to the command
// list with register.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name; it returns flag.ErrHelp after printing usage for -h.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands holds the subcommands, filled by register from the package-level
// declarations of each subcommand's file.
var commands = map[string]*command{}

// register adds c to the subcommands; subcommand files call it in a
// package-level var declaration.
func register(c *command) *command {
	if _, dup := commands[c.name]; dup {
		panic("tenantdb: duplicate subcommand " + c.name)
	}
	commands[c.name] = c
	return c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	args = hoistGlobalFlags(args)
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tenantdb: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	if err := c.run(ctx, args[1:], stdout, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			if askedForHelp(args[1:]) {
				return 0 // asked for and printed, as Go's flag.ExitOnError does
			}
			return 2 // usage printed for a command line missing its command
		}
		fmt.Fprintf(stderr, "tenantdb %s: %v\n", c.name, err)
		return 1
	}
	return 0
}

// askedForHelp reports whether args ask for help (-h, -help, --help
// before any "--").
func askedForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help", "--h":
			return true
		case "--":
			return false
		}
	}
	return false
}

// valueFlags are the global client flags that take a value.
var valueFlags = map[string]bool{"endpoint": true, "credentials": true, "profile": true, "key": true}

// hoistGlobalFlags lets global flags precede the subcommand
// ("tenantdb --endpoint URL tenant list") by moving them after it, where
// every subcommand parses flags.
func hoistGlobalFlags(args []string) []string {
	var lead []string
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-h" && args[i] != "--help" {
		name := strings.TrimLeft(args[i], "-")
		lead = append(lead, args[i])
		i++
		if !strings.Contains(name, "=") && valueFlags[name] && i < len(args) {
			lead = append(lead, args[i])
			i++
		}
	}
	if len(lead) == 0 || i == len(args) {
		return args
	}
	out := append([]string{}, args[i:]...)
	return append(out, lead...)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: tenantdb <command> [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "tenantdb <command> -h" for a command's flags.`)
}
