package policies_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

func TestParseShardSource(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "", want: "auto"},
		{in: "auto", want: "auto"},
		{in: "redis", want: "redis"},
		{in: "owner", want: "owner"},
		{in: "label:redis.rebalancer.io/shard", want: "label:redis.rebalancer.io/shard"},
		{in: "label:", err: `shard source "label:": label key: name part must be non-empty`},
		{in: "label:a b", err: `shard source "label:a b": label key: name part must consist of`},
		{in: "owner:x", err: `shard source "owner:x": only label takes a key`},
		{in: "statefulset", err: `shard source "statefulset": must be auto, redis, owner or label:KEY`},
	} {
		t.Run(tc.in+" → "+tc.want+tc.err, func(t *testing.T) {
			got, err := policies.ParseShardSource(tc.in)
			switch {
			case tc.err != "":
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case got.String() != tc.want:
				t.Errorf("%q parses to %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// bitnamiLike returns six pods of one StatefulSet "rc" (Bitnami's chart: every node of the cluster
// in one StatefulSet, serviceName rc-headless) on n1…n6, pod IPs 10.0.0.<ordinal+1>, labelled
// app.kubernetes.io/instance=rc.
func bitnamiLike() *policies.Snapshot {
	labels := map[string]string{policies.DefaultClusterLabel: "rc"}
	sts := fixture.StatefulSet("rc", 6, labels, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "rc-headless" })
	snap := &policies.Snapshot{Nodes: fixture.ZonedNodes(2, "a", "b", "c"), StatefulSets: []*appsv1.StatefulSet{sts}}
	for i := 0; i < 6; i++ {
		snap.Pods = append(snap.Pods, fixture.StatefulSetPod(sts, i, fixture.On(fmt.Sprintf("n%d", i+1)), fixture.Ready(),
			func(p *corev1.Pod) { p.Status.PodIP = fmt.Sprintf("10.0.0.%d", i+1) }))
	}
	return snap
}

// perPodServices gives every pod of snap a Service of its own, as the Bitnami chart's
// cluster.externalAccess does ("<pod>-svc", type LoadBalancer, selecting the pod by its
// statefulset.kubernetes.io/pod-name label), set further by mutate(ordinal, service).
func perPodServices(snap *policies.Snapshot, mutate func(int, *corev1.Service)) {
	for i, p := range snap.Pods {
		p.Labels[policies.StatefulSetPodNameLabel] = p.Name
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name + "-svc", Namespace: p.Namespace},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{
				policies.DefaultClusterLabel: "rc", policies.StatefulSetPodNameLabel: p.Name,
			}},
		}
		mutate(i, svc)
		snap.Services = append(snap.Services, svc)
	}
}

// redisNodes returns the CLUSTER NODES lines of a 3-master cluster over rc-0…rc-5, paired as
// redis-cli --cluster create pairs them (rc-3 replicates rc-1, rc-4 rc-2, rc-5 rc-0), at the pods'
// IPs, without hostnames.
func redisNodes() []policies.RedisNode {
	slots := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	var out []policies.RedisNode
	for i := 0; i < 6; i++ {
		n := policies.RedisNode{ID: fmt.Sprintf("n%d-%037d", i, 0), IP: fmt.Sprintf("10.0.0.%d", i+1)}
		if i < 3 {
			n.Role, n.Slots = policies.RoleMaster, [][2]int{slots[i]}
		} else {
			n.Role, n.MasterID = policies.RoleReplica, fmt.Sprintf("n%d-%037d", (i-2)%3, 0)
		}
		out = append(out, n)
	}
	return out
}

// shardView is what a test asserts of a cluster's shards after ApplyRedis.
type shardView struct {
	Source   string
	Shards   map[string]string // shard name → "pod role, pod role" in member order
	Never    map[string]string // pod → why it is never evicted
	Warnings []string
}

func viewShards(c *policies.Cluster) shardView {
	v := shardView{Source: c.ShardSource.String(), Shards: map[string]string{}, Never: map[string]string{}, Warnings: c.Warnings}
	for _, sh := range c.Shards {
		var parts []string
		for _, i := range sh.Members {
			mem := c.Members[i]
			if mem.ShardIndex != c.Members[sh.Members[0]].ShardIndex || c.Shards[mem.ShardIndex] != sh {
				parts = append(parts, "MISINDEXED")
			}
			parts = append(parts, mem.Name()+" "+string(mem.Role))
		}
		v.Shards[sh.Name] = strings.Join(parts, ", ")
	}
	for _, mem := range c.Members {
		if why := mem.NotEvictable(); why != "" {
			v.Never[mem.Name()] = why
		}
	}
	return v
}

// TestApplyRedis checks shards and roles read from CLUSTER NODES lines: matched by pod IP or by
// announced hostname, grouped by Redis when the shard source says so (and, for auto, only when
// the owners disagree), never guessing a pod Redis does not know into a shard.
func TestApplyRedis(t *testing.T) {
	// shards returns Redis's three shards (redisNodes) with the pods unknown taken out into
	// shards of their own.
	shards := func(unknown ...string) map[string]string {
		out := map[string]string{}
		for _, sh := range [][3]string{{"slots-0-5460", "rc-0", "rc-5"}, {"slots-5461-10922", "rc-1", "rc-3"}, {"slots-10923-16383", "rc-2", "rc-4"}} {
			var parts []string
			for k, pod := range sh[1:] {
				if slices.Contains(unknown, pod) {
					out[pod] = pod + " "
					continue
				}
				parts = append(parts, pod+" "+[]string{"master", "replica"}[k])
			}
			out[sh[0]] = strings.Join(parts, ", ")
		}
		return out
	}
	threeShards := shards()
	const unknown = "Redis does not know the pod (no node at its pod IP, hostname or Service address)"
	for _, tc := range []struct {
		name       string
		source     string
		recreating []string // Options.RecreatingOwners
		snap       func(*policies.Snapshot)
		nodes      func([]policies.RedisNode) []policies.RedisNode
		want       shardView
	}{
		{
			name: "one StatefulSet for the whole cluster (Bitnami), auto → Redis's 3 shards of 2, roles, all evictable",
			want: shardView{Source: "redis", Shards: threeShards, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name:   "one StatefulSet, shard source owner → one shard of 6 as asked; roles from Redis",
			source: "owner",
			want: shardView{Source: "owner", Never: map[string]string{}, Warnings: []string{}, Shards: map[string]string{
				"rc": "rc-0 master, rc-1 master, rc-2 master, rc-3 replica, rc-4 replica, rc-5 replica",
			}},
		},
		{
			name:       "owners that agree with Redis (one InstanceSet per shard, a re-creating owner), auto → the owners' shards kept, named after them",
			recreating: []string{"InstanceSet"},
			snap: func(s *policies.Snapshot) {
				for _, p := range s.Pods {
					ord := map[string]int{"rc-0": 0, "rc-5": 0, "rc-1": 1, "rc-3": 1, "rc-2": 2, "rc-4": 2}[p.Name]
					p.OwnerReferences[0].Kind, p.OwnerReferences[0].Name = "InstanceSet", fmt.Sprintf("shard-%d", ord)
				}
			},
			want: shardView{Source: "owner", Shards: map[string]string{
				"shard-0": "rc-0 master, rc-5 replica", "shard-1": "rc-1 master, rc-3 replica", "shard-2": "rc-2 master, rc-4 replica",
			}, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name: "Redis announces FQDNs and its IPs are not the pods' → matched by hostname alone",
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].Hostname = fmt.Sprintf("rc-%d.rc-headless.%s.svc.cluster.local", i, fixture.Namespace)
					ns[i].IP = fmt.Sprintf("192.168.9.%d", i)
				}
				return ns
			},
			want: shardView{Source: "redis", Shards: threeShards, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name: "a hostname of another namespace or subdomain names no pod → nothing matched by it",
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				ns[5].Hostname, ns[5].IP = "rc-5.rc-headless.other.svc.cluster.local", "192.168.9.5"
				ns[4].Hostname, ns[4].IP = "rc-4.elsewhere", "192.168.9.4"
				return ns
			},
			want: shardView{Source: "redis", Shards: shards("rc-4", "rc-5"), Never: map[string]string{
				"rc-4": "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown",
				"rc-5": "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown",
			}, Warnings: []string{"pods rc-4, rc-5 are never evicted: Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown"}},
		},
		{
			name: "a pod Redis does not know (not joined yet) → a shard of its own, never evicted, warned; not guessed",
			snap: func(s *policies.Snapshot) { s.Pods[4].Status.PodIP = "10.0.0.99" },
			want: shardView{Source: "redis", Shards: shards("rc-4"), Never: map[string]string{"rc-4": "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown"},
				Warnings: []string{"pod rc-4 is never evicted: Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown"}},
		},
		{
			name: "a Pending pod → not in Redis yet, its shard unknown",
			snap: func(s *policies.Snapshot) {
				s.Pods[4].Spec.NodeName, s.Pods[4].Status.PodIP, s.Pods[4].Status.Phase = "", "", corev1.PodPending
			},
			want: shardView{Source: "redis", Shards: shards("rc-4"), Never: map[string]string{"rc-4": "Pending, not in Redis yet: shard unknown"},
				Warnings: []string{"pod rc-4 is never evicted: Pending, not in Redis yet: shard unknown"}},
		},
		{
			name: "a pod re-created with a new node ID leaves its old one failing under the same hostname → the live one",
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].Hostname = fmt.Sprintf("rc-%d.rc-headless", i)
				}
				old := ns[1]
				old.ID, old.Failing, old.Slots = strings.Repeat("f", 40), true, nil
				return append(ns, old)
			},
			want: shardView{Source: "redis", Shards: threeShards, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name: "two masters claiming the same slots (Redis mid-conflict) → still two shards, the second named with its node ID",
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				ns[1].Slots = ns[0].Slots
				return ns
			},
			want: shardView{Source: "redis", Never: map[string]string{}, Warnings: []string{}, Shards: map[string]string{
				"slots-0-5460": "rc-0 master, rc-5 replica", "slots-0-5460@n1-00000": "rc-1 master, rc-3 replica", "slots-10923-16383": "rc-2 master, rc-4 replica",
			}},
		},
		{
			name: "externalAccess: Redis announces LoadBalancer IPs, each pod's own Service has its IP in status → matched by Service",
			snap: func(s *policies.Snapshot) {
				perPodServices(s, func(i int, svc *corev1.Service) {
					svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("203.0.113.%d", 10+i)}}
				})
			},
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].IP = fmt.Sprintf("203.0.113.%d", 10+i)
				}
				return ns
			},
			want: shardView{Source: "redis", Shards: threeShards, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name: "externalAccess, a LoadBalancer not provisioned yet: spec.loadBalancerIP alone → matched by Service",
			snap: func(s *policies.Snapshot) {
				perPodServices(s, func(i int, svc *corev1.Service) { svc.Spec.LoadBalancerIP = fmt.Sprintf("203.0.113.%d", 10+i) })
			},
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].IP = fmt.Sprintf("203.0.113.%d", 10+i)
				}
				return ns
			},
			want: shardView{Source: "redis", Shards: threeShards, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name: "externalAccess hostMode: nodes announce the LoadBalancers' hostnames at IPs no pod has → matched by Service hostname",
			snap: func(s *policies.Snapshot) {
				perPodServices(s, func(i int, svc *corev1.Service) {
					svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: fmt.Sprintf("lb-%d.elb.example.com", i)}}
				})
			},
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].IP, ns[i].Hostname = fmt.Sprintf("192.168.9.%d", i), fmt.Sprintf("LB-%d.elb.example.com.", i)
				}
				return ns
			},
			want: shardView{Source: "redis", Shards: threeShards, Never: map[string]string{}, Warnings: []string{}},
		},
		{
			name: "a LoadBalancer Service selecting every pod (the chart's own rc Service) → its address names no pod",
			snap: func(s *policies.Snapshot) {
				perPodServices(s, func(i int, svc *corev1.Service) {
					svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: fmt.Sprintf("203.0.113.%d", 10+i)}}
				})
				s.Services = append(s.Services, &corev1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: fixture.Namespace},
					Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{policies.DefaultClusterLabel: "rc"}},
					Status:     corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "203.0.113.99"}}}},
				})
			},
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].IP = fmt.Sprintf("203.0.113.%d", 10+i)
				}
				ns[4].IP = "203.0.113.99"
				return ns
			},
			want: shardView{Source: "redis", Shards: shards("rc-4"), Never: map[string]string{
				"rc-4": "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown",
			}, Warnings: []string{"pod rc-4 is never evicted: Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown"}},
		},
		{
			name: "no Services: nodes at LoadBalancer IPs → no pod known nothing guessed",
			nodes: func(ns []policies.RedisNode) []policies.RedisNode {
				for i := range ns {
					ns[i].IP = fmt.Sprintf("203.0.113.%d", 10+i)
				}
				return ns
			},
			want: shardView{Source: "owner", Shards: map[string]string{"rc": "rc-0 , rc-1 , rc-2 , rc-3 , rc-4 , rc-5 "}, Never: map[string]string{
				"rc-0": unknown, "rc-1": unknown, "rc-2": unknown, "rc-3": unknown, "rc-4": unknown, "rc-5": unknown,
			}, Warnings: []string{"pods rc-0, rc-1, rc-2, rc-3, rc-4, rc-5 are never evicted: " + unknown}},
		},
		{
			name: "two pods with one IP (a CNI reusing it) → that node matched to neither",
			snap: func(s *policies.Snapshot) { s.Pods[4].Status.PodIP = "10.0.0.6" },
			want: shardView{Source: "redis", Shards: shards("rc-4", "rc-5"), Never: map[string]string{
				"rc-4": "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown",
				"rc-5": "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown",
			}, Warnings: []string{
				"Redis node n5-00000 at 10.0.0.6: more than one pod has that IP",
				"pods rc-4, rc-5 are never evicted: Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown",
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := bitnamiLike()
			if tc.snap != nil {
				tc.snap(snap)
			}
			src, err := policies.ParseShardSource(tc.source)
			if err != nil {
				t.Fatal(err)
			}
			m, err := policies.Build(snap, policies.Options{ShardSource: src, RecreatingOwners: tc.recreating})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			nodes := redisNodes()
			if tc.nodes != nil {
				nodes = tc.nodes(nodes)
			}
			c.ApplyRedis(nodes)
			if diff := cmp.Diff(tc.want, viewShards(c)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// The regrouped cluster is read as any other: its rules and spread counts follow the
			// renumbered members.
			if diff := cmp.Diff(evaluateRebuilt(t, snap, c), c.Evaluate(c.Current())); diff != "" {
				t.Errorf("violations after ApplyRedis (-built with the same shards +got):\n%s", diff)
			}
		})
	}
}

// evaluateRebuilt builds the same snapshot with the shards c ended with as a shard label, and
// returns its violations: ApplyRedis's regrouping must leave the model as Build would build it.
func evaluateRebuilt(t *testing.T, snap *policies.Snapshot, c *policies.Cluster) []policies.Violation {
	t.Helper()
	const key = "test/shard"
	shardOf := map[string]string{}
	for _, mem := range c.Members {
		shardOf[mem.Name()] = mem.Shard
	}
	clone := *snap
	clone.Pods = nil
	for _, p := range snap.Pods {
		p = p.DeepCopy()
		p.Labels[key] = shardOf[p.Name]
		clone.Pods = append(clone.Pods, p)
	}
	opts := c.Model().Options
	opts.ShardSource = policies.ShardSource{Kind: policies.ShardLabel, Key: key}
	m, err := policies.Build(&clone, opts)
	if err != nil {
		t.Fatal(err)
	}
	rc := m.Clusters[0]
	for i, mem := range rc.Members {
		mem.Role = c.Members[i].Role
	}
	return rc.Evaluate(rc.Current())
}

// TestRedisSourceNotRead checks that with shards from Redis and Redis not read, no pod is guessed
// into a shard: each is a shard of its own, none is evicted, and a warning says why.
func TestRedisSourceNotRead(t *testing.T) {
	m, err := policies.Build(bitnamiLike(), policies.Options{ShardSource: policies.ShardSource{Kind: policies.ShardRedis}})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Clusters[0]
	if len(c.Shards) != 6 {
		t.Errorf("%d shards, want 6 (one per pod)", len(c.Shards))
	}
	for _, mem := range c.Members {
		if mem.NotEvictable() == "" || mem.ShardKnown() {
			t.Errorf("%s: evictable %q, shard known %v; want neither", mem.Name(), mem.NotEvictable(), mem.ShardKnown())
		}
	}
	want := []string{"pods rc-0, rc-1, rc-2, rc-3, rc-4, rc-5 are never evicted: shard unknown: shards come from Redis, which was not read"}
	if diff := cmp.Diff(want, c.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// TestOwners checks which pods may be evicted by their controller, and where N and their
// re-creation spec come from.
func TestOwners(t *testing.T) {
	own := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = nil
			if kind != "" {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "x/v1", Kind: kind, Name: "owner-" + kind, Controller: ptr.To(true)}}
			}
		}
	}
	for _, tc := range []struct {
		name       string
		kind       string // the pods' controller ("StatefulSet": rc's own)
		recreating []string
		keepSTS    bool
		wantN      int
		wantWhy    string // NotEvictable of every pod ("" evictable)
		wantOwner  string
	}{
		{name: "StatefulSet → evictable, N its replicas", kind: "StatefulSet", keepSTS: true, wantN: 6, wantOwner: "StatefulSet/rc"},
		{name: "StatefulSet missing from the snapshot → never evicted (no template), N the pod count", kind: "StatefulSet", wantN: 6, wantOwner: "StatefulSet/rc",
			wantWhy: "StatefulSet rc is not in the snapshot: the re-creation template is unknown"},
		{name: "InstanceSet not named as re-creating → no Redis workload: no cluster", kind: "InstanceSet"},
		{name: "InstanceSet named as re-creating → evictable, re-created as it is", kind: "InstanceSet", recreating: []string{"InstanceSet"}, wantN: 6, wantOwner: "InstanceSet/owner-InstanceSet"},
		{name: "no controller → never evicted, even when every kind is named", kind: "", recreating: []string{"InstanceSet", "StatefulSet"}, wantN: 6,
			wantWhy: "no controller: nothing would re-create the pod"},
		{name: "a StatefulSet of another size beside pods of another owner → N from the StatefulSet", kind: "InstanceSet", recreating: []string{"InstanceSet"}, keepSTS: true, wantN: 6, wantOwner: "InstanceSet/owner-InstanceSet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := bitnamiLike()
			if tc.kind != "StatefulSet" {
				for _, p := range snap.Pods {
					own(tc.kind)(p)
				}
			}
			if !tc.keepSTS {
				snap.StatefulSets = nil
			}
			m, err := policies.Build(snap, policies.Options{RecreatingOwners: tc.recreating})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantN == 0 {
				if len(m.Clusters) != 0 {
					t.Fatalf("%d clusters, want none", len(m.Clusters))
				}
				return
			}
			c := m.Clusters[0]
			if c.N != tc.wantN {
				t.Errorf("N = %d, want %d", c.N, tc.wantN)
			}
			for _, mem := range c.Members {
				if got := mem.NotEvictable(); got != tc.wantWhy {
					t.Errorf("%s: NotEvictable %q, want %q", mem.Name(), got, tc.wantWhy)
				}
				if mem.Owner != tc.wantOwner {
					t.Errorf("%s: owner %q, want %q", mem.Name(), mem.Owner, tc.wantOwner)
				}
				if tc.kind != "StatefulSet" && mem.Template() != mem.Pod {
					t.Errorf("%s: re-created from a template; a pod of another owner comes back as it is", mem.Name())
				}
			}
			if tc.wantWhy != "" {
				names := make([]string, len(c.Members))
				for i, mem := range c.Members {
					names[i] = mem.Name()
				}
				sort.Strings(names)
				want := []string{"pods " + strings.Join(names, ", ") + " are never evicted: " + tc.wantWhy}
				if diff := cmp.Diff(want, c.Warnings); diff != "" {
					t.Errorf("warnings (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestParseRole(t *testing.T) {
	for in, want := range map[string]policies.Role{
		"master": policies.RoleMaster, "Primary": policies.RoleMaster, // OT's redis-role, KubeBlocks' kubeblocks.io/role
		"slave": policies.RoleReplica, "replica": policies.RoleReplica, "secondary": policies.RoleReplica,
		"leader": policies.RoleUnknown, "": policies.RoleUnknown, // OT's role label follows the StatefulSet, not Redis
	} {
		if got := policies.ParseRole(in); got != want {
			t.Errorf("ParseRole(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMembership checks who is a member of a Redis cluster: the pods its workloads own, never a
// pod that merely shares the cluster label (another app of the same Helm release, the chart's
// cluster-update Job, a finished pod), and, with a workload selector, only the StatefulSets it
// matches.
func TestMembership(t *testing.T) {
	release := map[string]string{policies.DefaultClusterLabel: "rc"}
	web := func(name string) *corev1.Pod {
		return fixture.Pod(name, fixture.WithLabels(policies.DefaultClusterLabel, "rc", "app.kubernetes.io/name", "web"), fixture.On("n1"), func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rc-web-5d9c", Controller: ptr.To(true)}}
		})
	}
	job := fixture.Pod("rc-cluster-update-x7k2p", fixture.WithLabels(policies.DefaultClusterLabel, "rc", "app.kubernetes.io/name", "redis-cluster", "job-name", "rc-cluster-update"), fixture.On("n2"),
		func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "rc-cluster-update", Controller: ptr.To(true)}}
			p.Status.PodIP = "10.0.0.9"
		})
	done := fixture.Pod("rc-cluster-update-old", fixture.WithLabels(policies.DefaultClusterLabel, "rc"), fixture.On("n2"), fixture.Succeeded())
	db := fixture.StatefulSet("rc-postgresql", 1, release, fixture.TemplateOf(fixture.Pod("t", fixture.WithLabels(policies.DefaultClusterLabel, "rc", "app.kubernetes.io/name", "postgresql"))))
	dbPod := fixture.StatefulSetPod(db, 0, fixture.On("n3"))
	for _, tc := range []struct {
		name        string
		sel         string // Options.WorkloadSelector
		extra       []*corev1.Pod
		sts         bool // the StatefulSet rc-postgresql of the same release
		wantN       int
		wantMembers int
		wantNot     map[string]string // pod → the start of why it is not a member
	}{
		{
			name:  "two web pods and the update Job's pod of the same release, a finished pod → not members, N the StatefulSet's 6",
			extra: []*corev1.Pod{web("rc-web-1"), web("rc-web-2"), job, done}, wantN: 6, wantMembers: 6,
			wantNot: map[string]string{
				"rc-web-1": "owned by ReplicaSet rc-web-5d9c: not a Redis workload", "rc-web-2": "owned by ReplicaSet rc-web-5d9c: not a Redis workload",
				"rc-cluster-update-x7k2p": "owned by Job rc-cluster-update: a Job's pod is never a Redis cluster member",
			},
		},
		{
			name: "another StatefulSet of the release, no workload selector → taken as Redis (N 7)",
			sts:  true, extra: []*corev1.Pod{dbPod}, wantN: 7, wantMembers: 7, wantNot: map[string]string{},
		},
		{
			name: "another StatefulSet of the release, workload selector app.kubernetes.io/name=redis-cluster → not a member (N 6)",
			sel:  "app.kubernetes.io/name=redis-cluster", sts: true, extra: []*corev1.Pod{dbPod}, wantN: 6, wantMembers: 6,
			wantNot: map[string]string{"rc-postgresql-0": "owned by StatefulSet rc-postgresql, whose template the workload selector"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := bitnamiLike()
			for _, p := range snap.Pods {
				p.Labels["app.kubernetes.io/name"] = "redis-cluster"
			}
			snap.StatefulSets[0].Spec.Template.Labels = map[string]string{policies.DefaultClusterLabel: "rc", "app.kubernetes.io/name": "redis-cluster"}
			snap.Pods = append(snap.Pods, tc.extra...)
			if tc.sts {
				snap.StatefulSets = append(snap.StatefulSets, db)
			}
			sel, err := labels.Parse(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			m, err := policies.Build(snap, policies.Options{WorkloadSelector: sel})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Clusters) != 1 {
				t.Fatalf("%d clusters, want 1", len(m.Clusters))
			}
			c := m.Clusters[0]
			if c.N != tc.wantN || len(c.Members) != tc.wantMembers {
				t.Errorf("N %d, %d members; want %d and %d", c.N, len(c.Members), tc.wantN, tc.wantMembers)
			}
			got := map[string]string{}
			for _, nm := range c.NotMembers {
				got[nm.Pod.Name] = nm.Why
				if want, ok := tc.wantNot[nm.Pod.Name]; ok && strings.HasPrefix(nm.Why, want) {
					got[nm.Pod.Name] = want
				}
			}
			if diff := cmp.Diff(tc.wantNot, got); diff != "" {
				t.Errorf("not members (-want +got):\n%s", diff)
			}
			// A Redis node at a pod that is not a member is named, never matched.
			stray := policies.RedisNode{ID: fmt.Sprintf("n9-%037d", 0), IP: "10.0.0.9", Role: policies.RoleMaster}
			c.ApplyRedis(append(redisNodes(), stray))
			var strays []string
			for _, w := range c.Warnings {
				if strings.HasPrefix(w, "Redis node n9-00000") {
					strays = append(strays, w)
				}
			}
			var want []string
			if _, ok := tc.wantNot[job.Name]; ok {
				want = []string{"Redis node n9-00000 is pod rc-cluster-update-x7k2p, which is not a member (owned by Job rc-cluster-update: a Job's pod is never a Redis cluster member): not judged"}
			}
			if diff := cmp.Diff(want, strays); diff != "" {
				t.Errorf("warnings on the Redis node at the Job's pod (-want +got):\n%s", diff)
			}
		})
	}
}
