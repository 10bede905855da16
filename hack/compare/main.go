// Command compare runs the stock descheduler (RemovePodsViolatingTopologySpreadConstraint with
// the DefaultEvictor), redis-rebalancer and the descheduler built with the RedisClusterBalance
// plugin (hack/descheduler-plugin) on the same scenarios, in the same harness, with the same
// writer, and prints what each did: `make compare`. See compare.go for
// what is measured and how.
//
//	go run ./hack/compare -rebalancer bin/redis-rebalancer -descheduler <path> [-descheduler-plugin bin/descheduler-redis]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	cfg := defaultConfig()
	flag.StringVar(&cfg.Rebalancer, "rebalancer", cfg.Rebalancer, "the redis-rebalancer binary")
	flag.StringVar(&cfg.Descheduler, "descheduler", cfg.Descheduler, "the stock descheduler binary (built from hack/compare/descheduler)")
	flag.StringVar(&cfg.DeschedulerPlugin, "descheduler-plugin", cfg.DeschedulerPlugin, "the descheduler built with the RedisClusterBalance plugin (hack/descheduler-plugin; its rows are left out when empty)")
	scenarios := flag.String("scenarios", strings.Join(cfg.Scenarios, ","), "comma-separated scenarios: "+strings.Join(scenarioNames(), ", "))
	flag.DurationVar(&cfg.ReadyDelay, "ready-delay", cfg.ReadyDelay, "how long a (re-)created pod takes to start (kwok's pod-ready delay): an evicted master's Redis node is away that long")
	flag.DurationVar(&cfg.Budget, "budget", cfg.Budget, "how long each tool gets to reach compliance")
	flag.DurationVar(&cfg.DeschedulingInterval, "descheduling-interval", cfg.DeschedulingInterval, "the descheduler's --descheduling-interval")
	flag.IntVar(&cfg.WriteRate, "write-rate", cfg.WriteRate, "the writer's writes per second")
	flag.StringVar(&cfg.Markdown, "markdown", cfg.Markdown, "also write the table, in Markdown, to this file")
	flag.BoolVar(&cfg.Verbose, "v", cfg.Verbose, "print the harness's and the tools' output")
	flag.Parse()
	cfg.Scenarios = strings.Split(*scenarios, ",")
	cfg.Out = os.Stdout

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	results, err := run(ctx, cfg)
	if len(results) > 0 {
		fmt.Fprintf(os.Stdout, "\n%s\n", table(results, cfg))
		if cfg.Markdown != "" {
			if werr := os.WriteFile(cfg.Markdown, []byte(table(results, cfg)), 0o644); werr != nil {
				fmt.Fprintln(os.Stderr, "compare:", werr)
			}
		}
	}
	fmt.Fprintf(os.Stdout, "compare: done in %s\n", time.Since(began).Round(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}
