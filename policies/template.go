package policies

import (
	"iter"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// templatePod fills t with the pod sts would create in place of p (as the StatefulSet
// controller's newVersionedStatefulSetPod does, and the API server then admits it): the
// template's labels, annotations and spec (spec.nodeName included: a template may name a node);
// the controller's pod-name and pod-index labels and the update revision as
// controller-revision-hash; p's identity. Volumes are p's (its claims from volumeClaimTemplates
// keep their names) plus template volumes p lacks. What the pod's resources and host ports will
// be: when p is of the update revision, p's own containers, overhead and pod-level resources
// (the re-created pod is admitted as p was: LimitRange defaults, injected sidecars and
// RuntimeClass overhead included); otherwise the template's with the API server's pod defaults
// (podDefaults). The template's spec is shared, not copied: a Template is read, never modified.
// lbl, when not nil, are the template's labels as templateLabels returned them before (the map a
// spec of the template holds): they are taken instead of being built again.
func templatePod(t, p *corev1.Pod, sts *appsv1.StatefulSet, lbl map[string]string) {
	tmpl := &sts.Spec.Template
	t.TypeMeta = p.TypeMeta
	t.ObjectMeta = metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID,
		Annotations:     tmpl.Annotations,
		OwnerReferences: p.OwnerReferences,
	}
	t.Spec = tmpl.Spec
	t.Labels = lbl
	if lbl == nil {
		t.Labels = templateLabels(p, sts)
	}
	if rev := sts.Status.UpdateRevision; rev != "" && p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev {
		t.Spec.Containers, t.Spec.InitContainers = p.Spec.Containers, p.Spec.InitContainers
		t.Spec.Overhead, t.Spec.Resources = p.Spec.Overhead, p.Spec.Resources
	} else {
		podDefaults(&t.Spec)
	}
	t.Spec.Volumes = p.Spec.Volumes
	var extra []corev1.Volume
	for v := range extraVolumes(p, sts) {
		extra = append(extra, *v)
	}
	if len(extra) > 0 {
		t.Spec.Volumes = append(append([]corev1.Volume(nil), p.Spec.Volumes...), extra...)
	}
}

// extraVolumes yields the volumes of sts's template that pod p lacks (by name), in the template's
// order: the template pod's volumes are p's, then these (templatePod).
func extraVolumes(p *corev1.Pod, sts *appsv1.StatefulSet) iter.Seq[*corev1.Volume] {
	return func(yield func(*corev1.Volume) bool) {
		tv := sts.Spec.Template.Spec.Volumes
		for k := range tv {
			if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == tv[k].Name }) && !yield(&tv[k]) {
				return
			}
		}
	}
}

// templateVolumes yields the volumes of member mem's Template without building it: its pod's,
// then (with a StatefulSet) the template's the pod lacks.
func templateVolumes(mem *Member) iter.Seq[*corev1.Volume] {
	return func(yield func(*corev1.Volume) bool) {
		pv := mem.Pod.Spec.Volumes
		for k := range pv {
			if !yield(&pv[k]) {
				return
			}
		}
		if mem.sts != nil {
			for v := range extraVolumes(mem.Pod, mem.sts) {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// podDefaults applies to a template's spec the defaults the API server gives a pod and not a
// pod template (k8s.io/kubernetes/pkg/apis/core/v1's SetDefaults_Pod) that the filter reads:
// container requests default to their limits, and with hostNetwork every container port is also
// a host port. Containers are copied before they are changed (the template's are shared).
func podDefaults(s *corev1.PodSpec) {
	needs := func(cs []corev1.Container) bool {
		for k := range cs {
			for name := range cs[k].Resources.Limits {
				if _, ok := cs[k].Resources.Requests[name]; !ok {
					return true
				}
			}
			for _, cp := range cs[k].Ports {
				if s.HostNetwork && cp.HostPort == 0 {
					return true
				}
			}
		}
		return false
	}
	apply := func(cs []corev1.Container) []corev1.Container {
		if !needs(cs) {
			return cs
		}
		out := make([]corev1.Container, len(cs))
		for k := range cs {
			c := cs[k]
			if len(c.Resources.Limits) > 0 {
				req := make(corev1.ResourceList, len(c.Resources.Limits))
				for name, q := range c.Resources.Requests {
					req[name] = q
				}
				for name, q := range c.Resources.Limits {
					if _, ok := req[name]; !ok {
						req[name] = q.DeepCopy()
					}
				}
				c.Resources.Requests = req
			}
			if s.HostNetwork && len(c.Ports) > 0 {
				c.Ports = append([]corev1.ContainerPort(nil), c.Ports...)
				for j := range c.Ports {
					if c.Ports[j].HostPort == 0 {
						c.Ports[j].HostPort = c.Ports[j].ContainerPort
					}
				}
			}
			out[k] = c
		}
		return out
	}
	s.Containers, s.InitContainers = apply(s.Containers), apply(s.InitContainers)
}

// controllerLabels are the labels the StatefulSet controller sets on a pod besides the
// template's.
var controllerLabels = [...]string{StatefulSetPodNameLabel, appsv1.PodIndexLabel, appsv1.ControllerRevisionHashLabelKey}

// templateLabels returns the labels of the pod sts would create in place of p: the template's,
// the pod's pod-name and pod-index, and the update revision (else the pod's revision). When they
// equal p's labels, p's map is returned (read-only, shared).
func templateLabels(p *corev1.Pod, sts *appsv1.StatefulSet) map[string]string {
	tmpl := sts.Spec.Template.Labels
	rev, hasRev := sts.Status.UpdateRevision, sts.Status.UpdateRevision != ""
	same := true
	extra := 0
	for _, k := range controllerLabels {
		v, ok := p.Labels[k]
		if k == appsv1.ControllerRevisionHashLabelKey && hasRev {
			if !ok || v != rev {
				same = false
			}
			ok = true
		}
		if _, inTmpl := tmpl[k]; ok && !inTmpl {
			extra++
		}
	}
	if same && len(p.Labels) == len(tmpl)+extra {
		for k, v := range tmpl {
			if isControllerLabel(k) {
				continue
			}
			if w, ok := p.Labels[k]; !ok || w != v {
				same = false
				break
			}
		}
		if same {
			return p.Labels
		}
	}
	out := make(map[string]string, len(tmpl)+len(controllerLabels))
	for k, v := range tmpl {
		out[k] = v
	}
	for _, k := range controllerLabels {
		if v, ok := p.Labels[k]; ok {
			out[k] = v
		}
	}
	if hasRev {
		out[appsv1.ControllerRevisionHashLabelKey] = rev
	}
	return out
}

func isControllerLabel(k string) bool {
	for _, c := range controllerLabels {
		if k == c {
			return true
		}
	}
	return false
}

// templateRequests returns requestsOf(p) for a template, memoized by container slice (the
// templates of one StatefulSet share it).
func (b *builder) templateRequests(p *corev1.Pod) podRequests {
	if len(p.Spec.Containers) == 0 {
		return requestsOf(p)
	}
	k := &p.Spec.Containers[0]
	if r, ok := b.reqByContainers[k]; ok && len(p.Spec.InitContainers) == 0 && p.Spec.Overhead == nil && p.Spec.Resources == nil {
		return r
	}
	r := requestsOf(p)
	if len(p.Spec.InitContainers) == 0 && p.Spec.Overhead == nil && p.Spec.Resources == nil {
		b.reqByContainers[k] = r
	}
	return r
}
