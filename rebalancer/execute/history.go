package execute

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The step history: the durations a run measured, kept between runs in a ConfigMap the
// rebalancer owns (Config.History), one data key per Redis cluster, so that the p95 step
// estimate of a later run judges a maintenance window with what moves really took instead of
// their bounds (estimates.go).

// MaxHistorySamples is how many durations the history keeps per step and Redis cluster (the
// newest), and how many rejoins.
const MaxHistorySamples = 20

// MaxHistoryBytes bounds the history ConfigMap's data (a ConfigMap holds at most 1 MiB): when a
// save would exceed it, the Redis clusters updated longest ago are dropped first.
const MaxHistoryBytes = 512 << 10

// HistoryLabels are the labels of the history ConfigMap the executor creates.
var HistoryLabels = map[string]string{
	"app.kubernetes.io/name":      "redis-rebalancer",
	"app.kubernetes.io/component": "step-history",
}

// StepHistory is what the history keeps of one Redis cluster: the JSON of its data key
// ("<namespace>.<name>") in the history ConfigMap.
type StepHistory struct {
	// Updated is when a run last saved it.
	Updated metav1.Time `json:"updated"`
	// Steps are, per step name (report.Step…, the rejoin aside), the durations measured, in
	// seconds, oldest first (at most MaxHistorySamples).
	Steps map[string][]float64 `json:"steps,omitempty"`
	// Resyncs are the rejoins measured, oldest first (at most MaxHistorySamples).
	Resyncs []Resync `json:"resyncs,omitempty"`
}

// Resync is one rejoin measured: how long the re-created replica took to be in sync again, and
// the dataset it synced (its used_memory from INFO memory once back, in bytes; 0 when it could not
// be read). Bytes / Seconds is a lower bound of the sync rate (the rejoin includes the
// replication handshake and the master's fork, or repl-diskless-sync-delay).
type Resync struct {
	Seconds float64 `json:"seconds"`
	Bytes   int64   `json:"bytes,omitempty"`
}

// add appends one measure (a rejoin's with its bytes), keeping the newest MaxHistorySamples.
func (h *StepHistory) add(name string, d time.Duration, bytes int64) {
	s := math.Round(d.Seconds()*1000) / 1000
	if name == report.StepRejoin {
		h.Resyncs = append(h.Resyncs, Resync{Seconds: s, Bytes: bytes})
		if n := len(h.Resyncs); n > MaxHistorySamples {
			h.Resyncs = append([]Resync(nil), h.Resyncs[n-MaxHistorySamples:]...)
		}
		return
	}
	if h.Steps == nil {
		h.Steps = map[string][]float64{}
	}
	ds := append(h.Steps[name], s)
	if n := len(ds); n > MaxHistorySamples {
		ds = append([]float64(nil), ds[n-MaxHistorySamples:]...)
	}
	h.Steps[name] = ds
}

// merge adds o's measures after h's (o measured later), keeping the newest of each.
func (h *StepHistory) merge(o *StepHistory) {
	names := make([]string, 0, len(o.Steps))
	for name := range o.Steps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, s := range o.Steps[name] {
			h.add(name, time.Duration(s*float64(time.Second)), 0)
		}
	}
	for _, r := range o.Resyncs {
		h.add(report.StepRejoin, time.Duration(r.Seconds*float64(time.Second)), r.Bytes)
	}
}

func (h *StepHistory) clone() *StepHistory {
	c := &StepHistory{Updated: h.Updated, Resyncs: append([]Resync(nil), h.Resyncs...)}
	if h.Steps != nil {
		c.Steps = map[string][]float64{}
		for k, v := range h.Steps {
			c.Steps[k] = append([]float64(nil), v...)
		}
	}
	return c
}

// HistoryKey is the history ConfigMap's data key of the Redis cluster "namespace/name":
// "namespace.name" (both are DNS names, so the key is a valid ConfigMap key and unambiguous).
func HistoryKey(cluster string) string { return strings.Replace(cluster, "/", ".", 1) }

// historyStore reads and writes the history ConfigMap ref through client.
type historyStore struct {
	client kubernetes.Interface
	ref    types.NamespacedName
}

// load returns every Redis cluster's history, by "namespace/name"; none when the ConfigMap does
// not exist yet. A key that does not decode is skipped (logged).
func (s *historyStore) load(ctx context.Context) (map[string]*StepHistory, error) {
	cm, err := s.client.CoreV1().ConfigMaps(s.ref.Namespace).Get(ctx, s.ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return map[string]*StepHistory{}, nil
	case err != nil:
		return nil, fmt.Errorf("step history: configmap %s: %w", s.ref, err)
	}
	out := map[string]*StepHistory{}
	for k, v := range cm.Data {
		var h StepHistory
		if err := json.Unmarshal([]byte(v), &h); err != nil {
			klog.InfoS("Step history: a key does not decode; it is ignored and replaced by the next save", "configMap", klog.KRef(s.ref.Namespace, s.ref.Name), "key", k, "err", err)
			continue
		}
		ns, name, _ := strings.Cut(k, ".")
		out[ns+"/"+name] = &h
	}
	return out, nil
}

// save adds measured (what a run measured in cluster, "namespace/name") to the cluster's key in
// the ConfigMap, creating it when it does not exist, and retries on a conflict (runs of other
// clusters save beside it). When the data would exceed MaxHistoryBytes, the keys updated longest
// ago are dropped.
func (s *historyStore) save(ctx context.Context, cluster string, measured *StepHistory, now time.Time) error {
	key := HistoryKey(cluster)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cms := s.client.CoreV1().ConfigMaps(s.ref.Namespace)
		cm, err := cms.Get(ctx, s.ref.Name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.ref.Name, Namespace: s.ref.Namespace, Labels: HistoryLabels}}
		case err != nil:
			return err
		}
		h := &StepHistory{}
		if v, ok := cm.Data[key]; ok {
			_ = json.Unmarshal([]byte(v), h) // a key that does not decode is replaced
		}
		h.merge(measured)
		h.Updated = metav1.NewTime(now.UTC().Truncate(time.Second))
		b, err := json.Marshal(h)
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = string(b)
		trimHistory(cm.Data, key)
		if create {
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				// Another run created it meanwhile: read it again.
				return apierrors.NewConflict(corev1.Resource("configmaps"), s.ref.Name, err)
			}
			return err
		}
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("step history: save %s in configmap %s: %w", cluster, s.ref, err)
	}
	return nil
}

// trimHistory drops the keys updated longest ago (never keep) until the data fits
// MaxHistoryBytes.
func trimHistory(data map[string]string, keep string) {
	size := 0
	for k, v := range data {
		size += len(k) + len(v)
	}
	if size <= MaxHistoryBytes {
		return
	}
	type entry struct {
		key     string
		updated time.Time
	}
	var es []entry
	for k, v := range data {
		if k == keep {
			continue
		}
		var h StepHistory
		_ = json.Unmarshal([]byte(v), &h)
		es = append(es, entry{k, h.Updated.Time})
	}
	sort.Slice(es, func(a, b int) bool {
		if !es[a].updated.Equal(es[b].updated) {
			return es[a].updated.Before(es[b].updated)
		}
		return es[a].key < es[b].key
	})
	for _, e := range es {
		if size <= MaxHistoryBytes {
			return
		}
		size -= len(e.key) + len(data[e.key])
		delete(data, e.key)
	}
}
