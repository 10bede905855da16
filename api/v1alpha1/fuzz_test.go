package v1alpha1

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/yaml"
)

// FuzzDecode feeds the policy loader (Decode) arbitrary documents. It must never panic; a
// document it refuses gives an error (an *InvalidError when the fields are at fault); a policy
// it accepts validates and survives a round trip: written back as YAML and decoded again, it is
// the same policy.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		header,
		string(CommentedDefault()),
		header + "limits: {maxMovesPerCluster: 3, maxNoOfPodsToEvictPerNode: 1}\nfailover: {timeout: 45s}\n",
		header + "windows: {windows: [{schedule: \"CRON_TZ=Europe/Paris 0 2 * * 1-5\", duration: 2h}], stepEstimate: p95}\n",
		header + "selection: {namespaces: {include: [redis]}, labelSelector: {matchLabels: {app: redis}}, layout: bitnami}\n",
		header + "redis: {port: 0, passwordSecretRef: {namespace: redis, name: redis-password}}\n",
		header + "limits: {maxMovesPerCluster: -1}\nselection: {clusterLable: x}\n",
		header + "windows: {windows: [{schedule: \"@daily\", duration: 0s}]}\n",
		"kind: RebalancerPolicy\n",
		"- a\n- b\n",
		"{",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Decode(data)
		if err != nil {
			var inv *InvalidError
			if errors.As(err, &inv) && len(inv.Errs) == 0 {
				t.Fatalf("an *InvalidError without a problem")
			}
			return
		}
		if errs := ValidateRebalancerPolicy(p); len(errs) > 0 {
			t.Fatalf("accepted a policy that does not validate: %v", errs)
		}
		out, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("marshal the accepted policy: %v", err)
		}
		again, err := Decode(out)
		if err != nil {
			t.Fatalf("the accepted policy, written back, does not load: %v\n%s", err, out)
		}
		if diff := cmp.Diff(p, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-first +again):\n%s", diff)
		}
	})
}
