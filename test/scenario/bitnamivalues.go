package scenario

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// bitnamiValues are the values of Bitnami's redis-cluster chart (13.0.5, values.yaml) that
// Scenario.BitnamiValues may set: what the StatefulSet's scheduling and the release's
// PodDisruptionBudget are rendered from.
type bitnamiValues struct {
	Redis struct {
		TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints"`
		NodeAffinityPreset        struct {
			Type   string   `json:"type"`
			Key    string   `json:"key"`
			Values []string `json:"values"`
		} `json:"nodeAffinityPreset"`
		// PodAntiAffinityPreset is soft (the chart's default), hard or "".
		PodAntiAffinityPreset *string          `json:"podAntiAffinityPreset"`
		Affinity              *corev1.Affinity `json:"affinity"`
	} `json:"redis"`
	PDB struct {
		Create         *bool               `json:"create"`
		MinAvailable   *intstr.IntOrString `json:"minAvailable"`
		MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
	} `json:"pdb"`
}

// parseBitnamiValues reads Scenario.BitnamiValues; a value it does not render is an error (the
// test would otherwise believe it applied).
func parseBitnamiValues(text string) (bitnamiValues, error) {
	var v bitnamiValues
	if err := yaml.UnmarshalStrict([]byte(text), &v); err != nil {
		return v, fmt.Errorf("scenario: Bitnami values: %w", err)
	}
	return v, nil
}

// renderPodSpec sets spec's scheduling as templates/redis-statefulset.yaml renders it from v:
// redis.topologySpreadConstraints as they are; redis.affinity as it is, else the presets through
// bitnami/common's common.affinities.pods (soft: a preferred term of weight 1, hard: a required
// term, both on kubernetes.io/hostname over the release's matchLabels) and
// common.affinities.nodes (soft: preferred, hard: required, key In values).
func (v bitnamiValues) renderPodSpec(spec *corev1.PodSpec, matchLabels map[string]string) error {
	r := v.Redis
	spec.TopologySpreadConstraints = r.TopologySpreadConstraints
	if r.Affinity != nil {
		spec.Affinity = r.Affinity
		return nil
	}
	aff := &corev1.Affinity{}
	preset := "soft"
	if r.PodAntiAffinityPreset != nil {
		preset = *r.PodAntiAffinityPreset
	}
	term := fixture.Term(policies.LabelHostname, matchLabels)
	switch preset {
	case "soft":
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1, PodAffinityTerm: term}}}
	case "hard":
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
	case "":
	default:
		return fmt.Errorf("scenario: Bitnami values: redis.podAntiAffinityPreset %q: soft, hard or \"\"", preset)
	}
	n := r.NodeAffinityPreset
	req := corev1.NodeSelectorRequirement{Key: n.Key, Operator: corev1.NodeSelectorOpIn, Values: n.Values}
	switch n.Type {
	case "soft":
		aff.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
			{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}}},
		}}
	case "hard":
		aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{req}}},
		}}
	case "":
	default:
		return fmt.Errorf("scenario: Bitnami values: redis.nodeAffinityPreset.type %q: soft, hard or \"\"", n.Type)
	}
	spec.Affinity = aff
	return nil
}

// renderBudget sets the release's PodDisruptionBudget as templates/poddisruptionbudget.yaml
// renders it from pdb.minAvailable and pdb.maxUnavailable (maxUnavailable 1 unless minAvailable
// alone is set); false when pdb.create is false (no budget).
func (v bitnamiValues) renderBudget(b *policyv1.PodDisruptionBudget) bool {
	p := v.PDB
	if p.Create != nil && !*p.Create {
		return false
	}
	b.Spec.MinAvailable, b.Spec.MaxUnavailable = p.MinAvailable, nil
	if p.MaxUnavailable != nil || p.MinAvailable == nil {
		one := intstr.FromInt32(1)
		b.Spec.MaxUnavailable = &one
		if p.MaxUnavailable != nil {
			b.Spec.MaxUnavailable = p.MaxUnavailable
		}
	}
	return true
}
