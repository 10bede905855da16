package app

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the release version, set with -ldflags "-X .../cmd/redis-rebalancer/app.Version=v0.1.0".
var Version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the versions of the libraries it was built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "redis-rebalancer %s\n", Version)
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
