package app

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/metrics"
)

// Version is the release version, set with -ldflags "-X .../cmd/redis-rebalancer/app.Version=v0.1.0"
// (`make build` and `make image` set git describe's output).
var Version = "dev"

// Revision is the git commit the binary was built from, set with -ldflags
// "-X .../cmd/redis-rebalancer/app.Revision=<sha>" (`make build` and `make image` set it). When
// empty, revision() falls back to the VCS stamp Go records in the binary (go build in a git
// checkout).
var Revision = ""

// revision returns Revision, else the binary's vcs.revision build setting (with "-dirty" when
// vcs.modified), else "unknown".
func revision() string {
	if Revision != "" {
		return Revision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "-dirty"
	}
	return rev
}

// buildInfo is what the metrics' build_info says of this binary.
func buildInfo() metrics.BuildInfo {
	return metrics.BuildInfo{Version: Version, Revision: revision()}
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the versions of the libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "redis-rebalancer %s\nrevision %s\n", Version, revision())
			bi, ok := debug.ReadBuildInfo()
			if !ok {
				return nil
			}
			fmt.Fprintf(out, "go %s\n", bi.GoVersion)
			for _, d := range bi.Deps {
				switch d.Path {
				case "sigs.k8s.io/descheduler", "k8s.io/client-go", "github.com/go-redis/redis/v8", "github.com/robfig/cron/v3":
					fmt.Fprintf(out, "%s %s\n", d.Path, d.Version)
				}
			}
			return nil
		},
	}
}
