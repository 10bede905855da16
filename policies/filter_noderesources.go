package policies

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// resources are the amounts the filter checks, as kube-scheduler's NodeResourcesFit does for the
// basic resources: CPU in millicores, memory in bytes, and the pod count.
type resources struct{ cpu, mem, pods int64 }

func (r resources) add(o resources) resources {
	return resources{r.cpu + o.cpu, r.mem + o.mem, r.pods + o.pods}
}

func (r resources) sub(o resources) resources {
	return resources{r.cpu - o.cpu, r.mem - o.mem, r.pods - o.pods}
}

// requestsOf returns a pod's effective requests (init containers, overhead and pod-level resources
// included, by k8s.io/component-helpers/resource.PodRequests) and one pod slot. Pods with only
// regular containers take a fast path that sums their requests directly (same result).
func requestsOf(p *corev1.Pod) resources {
	s := &p.Spec
	if len(s.InitContainers) == 0 && s.Overhead == nil && (s.Resources == nil || len(s.Resources.Requests) == 0) {
		r := resources{pods: 1}
		for k := range s.Containers {
			req := s.Containers[k].Resources.Requests
			if q, ok := req[corev1.ResourceCPU]; ok {
				r.cpu += q.MilliValue()
			}
			if q, ok := req[corev1.ResourceMemory]; ok {
				r.mem += q.Value()
			}
		}
		return r
	}
	r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return resources{cpu: r.Cpu().MilliValue(), mem: r.Memory().Value(), pods: 1}
}

// allocatableOf returns a node's allocatable CPU, memory and pods (capacity when allocatable is
// not reported).
func allocatableOf(n *corev1.Node) resources {
	l := n.Status.Allocatable
	if len(l) == 0 {
		l = n.Status.Capacity
	}
	return resources{cpu: l.Cpu().MilliValue(), mem: l.Memory().Value(), pods: l.Pods().Value()}
}

// fits reports which basic resource, if any, does not fit: "" when used+req ≤ alloc for all.
// Like NodeResourcesFit, CPU and memory are only checked when the pod requests them.
func fits(alloc, used, req resources) string {
	switch {
	case used.pods+req.pods > alloc.pods:
		return "Too many pods"
	case req.cpu > 0 && used.cpu+req.cpu > alloc.cpu:
		return "Insufficient cpu"
	case req.mem > 0 && used.mem+req.mem > alloc.mem:
		return "Insufficient memory"
	}
	return ""
}

// used returns the requests on node n that NodeResourcesFit's Filter adds the incoming pod's to:
// the node's pods without the members as the snapshot has them, plus the other members as
// placed. check calls it for every node; it is kept small enough to be inlined there.
func (f *fitter) used(n int) resources {
	c := f.c
	return c.model.usedByAll[n].sub(c.memberUse[n]).add(f.use[n])
}
