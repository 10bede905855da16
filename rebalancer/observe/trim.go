package observe

import (
	"encoding/binary"
	"maps"
	"slices"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// Trimming keeps what the model (policies.Build), the rules, the filter, the planner, the linter
// and the executor read from an object, and nothing else. ReadSnapshot and DecodeSnapshot read
// each object once, from a page of a LIST or from one item of a kubectl dump, and keep only its
// trimmed copy, so a snapshot holds the model's input, not the API server's objects
// (managedFields, container statuses, node images, kubectl's last-applied annotation and the
// like are most of those).
//
// What each kind keeps (everything else is dropped):
//
//   - every object: name, namespace, UID, resourceVersion (the executor's eviction event refers
//     to it), labels, owner references, creation and deletion timestamps;
//   - Pod: spec.nodeName, hostname and subdomain (a Redis node announcing a hostname is matched
//     to its pod by them), nodeSelector, affinity, tolerations, topologySpreadConstraints,
//     schedulerName, hostNetwork, overhead and resources (pod level), the containers' and init
//     containers' name, resources, restartPolicy (NodeResourcesFit's requests), the ports
//     that bind a host port (NodePorts) and the name (no value) of a REDIS_NODES variable
//     (Bitnami's redis-cluster chart under an alias: policies.BitnamiRedisCluster), the volumes' names and their persistentVolumeClaim or
//     ephemeral source (VolumeBinding, VolumeZone, NodeVolumeLimits) or inline disk
//     (gcePersistentDisk, awsElasticBlockStore, rbd, iscsi: VolumeRestrictions; azureDisk,
//     cinder, portworxVolume: NodeVolumeLimits' CSI migration); status.phase, podIP and
//     conditions without their times;
//   - Node: spec.unschedulable and taints; status.allocatable (status.capacity only when
//     allocatable is missing); the Ready condition's status and reason (no times: a heartbeat
//     changes nothing kept);
//   - StatefulSet: spec.replicas, selector and template (its labels, and its spec trimmed as a
//     pod's), the names of its volumeClaimTemplates (the claims it re-creates, which a move may
//     release); status.updateRevision and currentRevision;
//   - PodDisruptionBudget: spec; status without conditions and disruptedPods;
//   - PersistentVolumeClaim: spec.volumeName, storageClassName and accessModes
//     (VolumeRestrictions' ReadWriteOncePod), status.phase;
//   - PersistentVolume: spec.nodeAffinity, storageClassName and claimRef, its csi source's
//     driver and volumeHandle and its in-tree disk source (NodeVolumeLimits), status.phase (its
//     labels carry the legacy zone labels VolumeZone reads);
//   - CSINode: the drivers' names and allocatable (NodeVolumeLimits' attach limits);
//   - Service: spec.type, selector, loadBalancerIP and externalIPs, and
//     status.loadBalancer.ingress's IPs and hostnames (a Redis node announcing one of them is
//     matched to the one pod the Service selects: policies.Member.ServiceAddrs).
//
// Trimmed objects of one snapshot share their equal parts: strings through the unique package,
// and equal affinities, spread constraints, tolerations, containers, conditions, owner
// references and label maps through a table keyed by their encoding, so 150,000 pods of a few
// thousand workloads hold each of those once per workload. Snapshot objects are read, never
// modified (policies.Snapshot), which is what makes sharing safe.
//
// TestTrimKeepsWhatTheModelReads checks that the model, the rules, the filter and the planner give
// the same answers on trimmed objects as on whole ones.

// Trim returns a snapshot of trimmed copies of snap's objects, as ReadSnapshot and DecodeSnapshot
// keep them. snap is not changed.
func Trim(snap *policies.Snapshot) *policies.Snapshot {
	t := newTrimmer()
	return &policies.Snapshot{
		Nodes:                  trimAll(snap.Nodes, t.node),
		Pods:                   trimAll(snap.Pods, t.pod),
		StatefulSets:           trimAll(snap.StatefulSets, t.statefulSet),
		PodDisruptionBudgets:   trimAll(snap.PodDisruptionBudgets, t.podDisruptionBudget),
		PersistentVolumeClaims: trimAll(snap.PersistentVolumeClaims, t.persistentVolumeClaim),
		PersistentVolumes:      trimAll(snap.PersistentVolumes, t.persistentVolume),
		CSINodes:               trimAll(snap.CSINodes, t.csiNode),
		Services:               trimAll(snap.Services, t.service),
		Namespaces:             trimAll(snap.Namespaces, t.namespace),
	}
}

// Trimmer trims objects one at a time as ReadSnapshot does (Trim's doc says what each kind
// keeps), sharing the equal parts of the objects it trims: a watched cache trims each object as
// it arrives. It is not safe for concurrent use: one per informer.
type Trimmer struct {
	t *trimmer
	// limit is how many shared parts the trimmer keeps before it starts a new table (0: no
	// limit), so that a long-lived trimmer does not grow with every part it has ever seen.
	limit int
}

// NewTrimmer returns a Trimmer that keeps at most limit shared parts before starting afresh (the
// objects trimmed before keep theirs; 0: no limit).
func NewTrimmer(limit int) *Trimmer { return &Trimmer{t: newTrimmer(), limit: limit} }

// Trim returns the trimmed copy of a Node, Pod, StatefulSet, PodDisruptionBudget,
// PersistentVolumeClaim, PersistentVolume, CSINode, Service or Namespace (pointers), and any
// other value as it is.
func (t *Trimmer) Trim(obj any) any {
	if t.limit > 0 && len(t.t.shared) > t.limit {
		t.t = newTrimmer()
	}
	switch o := obj.(type) {
	case *corev1.Node:
		return t.t.node(o)
	case *corev1.Pod:
		return t.t.pod(o)
	case *appsv1.StatefulSet:
		return t.t.statefulSet(o)
	case *policyv1.PodDisruptionBudget:
		return t.t.podDisruptionBudget(o)
	case *corev1.PersistentVolumeClaim:
		return t.t.persistentVolumeClaim(o)
	case *corev1.PersistentVolume:
		return t.t.persistentVolume(o)
	case *storagev1.CSINode:
		return t.t.csiNode(o)
	case *corev1.Service:
		return t.t.service(o)
	case *corev1.Namespace:
		return t.t.namespace(o)
	}
	return obj
}

// trimAll returns the trimmed copies of objs, in order (nil for none).
func trimAll[T any](objs []*T, trim func(*T) *T) []*T {
	var out []*T
	for _, o := range objs {
		out = append(out, trim(o))
	}
	return out
}

// trimmer trims the objects of one snapshot and shares their equal parts (see Trim). It is not
// safe for concurrent use.
type trimmer struct {
	// shared maps a part's kind tag and encoding to the first such part trimmed.
	shared map[string]any
	key    []byte
}

func newTrimmer() *trimmer {
	return &trimmer{shared: map[string]any{}}
}

// Tags of the shared parts' keys.
const (
	tagAffinity byte = iota + 1
	tagSpread
	tagTolerations
	tagContainers
	tagConditions
	tagOwners
	tagLabels
)

// protoMessage is what the generated API types implement.
type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendKey appends m's length and protobuf encoding to t.key (deterministic: the generated
// code writes map entries in key order).
func (t *trimmer) appendKey(m protoMessage) {
	n := m.Size()
	t.key = binary.AppendUvarint(t.key, uint64(n))
	start := len(t.key)
	t.key = slices.Grow(t.key, n)[:start+n]
	if _, err := m.MarshalToSizedBuffer(t.key[start:]); err != nil {
		// Cannot happen for a buffer of m.Size(); a key that cannot be built just shares nothing.
		t.key = append(t.key, 0xff)
	}
}

// share returns the part stored under t.key, or, when there is none, stores and returns what
// build makes (build must not use t.key).
func share[T any](t *trimmer, build func() T) T {
	if old, ok := t.shared[string(t.key)]; ok {
		return old.(T)
	}
	v := build()
	t.shared[string(t.key)] = v
	return v
}

// keyOf sets t.key to tag and the encodings of s's elements.
func keyOf[T any, P interface {
	*T
	protoMessage
}](t *trimmer, tag byte, s []T) {
	t.key = append(t.key[:0], tag)
	for i := range s {
		t.appendKey(P(&s[i]))
	}
}

// labels returns the shared copy of a label (or node selector) map, strings interned: the pods
// of one ReplicaSet (or Deployment revision) share one map.
func (t *trimmer) labels(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	t.key = append(t.key[:0], tagLabels)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		t.key = append(append(append(append(t.key, k...), 0), m[k]...), 0)
	}
	return share(t, func() map[string]string {
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[intern(k)] = intern(v)
		}
		return out
	})
}

// intern returns the canonical copy of s.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// meta keeps the metadata every kind keeps.
func (t *trimmer) meta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: intern(m.Namespace), UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels:            t.labels(m.Labels),
		CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
	if len(m.OwnerReferences) > 0 {
		keyOf(t, tagOwners, m.OwnerReferences)
		out.OwnerReferences = share(t, func() []metav1.OwnerReference {
			owners := make([]metav1.OwnerReference, len(m.OwnerReferences))
			for i, r := range m.OwnerReferences {
				r.APIVersion, r.Kind, r.Name = intern(r.APIVersion), intern(r.Kind), intern(r.Name)
				owners[i] = r
			}
			return owners
		})
	}
	return out
}

// pod returns the parts of p the model reads. p is not changed; the result shares no memory with
// it but strings.
func (t *trimmer) pod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: t.meta(&p.ObjectMeta), Spec: t.podSpec(&p.Spec)}
	out.Spec.NodeName = intern(p.Spec.NodeName)
	out.Spec.Hostname, out.Spec.Subdomain = p.Spec.Hostname, intern(p.Spec.Subdomain)
	out.Status.Phase = p.Status.Phase
	out.Status.PodIP = p.Status.PodIP
	if len(p.Status.Conditions) > 0 {
		t.key = append(t.key[:0], tagConditions)
		for _, c := range p.Status.Conditions {
			for _, f := range [...]string{string(c.Type), string(c.Status), c.Reason, c.Message} {
				t.key = append(append(t.key, f...), 0)
			}
		}
		out.Status.Conditions = share(t, func() []corev1.PodCondition {
			conds := make([]corev1.PodCondition, len(p.Status.Conditions))
			for i, c := range p.Status.Conditions {
				conds[i] = corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message}
			}
			return conds
		})
	}
	return out
}

// podSpec keeps the scheduling-relevant spec of a pod or pod template.
func (t *trimmer) podSpec(s *corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{
		NodeSelector:   t.labels(s.NodeSelector),
		SchedulerName:  intern(s.SchedulerName),
		HostNetwork:    s.HostNetwork,
		Overhead:       s.Overhead.DeepCopy(),
		Resources:      s.Resources.DeepCopy(),
		Containers:     t.containers(s.Containers, s.HostNetwork),
		InitContainers: t.containers(s.InitContainers, s.HostNetwork),
	}
	if s.Affinity != nil {
		t.key = append(t.key[:0], tagAffinity)
		t.appendKey(s.Affinity)
		out.Affinity = share(t, s.Affinity.DeepCopy)
	}
	if len(s.TopologySpreadConstraints) > 0 {
		keyOf(t, tagSpread, s.TopologySpreadConstraints)
		out.TopologySpreadConstraints = share(t, func() []corev1.TopologySpreadConstraint {
			spread := make([]corev1.TopologySpreadConstraint, len(s.TopologySpreadConstraints))
			for i := range s.TopologySpreadConstraints {
				s.TopologySpreadConstraints[i].DeepCopyInto(&spread[i])
				spread[i].TopologyKey = intern(spread[i].TopologyKey)
			}
			return spread
		})
	}
	if len(s.Tolerations) > 0 {
		keyOf(t, tagTolerations, s.Tolerations)
		out.Tolerations = share(t, func() []corev1.Toleration {
			tols := make([]corev1.Toleration, len(s.Tolerations))
			for i, tol := range s.Tolerations {
				tol.Key, tol.Value = intern(tol.Key), intern(tol.Value)
				tols[i] = tol
			}
			return tols
		})
	}
	if len(s.Volumes) > 0 {
		out.Volumes = make([]corev1.Volume, len(s.Volumes))
		for i, v := range s.Volumes {
			// Only the name of other volumes: the StatefulSet template's are matched by it.
			out.Volumes[i] = corev1.Volume{Name: intern(v.Name)}
			out.Volumes[i].PersistentVolumeClaim = v.PersistentVolumeClaim.DeepCopy()
			out.Volumes[i].Ephemeral = v.Ephemeral.DeepCopy()
			keepDisks(&out.Volumes[i].VolumeSource, &v.VolumeSource)
		}
	}
	return out
}

// keepDisks copies into out the inline disk sources of in that the filter reads: those
// VolumeRestrictions compares (GCE PD, AWS EBS, RBD, iSCSI) and those NodeVolumeLimits counts
// through CSI migration (Azure Disk, Cinder, Portworx besides GCE PD and AWS EBS).
func keepDisks(out, in *corev1.VolumeSource) {
	out.GCEPersistentDisk = in.GCEPersistentDisk.DeepCopy()
	out.AWSElasticBlockStore = in.AWSElasticBlockStore.DeepCopy()
	out.RBD = in.RBD.DeepCopy()
	out.ISCSI = in.ISCSI.DeepCopy()
	out.AzureDisk = in.AzureDisk.DeepCopy()
	out.Cinder = in.Cinder.DeepCopy()
	out.PortworxVolume = in.PortworxVolume.DeepCopy()
}

// hostPorts returns the ports of a container that bind a host port, or, with hostNetwork, that
// the API server makes host ports (NodePorts reads them), nil when none.
func hostPorts(ps []corev1.ContainerPort, hostNetwork bool) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range ps {
		if p.HostPort > 0 || hostNetwork && p.ContainerPort > 0 {
			out = append(out, corev1.ContainerPort{HostIP: p.HostIP, HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol})
		}
	}
	return out
}

// containers keeps each container's name, resources, restart policy, host ports and keptEnv.
func (t *trimmer) containers(cs []corev1.Container, hostNetwork bool) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	t.key = append(t.key[:0], tagContainers)
	for i := range cs {
		t.key = append(append(t.key, cs[i].Name...), 0)
		if rp := cs[i].RestartPolicy; rp != nil {
			t.key = append(t.key, *rp...)
		}
		t.key = append(t.key, 0)
		t.appendKey(&cs[i].Resources)
		for _, p := range hostPorts(cs[i].Ports, hostNetwork) {
			t.appendKey(&p)
		}
		for _, e := range keptEnv(cs[i].Env) {
			t.key = append(append(t.key, e.Name...), 0)
		}
		t.key = append(t.key, 0)
	}
	return share(t, func() []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i := range cs {
			out[i] = corev1.Container{Name: intern(cs[i].Name), RestartPolicy: cs[i].RestartPolicy, Ports: hostPorts(cs[i].Ports, hostNetwork), Env: keptEnv(cs[i].Env)}
			cs[i].Resources.DeepCopyInto(&out[i].Resources)
		}
		return out
	})
}

// keptEnv returns, by name alone, the variables of env that tell a workload apart: REDIS_NODES,
// which Bitnami's redis-cluster chart gives its container (policies.BitnamiRedisCluster tells the
// chart under an alias by it); nil for none.
func keptEnv(env []corev1.EnvVar) []corev1.EnvVar {
	for _, e := range env {
		if e.Name == policies.BitnamiNodesEnv {
			return []corev1.EnvVar{{Name: policies.BitnamiNodesEnv}}
		}
	}
	return nil
}

// node returns the parts of n the model reads.
func (t *trimmer) node(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{ObjectMeta: t.meta(&n.ObjectMeta)}
	out.Name = intern(n.Name)
	out.Spec.Unschedulable = n.Spec.Unschedulable
	if len(n.Spec.Taints) > 0 {
		out.Spec.Taints = make([]corev1.Taint, len(n.Spec.Taints))
		for i, tn := range n.Spec.Taints {
			out.Spec.Taints[i] = corev1.Taint{Key: intern(tn.Key), Value: intern(tn.Value), Effect: tn.Effect}
		}
	}
	if len(n.Status.Allocatable) > 0 {
		out.Status.Allocatable = n.Status.Allocatable.DeepCopy()
	} else {
		out.Status.Capacity = n.Status.Capacity.DeepCopy()
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status, Reason: intern(c.Reason)}}
		}
	}
	return out
}

// statefulSet returns the parts of s the model and the linter read.
func (t *trimmer) statefulSet(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	out := &appsv1.StatefulSet{ObjectMeta: t.meta(&s.ObjectMeta)}
	out.Spec.Replicas = s.Spec.Replicas
	out.Spec.Selector = s.Spec.Selector.DeepCopy()
	out.Spec.Template.Labels = t.labels(s.Spec.Template.Labels)
	out.Spec.Template.Spec = t.podSpec(&s.Spec.Template.Spec)
	for _, c := range s.Spec.VolumeClaimTemplates {
		out.Spec.VolumeClaimTemplates = append(out.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: c.Name}})
	}
	out.Status.UpdateRevision = s.Status.UpdateRevision
	out.Status.CurrentRevision = s.Status.CurrentRevision
	return out
}

// podDisruptionBudget returns b without its managed fields, annotations, conditions and disrupted
// pods.
func (t *trimmer) podDisruptionBudget(b *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	out := &policyv1.PodDisruptionBudget{ObjectMeta: t.meta(&b.ObjectMeta)}
	b.Spec.DeepCopyInto(&out.Spec)
	out.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: b.Status.ObservedGeneration, DisruptionsAllowed: b.Status.DisruptionsAllowed,
		CurrentHealthy: b.Status.CurrentHealthy, DesiredHealthy: b.Status.DesiredHealthy, ExpectedPods: b.Status.ExpectedPods,
	}
	return out
}

// persistentVolumeClaim returns the claim's metadata, volume name, storage class and phase.
func (t *trimmer) persistentVolumeClaim(c *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	out := &corev1.PersistentVolumeClaim{ObjectMeta: t.meta(&c.ObjectMeta)}
	out.Spec.VolumeName = c.Spec.VolumeName
	out.Spec.StorageClassName = c.Spec.StorageClassName
	out.Spec.AccessModes = slices.Clone(c.Spec.AccessModes)
	out.Status.Phase = c.Status.Phase
	return out
}

// persistentVolume returns the volume's metadata, node affinity, storage class, claim and phase.
func (t *trimmer) persistentVolume(v *corev1.PersistentVolume) *corev1.PersistentVolume {
	out := &corev1.PersistentVolume{ObjectMeta: t.meta(&v.ObjectMeta)}
	out.Spec.NodeAffinity = v.Spec.NodeAffinity.DeepCopy()
	out.Spec.StorageClassName = v.Spec.StorageClassName
	out.Spec.ClaimRef = v.Spec.ClaimRef.DeepCopy()
	if src := v.Spec.CSI; src != nil {
		out.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: intern(src.Driver), VolumeHandle: src.VolumeHandle}
	}
	ps, in := &out.Spec.PersistentVolumeSource, &v.Spec.PersistentVolumeSource
	ps.GCEPersistentDisk = in.GCEPersistentDisk.DeepCopy()
	ps.AWSElasticBlockStore = in.AWSElasticBlockStore.DeepCopy()
	ps.AzureDisk = in.AzureDisk.DeepCopy()
	ps.Cinder = in.Cinder.DeepCopy()
	ps.PortworxVolume = in.PortworxVolume.DeepCopy()
	out.Status.Phase = v.Status.Phase
	return out
}

// csiNode returns the CSINode's metadata and its drivers' names and allocatable.
func (t *trimmer) csiNode(n *storagev1.CSINode) *storagev1.CSINode {
	out := &storagev1.CSINode{ObjectMeta: t.meta(&n.ObjectMeta)}
	out.Name = intern(n.Name)
	for _, d := range n.Spec.Drivers {
		out.Spec.Drivers = append(out.Spec.Drivers, storagev1.CSINodeDriver{Name: intern(d.Name), Allocatable: d.Allocatable.DeepCopy()})
	}
	return out
}

// namespace returns the namespace's metadata (its labels are what namespaceSelectors match).
func (t *trimmer) namespace(n *corev1.Namespace) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: t.meta(&n.ObjectMeta)}
}

// service returns what matches a Redis node announcing an external address to the one pod the
// Service selects: its type, selector and external addresses.
func (t *trimmer) service(s *corev1.Service) *corev1.Service {
	out := &corev1.Service{ObjectMeta: t.meta(&s.ObjectMeta)}
	out.Spec.Type = s.Spec.Type
	out.Spec.Selector = t.labels(s.Spec.Selector)
	out.Spec.LoadBalancerIP = intern(s.Spec.LoadBalancerIP)
	for _, ip := range s.Spec.ExternalIPs {
		out.Spec.ExternalIPs = append(out.Spec.ExternalIPs, intern(ip))
	}
	for _, in := range s.Status.LoadBalancer.Ingress {
		out.Status.LoadBalancer.Ingress = append(out.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: intern(in.IP), Hostname: intern(in.Hostname)})
	}
	return out
}
