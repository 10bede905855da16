package localcluster

import (
	"testing"

	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// StartForTest starts a cluster for cfg, logging its progress to t when cfg.Log is nil, and
// registers its Stop with t.Cleanup. If the test fails, the work dir with the component logs is
// kept and its path logged. It calls t.Fatal if the cluster cannot start (including when the
// binaries are missing: the message says how to build them).
func StartForTest(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Log == nil {
		cfg.Log = fixture.LogWriter(t)
	}
	c, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("localcluster: started in %v", roundDuration(c.StartupTime()))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("localcluster: test failed; component logs kept in %s", c.WorkDir())
			c.stop(true)
			return
		}
		c.Stop()
	})
	return c
}
