package scenario

import (
	"cmp"
	"crypto/sha1"
	"fmt"
	"math"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/policies/constraints"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// Layout is how a scenario's Redis cluster is laid out in Kubernetes objects: which StatefulSets
// hold its pods, their labels, PodDisruptionBudgets, and which pods Redis makes the shards of.
type Layout string

// Layouts.
const (
	// LayoutSeed is an operator that runs one StatefulSet per shard (as ucloud's
	// redis-cluster-operator does): one StatefulSet and one PodDisruptionBudget per shard, pods
	// labelled with the cluster and the shard, pod -0 the master. The zero value.
	LayoutSeed Layout = ""
	// LayoutBitnami is Bitnami's redis-cluster chart (bitnami/redis-cluster 13.0.5) as it installs
	// with its default values: one StatefulSet "<fullname>" holding every node of the cluster
	// (selector instance + name, RollingUpdate, podManagementPolicy Parallel, a volume claim
	// template redis-data of 8Gi ReadWriteOnce on the default StorageClass), the chart's standard
	// labels only, the "nano" requests (cpu 100m, memory 128Mi, ephemeral-storage 50Mi), one
	// PodDisruptionBudget for the release (maxUnavailable 1, the cluster-update Job's pod
	// excluded), the password in Secret "<fullname>" key "redis-password". The chart's init runs
	// redis-cli --cluster create --cluster-replicas R over the pods in ordinal order: ordinals
	// 0..M-1 become the masters, and the replicas pair as BitnamiOrdinal says.
	LayoutBitnami Layout = "bitnami"
	// LayoutOT is OT-CONTAINER-KIT's redis-operator (RedisCluster v1beta2): StatefulSets
	// "<name>-leader" (M pods) and "<name>-follower" (M·(PodsPerShard-1) pods), labels app,
	// redis_setup_type, role (leader|follower, fixed per StatefulSet), cluster=<name>, and
	// redis-role (master|slave, kept in step with Redis by the operator), one PodDisruptionBudget
	// per role (spec.redisLeader.pdb, spec.redisFollower.pdb). Follower j replicates leader j mod
	// M at creation.
	LayoutOT Layout = "ot"
)

// Bitnami chart facts (bitnami/redis-cluster, templates/redis-statefulset.yaml,
// poddisruptionbudget.yaml, secret.yaml; bitnami/common's labels and affinity presets).
const (
	// BitnamiChartName is the chart's name: app.kubernetes.io/name's value.
	BitnamiChartName = "redis-cluster"
	// BitnamiChart is helm.sh/chart's value (the chart version the shapes were copied from).
	BitnamiChart = "redis-cluster-13.0.5"
	// BitnamiAppVersion is app.kubernetes.io/version's value.
	BitnamiAppVersion = "8.2.1"
	// BitnamiInstanceLabel names the Helm release: the label that tells one Redis cluster from
	// another.
	BitnamiInstanceLabel = "app.kubernetes.io/instance"
	// BitnamiPasswordKey is the key of the password in Secret "<fullname>".
	BitnamiPasswordKey = "redis-password"
)

// OT redis-operator facts (internal/controller/common/labels.go, constants.go,
// internal/k8sutils/redis-cluster.go, poddisruption.go, internal/webhook/pod_webhook.go).
const (
	// OTClusterLabel is the label every pod of a RedisCluster carries with its name.
	OTClusterLabel = "cluster"
	// OTRoleLabel is leader or follower: the pod's StatefulSet, not its Redis role.
	OTRoleLabel = "role"
	// OTRedisRoleLabel is master or slave, patched by the operator to follow Redis.
	OTRedisRoleLabel = "redis-role"
	// OTAntiAffinityAnnotation, "true" on a RedisCluster, makes the operator's webhook add a
	// required hostname anti-affinity between leader-i and follower-i.
	OTAntiAffinityAnnotation = "redisclusters.redis.redis.opstreelabs.in/role-anti-affinity"
)

// The Bitnami chart's persistence and resources with its default values (values.yaml:
// persistence.size, redis.resourcesPreset "nano").
const (
	// BitnamiClaimTemplate is the name of the StatefulSet's volume claim template (and of the pod
	// volume): the claims are "redis-data-<pod>".
	BitnamiClaimTemplate = "redis-data"
	// BitnamiClaimSize is persistence.size.
	BitnamiClaimSize = "8Gi"
	// BitnamiCPU, BitnamiMemory and BitnamiEphemeralStorage are the nano preset's requests.
	BitnamiCPU, BitnamiMemory, BitnamiEphemeralStorage = "100m", "128Mi", "50Mi"
)

// BitnamiOrdinal returns the ordinal of shard i's o-th pod as the chart's init forms the cluster
// (redis-cli --cluster create --cluster-replicas R over the N pods in ordinal order, every pod at
// an IP of its own): ordinals 0..M-1 are the masters (o = 0 gives i); redis-cli rotates the other
// ordinals by one, M+1, ..., N-1, M, and hands them out R at a time to masters 0, 1, ...: for 10
// pods and one replica each, master i with ordinal 5+((i+1) mod 5).
func (s Scenario) BitnamiOrdinal(i, o int) int { return s.bitnamiOrdinal(i, o) }

func (s Scenario) bitnamiOrdinal(i, o int) int {
	if o == 0 {
		return i
	}
	m, r := s.Shards, s.PodsPerShard-1
	rest := s.N() - m
	return m + (i*r+o-1+1)%rest
}

// BitnamiFullname returns the chart's fullname for the release (common.names.fullname): the
// release name when it contains the chart's name, else "<release>-redis-cluster".
func (s Scenario) BitnamiFullname() string {
	if strings.Contains(s.cluster(), s.bitnamiName()) {
		return s.cluster()
	}
	return s.cluster() + "-" + s.bitnamiName()
}

// bitnamiName is the chart's name in the release: BitnamiAlias, else BitnamiChartName.
func (s Scenario) bitnamiName() string { return cmp.Or(s.BitnamiAlias, BitnamiChartName) }

// ClusterLabel returns the pod label key whose value names the Redis cluster in the scenario's
// layout: policies.DefaultClusterLabel (seed), BitnamiInstanceLabel, OTClusterLabel.
func (s Scenario) ClusterLabel() string {
	switch s.Layout {
	case LayoutBitnami:
		return BitnamiInstanceLabel
	case LayoutOT:
		return OTClusterLabel
	}
	return policies.DefaultClusterLabel
}

// positions maps every pod name to its shard and its position in it (0: the master).
func (s Scenario) positions() map[string][2]int {
	out := make(map[string][2]int, s.N())
	for i := 0; i < s.Shards; i++ {
		for o := 0; o < s.PodsPerShard; o++ {
			out[s.PodName(i, o)] = [2]int{i, o}
		}
	}
	return out
}

// ShardOf returns the index of the shard the named pod was created in (as the cluster was
// formed: a master and its replicas, which Redis alone knows in the Bitnami and OT layouts), or -1.
func (s Scenario) ShardOf(pod string) int {
	if pos, ok := s.positions()[pod]; ok {
		return pos[0]
	}
	return -1
}

// ShardPods returns the names of shard i's pods, its master first.
func (s Scenario) ShardPods(i int) []string {
	out := make([]string, s.PodsPerShard)
	for o := range out {
		out[o] = s.PodName(i, o)
	}
	return out
}

// bitnamiLabels returns the chart's common.labels.standard for the release.
func (s Scenario) bitnamiLabels() map[string]string {
	return map[string]string{
		AppLabel: s.bitnamiName(), BitnamiInstanceLabel: s.cluster(),
		"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": s.bitnamiName() + strings.TrimPrefix(BitnamiChart, BitnamiChartName),
		"app.kubernetes.io/version": BitnamiAppVersion,
	}
}

// bitnamiMatchLabels returns the chart's common.labels.matchLabels: the StatefulSet's and the
// PodDisruptionBudget's selector, and the affinity presets' label selector.
func (s Scenario) bitnamiMatchLabels() map[string]string {
	return map[string]string{AppLabel: s.bitnamiName(), BitnamiInstanceLabel: s.cluster()}
}

// otLabels returns the labels of the OT StatefulSet of role (leader or follower), which its pods
// carry too: getRedisLabels(<name>-<role>, cluster, role) plus cluster=<name>.
func (s Scenario) otLabels(role string) map[string]string {
	return map[string]string{"app": s.cluster() + "-" + role, "redis_setup_type": "cluster", OTRoleLabel: role, OTClusterLabel: s.cluster()}
}

// otPDBLabels returns the selector of OT's PodDisruptionBudget for role
// (generatePodDisruptionBudgetDef).
func (s Scenario) otPDBLabels(role string) map[string]string {
	return map[string]string{"app": s.cluster() + "-" + role, OTRoleLabel: role}
}

// spreadValues returns the recommended spread constraints and required node affinity for the whole
// cluster (constraints.Generate), as a chart's or an operator's values set them: the Bitnami
// chart's redis.topologySpreadConstraints and redis.nodeAffinityPreset (type hard, the zone key,
// the zones), OT's spec.redisLeader/redisFollower.topologySpreadConstraints and .affinity. The
// recommended anti-affinity inside the shard has no such value (no label names the shard), so it is
// left out.
func (s Scenario) spreadValues() ([]corev1.TopologySpreadConstraint, *corev1.NodeAffinity, error) {
	spread, aff, err := constraints.Generate(constraints.Input{
		ClusterLabels: s.ClusterLabels(), ShardLabels: s.ClusterLabels(), // the shard's anti-affinity is dropped
		Shards: s.Shards, PodsPerShard: s.PodsPerShard, Zones: s.ZoneNames(), Relaxed: s.Relaxed,
	})
	if err != nil {
		return nil, nil, err
	}
	return spread, aff.NodeAffinity, nil
}

// layoutTemplate returns the pod template of the Bitnami StatefulSet, or of OT's StatefulSet of
// role.
func (s Scenario) layoutTemplate(role string) (corev1.PodTemplateSpec, error) {
	spread, nodeAff, err := s.spreadValues()
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	var values bitnamiValues
	if s.Layout == LayoutBitnami && s.BitnamiValues != "" {
		if values, err = parseBitnamiValues(s.BitnamiValues); err != nil {
			return corev1.PodTemplateSpec{}, err
		}
	}
	var renderErr error
	tmpl := fixture.Pod("template", fixture.WithTolerations(s.Tolerations...), func(p *corev1.Pod) {
		p.Spec.SchedulerName = s.SchedulerName
		p.Spec.TopologySpreadConstraints = spread
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		c := &p.Spec.Containers[0]
		c.Image = s.image()
		c.Ports = []corev1.ContainerPort{{Name: "tcp-redis", ContainerPort: 6379}, {Name: "tcp-redis-bus", ContainerPort: 16379}}
		switch s.Layout {
		case LayoutBitnami:
			p.Labels = s.bitnamiLabels()
			c.Name = s.BitnamiFullname()
			c.Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(BitnamiCPU), corev1.ResourceMemory: resource.MustParse(BitnamiMemory),
				corev1.ResourceEphemeralStorage: resource.MustParse(BitnamiEphemeralStorage),
			}
			c.VolumeMounts = []corev1.VolumeMount{{Name: BitnamiClaimTemplate, MountPath: "/bitnami/redis/data"}}
			// Every node's address, as the chart gives it (lint and the selection tell the
			// chart's pods by it under an alias).
			var nodes strings.Builder
			for k := 0; k < s.N(); k++ {
				fmt.Fprintf(&nodes, "%s-%d.%s-headless ", s.BitnamiFullname(), k, s.BitnamiFullname())
			}
			c.Env = []corev1.EnvVar{{Name: "REDIS_NODES", Value: nodes.String()}}
			if s.NoPersistence { // persistence.enabled=false: an emptyDir instead of the claim
				p.Spec.Volumes = []corev1.Volume{{Name: BitnamiClaimTemplate, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}
			if s.BitnamiValues != "" {
				renderErr = values.renderPodSpec(&p.Spec, s.bitnamiMatchLabels())
				break
			}
			// redis.podAntiAffinityPreset: soft (the chart's default): common.affinities.pods.soft.
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAff, PodAntiAffinity: &corev1.PodAntiAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 1, PodAffinityTerm: fixture.Term(policies.LabelHostname, s.bitnamiMatchLabels()),
				}},
			}}
		case LayoutOT:
			p.Labels = s.otLabels(role)
			// generateStatefulSetsAnots: the instance annotation names the StatefulSet.
			p.Annotations = map[string]string{"redis.opstreelabs.in": "true", "redis.opstreelabs.instance": s.cluster() + "-" + role}
			c.Name = s.cluster() + "-" + role
			if nodeAff != nil {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAff}
			}
		}
	})
	if renderErr != nil {
		return corev1.PodTemplateSpec{}, renderErr
	}
	t := fixture.TemplateOf(tmpl)
	t.Annotations = tmpl.Annotations
	return t, nil
}

// layoutStatefulSets returns the Bitnami StatefulSet or OT's two, with updateStrategy
// RollingUpdate (partition 0), as the chart and the operator create them.
func (s Scenario) layoutStatefulSets() ([]*appsv1.StatefulSet, error) {
	type set struct {
		name, role string
		replicas   int
		labels     map[string]string // the StatefulSet's own and its selector
	}
	var sets []set
	var claims []corev1.PersistentVolumeClaim
	switch s.Layout {
	case LayoutBitnami:
		if !s.NoPersistence {
			claims = []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: BitnamiClaimTemplate, Labels: s.bitnamiMatchLabels()},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(BitnamiClaimSize)}},
				},
			}}
		}
		sets = []set{{s.BitnamiFullname(), "", s.N(), s.bitnamiMatchLabels()}}
	case LayoutOT:
		if s.PodsPerShard < 2 {
			return nil, fmt.Errorf("scenario %s: the OT layout needs at least 2 pods per shard (a leader and a follower), got %d", s.Name, s.PodsPerShard)
		}
		sets = []set{
			{s.cluster() + "-leader", "leader", s.Shards, s.otLabels("leader")},
			{s.cluster() + "-follower", "follower", s.Shards * (s.PodsPerShard - 1), s.otLabels("follower")},
		}
	default:
		return nil, fmt.Errorf("scenario %s: unknown layout %q", s.Name, s.Layout)
	}
	var out []*appsv1.StatefulSet
	for _, st := range sets {
		t, err := s.layoutTemplate(st.role)
		if err != nil {
			return nil, err
		}
		out = append(out, fixture.StatefulSet(st.name, int32(st.replicas), st.labels, t, func(sts *appsv1.StatefulSet) {
			sts.Namespace = s.ns()
			sts.Labels = t.Labels
			sts.Spec.ServiceName = st.name + "-headless"
			sts.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{
				Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
			}
			// The chart's podManagementPolicy; OT's operator leaves the default (OrderedReady).
			if s.Layout == LayoutBitnami {
				sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
			} else {
				sts.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
			}
			sts.Spec.VolumeClaimTemplates = claims
		}))
	}
	return out, nil
}

// layoutPodDisruptionBudgets returns the Bitnami release's PodDisruptionBudget (pdb.create true,
// maxUnavailable 1, the chart's selector with its job-name exclusion) or OT's one per role
// (pdb.enabled, maxUnavailable 1).
func (s Scenario) layoutPodDisruptionBudgets() []*policyv1.PodDisruptionBudget {
	ns := func(b *policyv1.PodDisruptionBudget) { b.Namespace = s.ns() }
	switch s.Layout {
	case LayoutBitnami:
		name := s.BitnamiFullname()
		b := fixture.PodDisruptionBudget(name, &metav1.LabelSelector{
			MatchLabels: s.bitnamiMatchLabels(),
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "job-name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{name + "-cluster-update"},
			}},
		}, ns, func(b *policyv1.PodDisruptionBudget) { b.Labels = s.bitnamiLabels() })
		if s.BitnamiValues != "" {
			// Values that do not parse fail StatefulSets, which Snapshot asks first.
			if v, err := parseBitnamiValues(s.BitnamiValues); err == nil && !v.renderBudget(b) {
				return nil
			}
		}
		return []*policyv1.PodDisruptionBudget{b}
	case LayoutOT:
		var out []*policyv1.PodDisruptionBudget
		for _, role := range []string{"leader", "follower"} {
			out = append(out, fixture.PodDisruptionBudget(s.cluster()+"-"+role, &metav1.LabelSelector{MatchLabels: s.otPDBLabels(role)},
				ns, func(b *policyv1.PodDisruptionBudget) { b.Labels = s.otLabels(role) }))
		}
		return out
	}
	return nil
}

// podIP returns the pod IP of shard i's o-th pod in the Bitnami and OT layouts: 10.244.x.y, one
// per pod, in ordinal order for Bitnami (the chart's StatefulSet starts its pods in parallel,
// redis-cli meets them in ordinal order), in creation order for OT.
func (s Scenario) podIP(i, o int) string {
	k := o*s.Shards + i
	if s.Layout == LayoutBitnami {
		k = s.bitnamiOrdinal(i, o)
	}
	return fmt.Sprintf("10.244.%d.%d", k/250, k%250+1)
}

// RedisCliSlots returns the slot range redis-cli --cluster create gives master i of m (Redis
// 7.0's clusterManagerCommandCreate): a float32 share of 16384/m slots per master, each range
// ending at the rounded running sum (lround of cursor + share - 1, the cursor advancing by the
// share), the last at 16383. For 5 masters: 0-3276, 3277-6553, 6554-9829, 9830-13106,
// 13107-16383; for 3: 0-5460, 5461-10922, 10923-16383 (TestBitnamiFormedAsRedisCliForms checks
// them against redis-cli).
func RedisCliSlots(i, m int) [2]int {
	per := float32(16384) / float32(m)
	var cursor float32
	first := 0
	for k := 0; ; k++ {
		last := int(math.Round(float64(cursor + per - 1)))
		if last > 16384 || k == m-1 {
			last = 16383
		}
		if k == i {
			return [2]int{first, last}
		}
		first, cursor = last+1, cursor+per
	}
}

// RedisNodes returns the cluster's Redis nodes as it was formed (the Redis side of the Bitnami
// and OT layouts, for policies.Cluster.ApplyRedis): one per placed pod, at its pod IP (podIP),
// shard i's first pod a master serving the slots redis-cli gives master i (RedisCliSlots), the
// others its replicas;
// node IDs are the SHA-1 of the pod names. With ExternalAccess, a node is at its pod's
// LoadBalancer IP instead (BitnamiLoadBalancerIP). OT's nodes announce their pod's FQDN
// (<pod>.<StatefulSet>-headless.<namespace>.svc.cluster.local), as Redis 7 does with
// cluster-announce-hostname.
func (s Scenario) RedisNodes() []policies.RedisNode {
	id := func(pod string) string { return fmt.Sprintf("%x", sha1.Sum([]byte(pod))) }
	var out []policies.RedisNode
	for i := 0; i < s.Shards; i++ {
		master := s.PodName(i, 0)
		for o, pod := range s.ShardPods(i) {
			if s.Placement[pod] == "" {
				continue
			}
			n := policies.RedisNode{ID: id(pod), IP: s.podIP(i, o), Role: policies.RoleReplica, MasterID: id(master)}
			if s.ExternalAccess {
				n.IP = s.BitnamiLoadBalancerIP(s.bitnamiOrdinal(i, o))
			}
			if s.Layout == LayoutOT {
				set := pod[:strings.LastIndex(pod, "-")]
				n.Hostname = pod + "." + set + "-headless." + s.ns() + ".svc.cluster.local"
			}
			if o == 0 {
				n.Role, n.MasterID = policies.RoleMaster, ""
				n.Slots = [][2]int{RedisCliSlots(i, s.Shards)}
			}
			out = append(out, n)
		}
	}
	return out
}

// ClusterNodes returns RedisNodes as CLUSTER NODES prints them (for --redis-nodes files): port
// 6379, bus port 16379, config epoch i+1 for shard i's nodes, every link connected, the first
// line the answering node's ("myself").
func (s Scenario) ClusterNodes() string {
	var b strings.Builder
	epoch := map[string]int{} // master ID → config epoch
	for k, n := range s.RedisNodes() {
		addr := n.IP + ":6379@16379"
		if n.Hostname != "" {
			addr += "," + n.Hostname
		}
		flags, of, slots := "slave", n.MasterID, ""
		if n.Role == policies.RoleMaster {
			epoch[n.ID] = len(epoch) + 1
			flags, of = "master", "-"
			for _, r := range n.Slots {
				slots += fmt.Sprintf(" %d-%d", r[0], r[1])
			}
		}
		if k == 0 {
			flags = "myself," + flags
		}
		fmt.Fprintf(&b, "%s %s %s %s 0 1767225600000 %d connected%s\n", n.ID, addr, flags, of, epoch[cmp.Or(n.MasterID, n.ID)], slots)
	}
	return b.String()
}

// BitnamiSecret returns the chart's password Secret: "<fullname>", key BitnamiPasswordKey.
func (s Scenario) BitnamiSecret(password string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: s.BitnamiFullname(), Namespace: s.ns(), Labels: s.bitnamiLabels()},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{BitnamiPasswordKey: []byte(password)},
	}
}

// BitnamiLoadBalancerIP returns the IP of the LoadBalancer that exposes Bitnami pod ordinal o
// with ExternalAccess in a snapshot: 203.0.113.<10+o> (TEST-NET-3, RFC 5737).
func (s Scenario) BitnamiLoadBalancerIP(o int) string { return fmt.Sprintf("203.0.113.%d", 10+o) }

// BitnamiExternalAccessServices returns the Services the chart creates with
// cluster.externalAccess.enabled (svc-cluster-external-access.yaml): one per pod ordinal i,
// "<fullname>-<i>-svc", type LoadBalancer, port tcp-redis (port, the chart's
// cluster.externalAccess.service.port) and tcp-redis-bus (port+10000), labelled with the chart's
// labels and pod=<fullname>-<i>, selecting the chart's matchLabels and
// statefulset.kubernetes.io/pod-name=<fullname>-<i>, with spec.loadBalancerIP lbIP(i) (the
// chart's cluster.externalAccess.service.loadBalancerIP[i]). Their status is the cloud's to set.
func (s Scenario) BitnamiExternalAccessServices(port int, lbIP func(ordinal int) string) []*corev1.Service {
	var out []*corev1.Service
	for i := 0; i < s.N(); i++ {
		pod := fmt.Sprintf("%s-%d", s.BitnamiFullname(), i)
		labels := s.bitnamiLabels()
		labels["pod"] = pod
		sel := s.bitnamiMatchLabels()
		sel[appsv1.StatefulSetPodNameLabel] = pod
		out = append(out, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-svc", s.BitnamiFullname(), i), Namespace: s.ns(), Labels: labels},
			Spec: corev1.ServiceSpec{
				Type:           corev1.ServiceTypeLoadBalancer,
				LoadBalancerIP: lbIP(i),
				Ports: []corev1.ServicePort{
					{Name: "tcp-redis", Port: int32(port), TargetPort: intstr.FromString("tcp-redis")},
					{Name: "tcp-redis-bus", Port: int32(port + 10000), TargetPort: intstr.FromString("tcp-redis-bus")},
				},
				Selector: sel,
			},
		})
	}
	return out
}

// BitnamiPostScaleDown is PostScaleDown on Bitnami's chart: release "redis-cluster", one
// StatefulSet of 10 pods, masters redis-cluster-0..4 (0..3 on n1, 4 on n2), replica 5+i of master
// i, the chart's PodDisruptionBudget, the recommended spread constraints and zones set through the
// chart's values (redis.topologySpreadConstraints, redis.nodeAffinityPreset) and its default soft
// anti-affinity.
func BitnamiPostScaleDown() Scenario {
	return postScaleDownAs("bitnami-post-scale-down", LayoutBitnami,
		"Bitnami redis-cluster chart, 10 nodes (5 masters, 1 replica each) in one StatefulSet after a scale-down: n1 holds 4 masters, zone-a 5 pods.")
}

// BitnamiAliasPostScaleDown is BitnamiPostScaleDown installed as the subchart of an umbrella
// chart: release web, the chart under the alias sessions (pods web-sessions-<i>, labelled
// app.kubernetes.io/name=sessions and helm.sh/chart=sessions-13.0.5).
func BitnamiAliasPostScaleDown() Scenario {
	s := postScaleDownAs("bitnami-alias-post-scale-down", LayoutBitnami,
		"BitnamiPostScaleDown as the subchart sessions of the umbrella release web.")
	s.Cluster, s.BitnamiAlias = "web", "sessions"
	return s.Placed(postScaleDownPlacement)
}

// BitnamiZonalPostScaleDown is BitnamiPostScaleDown with the chart's default persistence on a
// cloud: every pod's data on its 8Gi claim of the chart's volumeClaimTemplate "redis-data"
// (StorageClass "zonal"), bound to a PersistentVolume pinned to its node's zone, as a cloud's
// disks are. The five pods of zone a are masters: no plan moves one unless its claim may be
// released, and then only after it is failed over (its pod a replica when its claim goes).
func BitnamiZonalPostScaleDown() Scenario {
	s := postScaleDownAs("bitnami-zonal-post-scale-down", LayoutBitnami,
		"BitnamiPostScaleDown with a zonal 8Gi PersistentVolume per pod: zone-a's 5 masters are pinned; with claims releasable a master is failed over and its pod moves with its claim released.")
	s.Claims = &ClaimTemplate{Name: BitnamiClaimTemplate, StorageClass: "zonal", Size: BitnamiClaimSize}
	return s
}

// BitnamiExternalAccessPostScaleDown is BitnamiPostScaleDown with the chart's
// cluster.externalAccess, in namespace "bitnami-lb": a LoadBalancer Service per pod, every Redis
// node announcing its LoadBalancer's IP, so that CLUSTER NODES names no pod IP and the pods are
// matched to their nodes through the Services.
func BitnamiExternalAccessPostScaleDown() Scenario {
	s := postScaleDownAs("bitnami-external-access-post-scale-down", LayoutBitnami,
		"BitnamiPostScaleDown with externalAccess: each pod exposed by a LoadBalancer Service of its own, whose IP its Redis node announces.")
	s.Namespace, s.ExternalAccess = "bitnami-lb", true
	return s
}

// OTPostScaleDown is PostScaleDown on OT's redis-operator: RedisCluster "redis-cluster",
// StatefulSets redis-cluster-leader and redis-cluster-follower of 5 each, leaders 0..3 on n1 and
// 4 on n2, follower i replicating leader i, a PodDisruptionBudget per role, the recommended spread
// constraints and zones set through spec.redisLeader/redisFollower.
func OTPostScaleDown() Scenario {
	return postScaleDownAs("ot-post-scale-down", LayoutOT,
		"OT redis-operator RedisCluster, 5 leaders and 5 followers after a scale-down: n1 holds 4 masters, zone-a 5 pods; a PDB per role.")
}

func postScaleDownAs(name string, l Layout, desc string) Scenario {
	return Scenario{
		Name: name, Description: desc, Layout: l, Namespace: string(l), Cluster: "redis-cluster",
		Zones: ThreeZones(), Shards: 5, PodsPerShard: 2,
	}.Placed(postScaleDownPlacement)
}
