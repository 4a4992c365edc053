// Command lancer reads and writes Lance datasets from the command line:
//
//	lancer scan URI [--version N | --tag T | --branch B] [--columns a,b.c] [--filter SQL]
//	                [--limit N] [--offset N] [--with-rowid] [--format table|jsonl|csv]
//	lancer count URI [--filter SQL] [--version N | --tag T | --branch B]
//	lancer schema URI [--format text|json]
//	lancer versions URI [--format table|json]
//	lancer tags URI
//	lancer branches URI
//	lancer inspect FILE
//	lancer import SRC URI [--mode create|append|overwrite] [--format jsonl|csv|parquet|arrow]
//	                      [--storage-version 2.0|2.1|2.2] [--stable-row-ids] [--schema-from URI]
//	lancer delete URI --filter SQL
//	lancer update URI --set 'col=expr' [--set ...] [--filter SQL]
//	lancer compact URI [--target-rows N]
//	lancer cleanup URI --older-than DURATION
//	lancer restore URI --version N
//
// URI is a local path or file:// URI of a dataset's main root. Without a
// URI, scan, schema, versions, tags and branches use a small sample dataset
// embedded in the binary. The writing verbs act on the latest version of
// the main branch and print one line saying what they did and the version
// they committed. Errors go to stderr with exit status 1.
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
