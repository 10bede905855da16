package policies

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// sigBuf builds the cache keys that deduplicate the scheduling-relevant parts of pod specs: a
// canonical byte encoding (maps sorted by key, fields separated by NUL) written into a reused
// buffer, so that a lookup allocates nothing (m[string(b)] does not copy) and only a miss stores a
// string. Each of Build's workers has its own builder, and each builder its own sigBufs.
type sigBuf struct{ b []byte }

func (s *sigBuf) reset() { s.b = s.b[:0] }

func (s *sigBuf) str(v string) {
	s.b = append(s.b, v...)
	s.b = append(s.b, 0)
}

func (s *sigBuf) num(v int64) {
	s.b = strconv.AppendInt(s.b, v, 10)
	s.b = append(s.b, 0)
}

// tag writes a one-byte marker (a field name, or nil/non-nil).
func (s *sigBuf) tag(c byte) { s.b = append(s.b, c) }

func (s *sigBuf) strs(vs []string) {
	s.num(int64(len(vs)))
	for _, v := range vs {
		s.str(v)
	}
}

// strMap writes a map sorted by key.
func (s *sigBuf) strMap(m map[string]string) {
	s.num(int64(len(m)))
	if len(m) == 0 {
		return
	}
	var arr [16]string
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s.str(k)
		s.str(m[k])
	}
}

func (s *sigBuf) labelSelector(ls *metav1.LabelSelector) {
	if ls == nil {
		s.tag('-')
		return
	}
	s.tag('+')
	s.strMap(ls.MatchLabels)
	s.num(int64(len(ls.MatchExpressions)))
	for _, r := range ls.MatchExpressions {
		s.str(r.Key)
		s.str(string(r.Operator))
		s.strs(r.Values)
	}
}

func (s *sigBuf) nodeSelectorRequirements(rs []corev1.NodeSelectorRequirement) {
	s.num(int64(len(rs)))
	for _, r := range rs {
		s.str(r.Key)
		s.str(string(r.Operator))
		s.strs(r.Values)
	}
}

func (s *sigBuf) nodeSelector(ns *corev1.NodeSelector) {
	if ns == nil {
		s.tag('-')
		return
	}
	s.tag('+')
	s.num(int64(len(ns.NodeSelectorTerms)))
	for _, t := range ns.NodeSelectorTerms {
		s.nodeSelectorRequirements(t.MatchExpressions)
		s.nodeSelectorRequirements(t.MatchFields)
	}
}

// nodeAffinity writes what nodeaffinity.GetRequiredNodeAffinity reads: the nodeSelector and the
// required node affinity.
func (s *sigBuf) nodeAffinity(p *corev1.Pod) {
	s.tag('A')
	s.strMap(p.Spec.NodeSelector)
	s.nodeSelector(requiredNodeAffinity(p))
}

func (s *sigBuf) tolerations(ts []corev1.Toleration) {
	s.tag('T')
	s.num(int64(len(ts)))
	for _, t := range ts {
		s.str(t.Key)
		s.str(string(t.Operator))
		s.str(t.Value)
		s.str(string(t.Effect))
	}
}

func (s *sigBuf) optInt32(v *int32) {
	if v == nil {
		s.tag('-')
		return
	}
	s.num(int64(*v))
}

func (s *sigBuf) optPolicy(v *corev1.NodeInclusionPolicy) {
	if v == nil {
		s.tag('-')
		return
	}
	s.str(string(*v))
}

// affinityTerm writes a pod (anti-)affinity term as kube-scheduler parses it.
func (s *sigBuf) affinityTerm(t *corev1.PodAffinityTerm) {
	s.labelSelector(t.LabelSelector)
	s.strs(t.Namespaces)
	s.labelSelector(t.NamespaceSelector)
	s.str(t.TopologyKey)
	s.strs(t.MatchLabelKeys)
	s.strs(t.MismatchLabelKeys)
}

// labelValues writes, for each key, whether the labels have it and its value.
func (s *sigBuf) labelValues(keys []string, lbl map[string]string) {
	for _, k := range keys {
		if v, ok := lbl[k]; ok {
			s.tag('+')
			s.str(v)
		} else {
			s.tag('-')
		}
	}
}
