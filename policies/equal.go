package policies

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The equality helpers below compare the parts of a running pod's spec with its template's, so
// that a pod created from the current template reuses the template's ids without building
// signatures. They compare what the signatures encode.

func equalStringMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func equalLabelSelectors(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a == b {
		return true
	}
	return equalStringMaps(a.MatchLabels, b.MatchLabels) &&
		slices.EqualFunc(a.MatchExpressions, b.MatchExpressions, func(x, y metav1.LabelSelectorRequirement) bool {
			return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
		})
}

func equalPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalConstraints(a, b *corev1.TopologySpreadConstraint) bool {
	return a.MaxSkew == b.MaxSkew && a.TopologyKey == b.TopologyKey && a.WhenUnsatisfiable == b.WhenUnsatisfiable &&
		equalPtr(a.MinDomains, b.MinDomains) && equalPtr(a.NodeAffinityPolicy, b.NodeAffinityPolicy) &&
		equalPtr(a.NodeTaintsPolicy, b.NodeTaintsPolicy) && slices.Equal(a.MatchLabelKeys, b.MatchLabelKeys) &&
		equalLabelSelectors(a.LabelSelector, b.LabelSelector)
}

func equalTerms(a, b *corev1.PodAffinityTerm) bool {
	return a.TopologyKey == b.TopologyKey && slices.Equal(a.Namespaces, b.Namespaces) &&
		slices.Equal(a.MatchLabelKeys, b.MatchLabelKeys) && slices.Equal(a.MismatchLabelKeys, b.MismatchLabelKeys) &&
		equalLabelSelectors(a.LabelSelector, b.LabelSelector) && equalLabelSelectors(a.NamespaceSelector, b.NamespaceSelector)
}

func equalNodeSelectorRequirements(a, b []corev1.NodeSelectorRequirement) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.NodeSelectorRequirement) bool {
		return x.Key == y.Key && x.Operator == y.Operator && slices.Equal(x.Values, y.Values)
	})
}

// equalNodeAffinity compares what nodeaffinity.GetRequiredNodeAffinity reads.
func equalNodeAffinity(a, b *corev1.Pod) bool {
	if !equalStringMaps(a.Spec.NodeSelector, b.Spec.NodeSelector) {
		return false
	}
	x, y := requiredNodeAffinity(a), requiredNodeAffinity(b)
	if x == nil || y == nil {
		return x == y
	}
	return slices.EqualFunc(x.NodeSelectorTerms, y.NodeSelectorTerms, func(s, t corev1.NodeSelectorTerm) bool {
		return equalNodeSelectorRequirements(s.MatchExpressions, t.MatchExpressions) &&
			equalNodeSelectorRequirements(s.MatchFields, t.MatchFields)
	})
}

func equalTolerations(a, b []corev1.Toleration) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Toleration) bool {
		return x.Key == y.Key && x.Operator == y.Operator && x.Value == y.Value && x.Effect == y.Effect
	})
}
