// Command shardkeeper runs a shardkeeper node (`shardkeeper serve`) and
// administers a cluster's registry (`shardkeeper registry ...`).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/shardkeeper/shardkeeper/internal/redact"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "shardkeeper:", redact.Text(errorText(err)))
		os.Exit(exitCode(err))
	}
}
