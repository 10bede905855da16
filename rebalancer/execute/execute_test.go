package execute

import (
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func TestNew(t *testing.T) {
	rc, err := redisctl.New(redisctl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	client := fake.NewClientset()
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr error // nil: New succeeds; errAny: any error
	}{
		{name: "clients given → defaults filled", cfg: Config{Client: client, Redis: rc}},
		{name: "no Kubernetes client → error", cfg: Config{Redis: rc}, wantErr: errAny},
		{name: "negative MaxMoves → error", cfg: Config{Client: client, Redis: rc, MaxMoves: -1}, wantErr: errAny},
		{
			name:    "ReleaseReplicaClaims → refused: the executor never releases a claim",
			cfg:     Config{Client: client, Redis: rc, Policy: policies.Options{ReleaseReplicaClaims: true}},
			wantErr: ErrReleaseReplicaClaims,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(tc.cfg)
			switch {
			case tc.wantErr == nil && err != nil:
				t.Fatalf("New: %v", err)
			case tc.wantErr == nil:
				c := e.cfg
				if c.MaxMoves != DefaultMaxMoves || c.FailoverTimeout != DefaultFailoverTimeout || c.HealthTimeout != DefaultHealthTimeout ||
					c.RecreateTimeout != DefaultRecreateTimeout || c.RejoinTimeout != DefaultRejoinTimeout || c.DrainQuiet != DefaultDrainQuiet ||
					c.DrainTimeout != DefaultDrainTimeout || c.PollInterval != DefaultPollInterval || c.Out == nil || c.Clock == nil {
					t.Errorf("defaults not filled: %+v", c)
				}
			case err == nil:
				t.Fatal("New succeeded, want an error")
			case tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// errAny stands for any error in TestNew's table.
var errAny = errors.New("any error")
