// Command redis-rebalancer fixes Redis Cluster pod placements on Kubernetes: see `redis-rebalancer
// --help`.
package main

import (
	"os"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
)

func main() { os.Exit(app.Main()) }
