// Package demo runs the end-to-end demonstration behind `make demo`: a local Kubernetes cluster
// with kwok nodes, a real Redis Cluster on it in a bad placement, a writer, and the
// redis-rebalancer binary fixing the placement, with its output shown as it runs.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// Scenarios are the scenarios the demo can lay out, by name.
var Scenarios = map[string]func() scenario.Scenario{
	"post-scale-down": scenario.PostScaleDown,
	"seed-deadlock":   scenario.SeedDeadlock,
}

// ScenarioNames returns the scenario names, sorted.
func ScenarioNames() []string {
	var out []string
	for k := range Scenarios {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Config configures Run.
type Config struct {
	// Binary is the redis-rebalancer executable to run.
	Binary string
	// Scenario names the scenario (Scenarios).
	Scenario string
	// ExtraArgs are appended to `redis-rebalancer run`.
	ExtraArgs []string
	// WriteRate is the writer's writes per second during the run (0: no writer).
	WriteRate int
	// Out receives everything the demo prints.
	Out io.Writer
}

// Run lays out the scenario, runs `redis-rebalancer run` against it and tears everything down.
// It returns an error when the environment cannot be set up, the binary fails, or the writer
// lost an acknowledged write.
func Run(ctx context.Context, cfg Config) error {
	mk, ok := Scenarios[cfg.Scenario]
	if !ok {
		return fmt.Errorf("demo: unknown scenario %q (known: %s)", cfg.Scenario, strings.Join(ScenarioNames(), ", "))
	}
	if _, err := os.Stat(cfg.Binary); err != nil {
		return fmt.Errorf("demo: %w (build it with `make build`)", err)
	}
	out := cfg.Out
	sc := mk()
	fmt.Fprintf(out, "== demo: %s\n   %s\n\n", sc.Name, sc.Description)
	start := time.Now()
	env, err := harness.Setup(ctx, sc, harness.Options{Log: out})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer func() {
		fmt.Fprintln(out, "\n== tearing down (etcd, kube-*, kwok, every redis-server)")
		env.Stop()
	}()
	fmt.Fprintf(out, "\n== environment ready in %s: kubeconfig %s\n", time.Since(start).Round(100*time.Millisecond), env.Kubeconfig())

	var w *harness.Writer
	if cfg.WriteRate > 0 {
		var seeds []string
		for _, s := range env.Runtime.Servers() {
			seeds = append(seeds, s.Addr)
		}
		if w, err = harness.StartWriter(seeds, cfg.WriteRate); err != nil {
			return fmt.Errorf("demo: writer: %w", err)
		}
		defer w.Close()
		fmt.Fprintf(out, "== a writer sends %d writes/s to the Redis Cluster throughout\n", cfg.WriteRate)
	}

	args := append([]string{"run", "--kubeconfig", env.Kubeconfig(), "-n", env.Namespace}, cfg.ExtraArgs...)
	fmt.Fprintf(out, "\n$ redis-rebalancer %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	if w != nil {
		w.Stop()
		stats := w.Stats()
		fmt.Fprintf(out, "\n== writer: %s\n", stats)
		if err := w.Verify(ctx); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		fmt.Fprintf(out, "== every acknowledged write read back: none lost\n")
		if stats.Failed > 0 {
			return fmt.Errorf("demo: %d writes failed: %v", stats.Failed, stats.Failures)
		}
	}
	if runErr != nil {
		return fmt.Errorf("demo: redis-rebalancer run: %w", runErr)
	}
	return nil
}
