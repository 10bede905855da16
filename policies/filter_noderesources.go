package policies

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
)

// resources are the amounts NodeResourcesFit checks for every pod: CPU in millicores, memory and
// ephemeral storage in bytes, and the pod count. The scalar resources (extended resources,
// hugepages, kubernetes.io-prefixed resources) a pod requests are listed apart (scalarRequest):
// few pods request any, so the common amounts stay four numbers that add and compare fast.
type resources struct{ cpu, mem, eph, pods int64 }

func (r resources) add(o resources) resources {
	return resources{r.cpu + o.cpu, r.mem + o.mem, r.eph + o.eph, r.pods + o.pods}
}

func (r resources) sub(o resources) resources {
	return resources{r.cpu - o.cpu, r.mem - o.mem, r.eph - o.eph, r.pods - o.pods}
}

// scalarRequest is one scalar resource a pod requests: kube-scheduler's Resource.ScalarResources
// entry, the quantity's Value (bytes for hugepages, a count for extended resources).
type scalarRequest struct {
	name corev1.ResourceName
	qty  int64
}

// podRequests are a pod's effective requests as NodeResourcesFit computes them: the basic
// amounts and the scalar resources with a quantity above zero, sorted by name (nil when none).
type podRequests struct {
	resources
	scalars []scalarRequest
}

// requestsOf returns a pod's effective requests (init containers, sidecars, overhead and
// pod-level resources included, by k8s.io/component-helpers/resource.PodRequests, as
// NodeResourcesFit's computePodResourceRequest and NodeInfo's pod accounting do) and one pod
// slot. Pods whose containers request only CPU, memory and ephemeral storage, without init
// containers, overhead or pod-level resources, take a fast path that sums their requests
// directly (same result).
func requestsOf(p *corev1.Pod) podRequests {
	s := &p.Spec
	if len(s.InitContainers) == 0 && s.Overhead == nil && (s.Resources == nil || len(s.Resources.Requests) == 0) {
		r := resources{pods: 1}
		simple := true
		for k := range s.Containers {
			for name, q := range s.Containers[k].Resources.Requests {
				switch name {
				case corev1.ResourceCPU:
					r.cpu += q.MilliValue()
				case corev1.ResourceMemory:
					r.mem += q.Value()
				case corev1.ResourceEphemeralStorage:
					r.eph += q.Value()
				default:
					simple = false
				}
			}
		}
		if simple {
			return podRequests{resources: r}
		}
	}
	l := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	out := podRequests{resources: resources{cpu: l.Cpu().MilliValue(), mem: l.Memory().Value(), eph: l.StorageEphemeral().Value(), pods: 1}}
	for name, q := range l {
		if v := q.Value(); v != 0 && isScalarResourceName(name) {
			out.scalars = append(out.scalars, scalarRequest{name, v})
		}
	}
	slices.SortFunc(out.scalars, func(a, b scalarRequest) int { return strings.Compare(string(a.name), string(b.name)) })
	return out
}

// isScalarResourceName is kube-scheduler's util.IsScalarResourceName: an extended resource, a
// hugepages size, a kubernetes.io-prefixed native resource or an attachable-volumes count
// (k8s.io/kubernetes/pkg/apis/core/v1/helper's predicates, restated: that package is not a
// library).
func isScalarResourceName(name corev1.ResourceName) bool {
	s := string(name)
	return isExtendedResourceName(name) || strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) ||
		strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.ResourceAttachableVolumesPrefix)
}

// isExtendedResourceName is helper.IsExtendedResourceName: a name outside the kubernetes.io/
// namespace (so with a "/"), not starting with "requests.", that is a qualified name once
// prefixed with "requests." (what a ResourceQuota would call it).
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// allocatableList returns the resource list a node offers: status.allocatable (status.capacity
// when allocatable is not reported).
func allocatableList(n *corev1.Node) corev1.ResourceList {
	if l := n.Status.Allocatable; len(l) > 0 {
		return l
	}
	return n.Status.Capacity
}

// allocatableOf returns a node's allocatable CPU, memory, ephemeral storage and pods
// (allocatableList).
func allocatableOf(n *corev1.Node) resources {
	l := allocatableList(n)
	return resources{cpu: l.Cpu().MilliValue(), mem: l.Memory().Value(), eph: l.StorageEphemeral().Value(), pods: l.Pods().Value()}
}

// Reasons NodeResourcesFit gives, in its order (fitsRequest): the pod count, then CPU, memory,
// ephemeral storage, then "Insufficient <name>" for each scalar resource.
const (
	reasonTooManyPods  = "Too many pods"
	reasonInsufficient = "Insufficient "
)

// fits reports whether the basic amounts req fit beside used on a node offering alloc. Like
// NodeResourcesFit, CPU, memory and ephemeral storage are only checked when the pod requests
// them. check calls it for every node; it is kept small enough to be inlined there.
func fits(alloc, used, req resources) bool {
	return used.pods+req.pods <= alloc.pods &&
		(req.cpu == 0 || used.cpu+req.cpu <= alloc.cpu) &&
		(req.mem == 0 || used.mem+req.mem <= alloc.mem) &&
		(req.eph == 0 || used.eph+req.eph <= alloc.eph)
}

// insufficient appends to dst NodeResourcesFit's reasons for the basic amounts, in its order.
func insufficient(dst []string, alloc, used, req resources) []string {
	if used.pods+req.pods > alloc.pods {
		dst = append(dst, reasonTooManyPods)
	}
	if req.cpu > 0 && used.cpu+req.cpu > alloc.cpu {
		dst = append(dst, reasonInsufficient+string(corev1.ResourceCPU))
	}
	if req.mem > 0 && used.mem+req.mem > alloc.mem {
		dst = append(dst, reasonInsufficient+string(corev1.ResourceMemory))
	}
	if req.eph > 0 && used.eph+req.eph > alloc.eph {
		dst = append(dst, reasonInsufficient+string(corev1.ResourceEphemeralStorage))
	}
	return dst
}

// used returns the basic amounts on node n that NodeResourcesFit's Filter adds the incoming pod's
// to: the node's pods without the members as the snapshot has them, plus the other members as
// placed. check calls it for every node; it is kept small enough to be inlined there.
func (f *fitter) used(n int) resources {
	c := f.c
	return c.model.usedByAll[n].sub(c.memberUse[n]).add(f.use[n])
}

// scalarIndex is what NodeResourcesFit needs of the scalar resources the members request, built
// once per cluster on first use: the names (a slot each), and per slot and node what is left
// beside the pods that are not members (allocatable minus their requests).
type scalarIndex struct {
	names []corev1.ResourceName
	free  [][]int64 // slot → node → amount
}

// slot returns the slot of a scalar resource, -1 when no member requests it.
func (x *scalarIndex) slot(name corev1.ResourceName) int {
	for k, n := range x.names {
		if n == name {
			return k
		}
	}
	return -1
}

// buildScalarIndex builds c.scalars from the members' specs, the nodes' allocatable and the
// scalar requests of every scheduled pod (Model.usedScalar).
func (c *Cluster) buildScalarIndex() {
	m := c.model
	x := &scalarIndex{}
	for _, mem := range c.Members {
		for _, s := range [2]*podSpec{mem.cur, mem.next} {
			for _, r := range s.scalars {
				if x.slot(r.name) < 0 {
					x.names = append(x.names, r.name)
				}
			}
		}
	}
	x.free = make([][]int64, len(x.names))
	for k, name := range x.names {
		free := make([]int64, len(m.Nodes))
		for n, node := range m.Nodes {
			q := allocatableList(node.Obj)[name]
			free[n] = q.Value()
			if m.usedScalar != nil {
				free[n] -= m.usedScalar[n][name]
			}
		}
		// The members' own requests, where the snapshot has them, are not the non-members'.
		for _, mem := range c.Members {
			if mem.Node >= 0 && !mem.Terminating {
				for _, r := range m.podScalars[mem.Pod] {
					if r.name == name {
						free[mem.Node] += r.qty
					}
				}
			}
		}
		x.free[k] = free
	}
	c.scalars = x
}

// scalarFits is NodeResourcesFit's check of the incoming pod's scalar resources on node n: each
// fits in what the non-members leave minus what the other members placed there request.
func (f *fitter) scalarFits(n int) bool {
	for _, r := range f.spec.scalars {
		if f.scalarShort(n, r) {
			return false
		}
	}
	return true
}

// insufficientScalars appends "Insufficient <name>" for each scalar resource of the incoming pod
// that does not fit on node n, by name.
func (f *fitter) insufficientScalars(dst []string, n int) []string {
	for _, r := range f.spec.scalars {
		if f.scalarShort(n, r) {
			dst = append(dst, reasonInsufficient+string(r.name))
		}
	}
	return dst
}

// scalarShort reports whether the incoming pod's request r exceeds what node n has free of its
// resource: what the non-members leave, minus what the other members placed there request.
func (f *fitter) scalarShort(n int, r scalarRequest) bool {
	x := f.c.scalars
	k := x.slot(r.name)
	free := x.free[k][n]
	if use := f.scalarUse[n]; use != nil {
		free -= use[k]
	}
	return r.qty > free
}

// addScalars counts the scalar requests of another member, placed on node nj with spec sj, in
// f.scalarUse (only those the incoming pod requests).
func (f *fitter) addScalars(nj int, sj *podSpec) {
	x := f.c.scalars
	for _, r := range sj.scalars {
		k := x.slot(r.name)
		if k < 0 || !f.spec.requestsScalar(r.name) {
			continue
		}
		if f.scalarUse == nil {
			f.scalarUse = map[int][]int64{}
		}
		use := f.scalarUse[nj]
		if use == nil {
			use = make([]int64, len(x.names))
			f.scalarUse[nj] = use
		}
		use[k] += r.qty
	}
}

// requestsScalar reports whether the spec requests scalar resource name.
func (s *podSpec) requestsScalar(name corev1.ResourceName) bool {
	for _, r := range s.scalars {
		if r.name == name {
			return true
		}
	}
	return false
}

// nodeResourcesFit is NodeResourcesFit's Filter on node n: the basic amounts, then the scalar
// resources.
func (f *fitter) nodeResourcesFit(n int) bool {
	if !fits(f.c.model.allocatable[n], f.used(n), f.spec.requests) {
		return false
	}
	return f.spec.scalars == nil || f.scalarFits(n)
}

// insufficientResources returns every reason NodeResourcesFit gives for node n, in its order.
func (f *fitter) insufficientResources(n int) []string {
	why := insufficient(nil, f.c.model.allocatable[n], f.used(n), f.spec.requests)
	if f.spec.scalars != nil {
		why = f.insufficientScalars(why, n)
	}
	return why
}
