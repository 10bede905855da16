package policies

import (
	"fmt"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// eagerTemplate is the re-creation template as Build built and kept it for every StatefulSet
// member before Member.Template became lazy: templatePod with labels of its own (templateLabels),
// its volumes merged as they were then, through a set of names. The reference the lazily built
// template must equal.
func eagerTemplate(p *corev1.Pod, sts *appsv1.StatefulSet) *corev1.Pod {
	t := new(corev1.Pod)
	templatePod(t, p, sts, nil)
	tmpl := &sts.Spec.Template
	t.Spec.Volumes = p.Spec.Volumes
	if len(tmpl.Spec.Volumes) > 0 {
		have := make(map[string]bool, len(p.Spec.Volumes))
		for _, v := range p.Spec.Volumes {
			have[v.Name] = true
		}
		var extra []corev1.Volume
		for _, v := range tmpl.Spec.Volumes {
			if !have[v.Name] {
				extra = append(extra, v)
			}
		}
		if len(extra) > 0 {
			t.Spec.Volumes = append(append([]corev1.Volume(nil), p.Spec.Volumes...), extra...)
		}
	}
	return t
}

// TemplatesBuilt counts the members whose Template has been built since Build (a member without
// StatefulSet has none to build).
func (c *Cluster) TemplatesBuilt() int {
	n := 0
	for _, mem := range c.Members {
		if mem.template.Load() != nil {
			n++
		}
	}
	return n
}

// TemplateMismatches builds every member's Template and reports how it, or the spec Build
// converted it into, differs from the template Build used to keep (eagerTemplate): the pods
// themselves (-want +got), a template's spec that still holds a pod (the scratch pod Build
// converted it in) or another member's, a spec whose pod is not Template's, labels that are not
// the very map the spec matches selectors with, or a member without StatefulSet whose template is
// not its pod.
func (c *Cluster) TemplateMismatches() []string {
	var bad []string
	for _, mem := range c.Members {
		got := mem.Template()
		if mem.sts == nil {
			if got != mem.Pod {
				bad = append(bad, mem.Key()+": no StatefulSet, and Template is not the pod")
			}
			continue
		}
		if diff := cmp.Diff(eagerTemplate(mem.Pod, mem.sts), got); diff != "" {
			bad = append(bad, fmt.Sprintf("%s: Template (-eager +lazy):\n%s", mem.Key(), diff))
		}
		s := mem.next
		if s.pod != nil || s.owner != mem {
			bad = append(bad, fmt.Sprintf("%s: template spec keeps pod %p and owner %p, want none and the member", mem.Key(), s.pod, s.owner))
		}
		if s.podOf() != got || mem.Template() != got {
			bad = append(bad, mem.Key()+": the template spec's pod, or a second Template call, is not the Template built first")
		}
		if !sameMap(s.labels, got.Labels) {
			bad = append(bad, mem.Key()+": Template's labels are not the map the template spec holds")
		}
	}
	return bad
}
