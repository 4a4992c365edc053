// Command lancer reads (and, in later versions, writes) Lance datasets from
// the command line:
//
//	lancer scan URI [--version N | --tag T | --branch B] [--columns a,b.c]
//	                [--limit N] [--offset N] [--with-rowid] [--format table|jsonl|csv]
//	lancer schema URI [--format text|json]
//	lancer versions URI [--format table|json]
//	lancer tags URI
//	lancer branches URI
//	lancer inspect FILE
//
// URI is a local path or file:// URI of a dataset's main root. Without a
// URI, scan, schema, versions, tags and branches use a small sample dataset
// embedded in the binary. Errors go to stderr with exit status 1.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status. Panics are
// reported as internal errors without a stack trace.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "lancer: internal error: %v\n", r)
			code = 2
		}
	}()
	cmd := newRootCommand(stdout, stderr)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "lancer: %v\n", err)
		return 1
	}
	return 0
}
