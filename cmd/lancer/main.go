// Command lancer reads and writes Lance datasets from the command line:
//
//	lancer demo [--dir D] [--addr HOST:PORT] [--images N] [--no-serve]
//	lancer scan URI [--version N | --tag T | --branch B] [--columns a,b.c] [--filter SQL]
//	                [--limit N] [--offset N] [--with-rowid] [--format table|jsonl|csv]
//	lancer count URI [--filter SQL] [--version N | --tag T | --branch B]
//	lancer schema URI [--format text|json]
//	lancer versions URI [--format table|json]
//	lancer tags URI
//	lancer branches URI
//	lancer inspect FILE
//	lancer check URI [--all-versions | --version N] [--deep] [--format text|json]
//	lancer import SRC URI [--mode create|append|overwrite] [--format jsonl|csv|parquet|arrow]
//	                      [--storage-version 2.0|2.1|2.2] [--stable-row-ids] [--schema-from URI]
//	lancer import-images DIR URI
//	lancer cat URI --column C --row ID
//	lancer delete URI --filter SQL
//	lancer update URI --set 'col=expr' [--set ...] [--filter SQL]
//	lancer compact URI [--target-rows N]
//	lancer cleanup URI --older-than DURATION
//	lancer restore URI --version N
//	lancer index create|list|drop|optimize URI ...
//	lancer search URI --column C (--vector V | --near-row ID | --queries FILE) [-k N] [--filter SQL]
//	lancer branch create|list|delete URI ...; lancer tag create|list|move|delete URI ...
//	lancer diff URI REF REF; lancer merge URI REF; lancer cherry-pick URI REF; lancer log URI --graph
//	lancer gc URI [--older-than DURATION]
//	lancer serve --data DIR [--addr HOST:PORT] [--api-key-file F]
//
// URI is a local path, a file:// URI, or an s3://, gs:// or az:// URI of a
// dataset's main root; cloud URIs take Lance's storage options as repeated
// --storage-option key=value (or the environment variables Lance reads).
// Without a URI, scan, schema, versions, tags and branches use a small
// sample dataset embedded in the binary. The writing verbs act on the
// latest version of main (or of --branch) and print one line saying what
// they did and the version they committed. Errors go to stderr with exit
// status 1. `lancer demo` builds, checks and serves a demo table; `lancer
// serve` speaks LanceDB's remote protocol and serves the browser at /ui/.
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
