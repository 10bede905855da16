// Command redis-rebalancer fixes Redis Cluster pod placements on Kubernetes: see `redis-rebalancer
// --help`.
package main

import (
	"os"

	"github.com/redis-rebalancer/redis-rebalancer/internal/cli"
)

func main() { os.Exit(cli.Main()) }
