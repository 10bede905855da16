// Command rebalancer-demo runs `make demo`: a local cluster, a real Redis Cluster in a bad
// placement, and redis-rebalancer fixing it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/demo"
)

func main() {
	cfg := demo.Config{Out: os.Stdout}
	flag.StringVar(&cfg.Binary, "binary", "bin/redis-rebalancer", "redis-rebalancer executable")
	flag.StringVar(&cfg.Scenario, "scenario", "post-scale-down", "scenario: "+strings.Join(demo.ScenarioNames(), ", "))
	flag.IntVar(&cfg.WriteRate, "write-rate", 250, "writes per second during the run (0: none)")
	flag.Parse()
	cfg.ExtraArgs = flag.Args()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := demo.Run(ctx, cfg)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
