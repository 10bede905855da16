package redisctl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLocalize checks the aliases a Client learns from what nodes say of themselves, on CLUSTER
// NODES views written by hand: each row reads the views in order (address, then the lines) and
// states where the last view reports each node, and what INFO replication's master_host becomes.
func TestLocalize(t *testing.T) {
	const (
		a = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		b = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
		x = "cccccccccccccccccccccccccccccccccccccccc"
	)
	line := func(id, addr, flags, master string) string {
		return id + " " + addr + "@16379 " + flags + " " + master + " 0 0 1 connected"
	}
	type read struct{ addr, nodes string }
	for _, tc := range []struct {
		name       string
		reads      []read
		want       map[string]string // node ID → address reported in the last view
		masterHost map[string]string // master_host → what it is reported as
	}{
		{
			name: "a node read at its pod IP announcing a LoadBalancer IP → it and every line about it at the pod IP",
			reads: []read{
				{"10.0.0.1:6379", line(a, "203.0.113.1:6379", "myself,master", "-") + "\n" + line(b, "203.0.113.2:6379", "slave", a)},
				{"10.0.0.2:6379", line(b, "203.0.113.2:6379", "myself,slave", a) + "\n" + line(a, "203.0.113.1:6379", "master", "-")},
			},
			want:       map[string]string{a: "10.0.0.1:6379", b: "10.0.0.2:6379"},
			masterHost: map[string]string{"203.0.113.1": "10.0.0.1", "203.0.113.2": "10.0.0.2", "203.0.113.9": "203.0.113.9"},
		},
		{
			name: "a node not read yet → keeps its announced address",
			reads: []read{
				{"10.0.0.1:6379", line(a, "203.0.113.1:6379", "myself,master", "-") + "\n" + line(b, "203.0.113.2:6379", "slave", a)},
			},
			want:       map[string]string{a: "10.0.0.1:6379", b: "203.0.113.2:6379"},
			masterHost: map[string]string{"203.0.113.2": "203.0.113.2"},
		},
		{
			name: "nodes announcing their pod IPs → nothing rewritten",
			reads: []read{
				{"10.0.0.1:6379", line(a, "10.0.0.1:6379", "myself,master", "-") + "\n" + line(b, "10.0.0.2:6379", "slave", a)},
			},
			want:       map[string]string{a: "10.0.0.1:6379", b: "10.0.0.2:6379"},
			masterHost: map[string]string{"10.0.0.1": "10.0.0.1"},
		},
		{
			name: "a node restarted on 10.0.0.7 still announcing its old 10.0.0.3, which another pod now has → only the restarted node moves",
			reads: []read{
				{"10.0.0.7:6379", line(a, "10.0.0.3:6379", "myself,master", "-") + "\n" + line(x, "10.0.0.3:6379", "slave", a)},
				{"10.0.0.3:6379", line(x, "10.0.0.3:6379", "myself,slave", a) + "\n" + line(a, "10.0.0.3:6379", "master", "-")},
			},
			want: map[string]string{a: "10.0.0.7:6379", x: "10.0.0.3:6379"},
			// 10.0.0.3 answers as a node itself: master_host 10.0.0.3 is not guessed to be a.
			masterHost: map[string]string{"10.0.0.3": "10.0.0.3"},
		},
		{
			name: "a node read at its pod IP, then at its LoadBalancer's → the alias kept, master_host still rewritten",
			reads: []read{
				{"10.0.0.1:6379", line(a, "203.0.113.1:6379", "myself,master", "-")},
				{"203.0.113.1:6379", line(a, "203.0.113.1:6379", "myself,master", "-")},
			},
			want:       map[string]string{a: "10.0.0.1:6379"},
			masterHost: map[string]string{"203.0.113.1": "10.0.0.1"},
		},
		{
			name: "a pod IP answering with a new node ID (re-created empty) → the old node's alias dropped",
			reads: []read{
				{"10.0.0.1:6379", line(a, "203.0.113.1:6379", "myself,master", "-")},
				{"10.0.0.1:6379", line(x, "203.0.113.1:6379", "myself,master", "-") + "\n" + line(a, "203.0.113.1:6379", "master,fail", "-")},
			},
			want:       map[string]string{x: "10.0.0.1:6379", a: "203.0.113.1:6379"},
			masterHost: map[string]string{"203.0.113.1": "10.0.0.1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Client{}
			var last []Node
			for _, r := range tc.reads {
				nodes, err := parseClusterNodes(r.nodes)
				if err != nil {
					t.Fatal(err)
				}
				c.localize(r.addr, nodes)
				last = nodes
			}
			got := map[string]string{}
			for _, n := range last {
				got[n.ID] = n.Addr()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("addresses (-want +got):\n%s", diff)
			}
			gotHost := map[string]string{}
			for h := range tc.masterHost {
				r := Replication{MasterHost: h, MasterPort: 6379}
				c.localizeReplication(&r)
				gotHost[h] = r.MasterHost
			}
			if diff := cmp.Diff(tc.masterHost, gotHost); diff != "" {
				t.Errorf("master_host (-want +got):\n%s", diff)
			}
		})
	}
}
