package app

import (
	"fmt"
	"runtime/debug"
	"sort"

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

// versionInfo is version's JSON object.
type versionInfo struct {
	// Version is the release version (Version).
	Version string `json:"version"`
	// Revision is the git commit built (revision()).
	Revision string `json:"revision"`
	// GoVersion is the Go toolchain that built the binary; empty when the binary carries no
	// build information.
	GoVersion string `json:"goVersion"`
	// Dependencies maps the module path of the libraries that shape the behaviour (the
	// descheduler, client-go, the Redis client, the cron parser) to the version built.
	Dependencies map[string]string `json:"dependencies"`
}

// currentVersion returns what version prints.
func currentVersion() versionInfo {
	v := versionInfo{Version: Version, Revision: revision(), Dependencies: map[string]string{}}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.GoVersion = bi.GoVersion
	for _, d := range bi.Deps {
		switch d.Path {
		case "sigs.k8s.io/descheduler", "k8s.io/client-go", "github.com/go-redis/redis/v8", "github.com/robfig/cron/v3":
			v.Dependencies[d.Path] = d.Version
		}
	}
	return v
}

func newVersionCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version and the versions of the libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkTextOrJSON(output); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			v := currentVersion()
			if output == "json" {
				return printJSON(out, v)
			}
			fmt.Fprintf(out, "redis-rebalancer %s\nrevision %s\n", v.Version, v.Revision)
			if v.GoVersion == "" {
				return nil
			}
			fmt.Fprintf(out, "go %s\n", v.GoVersion)
			paths := make([]string, 0, len(v.Dependencies))
			for p := range v.Dependencies {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			for _, p := range paths {
				fmt.Fprintf(out, "%s %s\n", p, v.Dependencies[p])
			}
			return nil
		},
	}
	textOrJSON(cmd.Flags(), &output, `{"version", "revision", "goVersion", "dependencies": {module: version}}`)
	return cmd
}
