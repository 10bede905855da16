package execute

import (
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The structured log lines (klog) of the executor's key events, written beside the human progress
// on Config.Out: what a log pipeline reads (`--logging-format=json` makes them JSON). Every line
// about a Redis cluster carries the keys namespace and cluster (its name); a line about a move
// carries shard, pod (the pod's name, in that namespace), node (the node the pod ran on) and
// step (a report.Step… name) too. Reasons are the report's words. Keys stay flat strings, so
// that a log pipeline can index them without parsing.

// logWindow logs the maintenance-window decision a run starts with.
func (e *Executor) logWindow(w report.WindowState) {
	switch {
	case len(w.Windows) == 0:
		klog.V(2).InfoS("No maintenance window configured: acting at any time")
	case w.Ignored:
		klog.InfoS("Acting outside the maintenance windows: they are ignored", "windows", e.windows.String(), "open", w.Open)
	case w.Open:
		klog.InfoS("Maintenance window open", "windows", e.windows.String(), "closes", w.Closes, "stepEstimate", w.StepEstimate)
	default:
		klog.InfoS("Outside every maintenance window: observing only", "windows", e.windows.String(), "nextOpen", w.NextOpen)
	}
}

// clusterKeys are the keys naming the Redis cluster key ("namespace/name") in a log line.
func clusterKeys(key string) []any {
	ns, name, _ := strings.Cut(key, "/")
	return []any{"namespace", ns, "cluster", name}
}

// moveKeys are the keys of a line about step of move m: the cluster's, then shard, pod, node
// and step.
func (cr *clusterRun) moveKeys(m *moveRun, step string) []any {
	return append(clusterKeys(cr.key), "shard", m.mv.Shard, "pod", m.pod.Name, "node", m.mv.Node, "step", step)
}

// logStep logs a step of move m that ended with res after d, one line per step: a skip or an
// abort with its reason, a verified failover, an eviction, the move's end (the reobserve step),
// and the other steps, which are logged at V(2) unless Config.LogEveryStep.
func (cr *clusterRun) logStep(m *moveRun, name string, res result, d time.Duration) {
	kv := append(cr.moveKeys(m, name), "seconds", report.Seconds(d))
	switch {
	case res.outcome == report.OutcomeSkip:
		klog.InfoS("Move skipped", append(kv, "reason", res.reason)...)
	case res.outcome == report.OutcomeAbort:
		klog.ErrorS(res.err, "Move aborted", kv...)
	case name == report.StepFailover && m.rep.Failover != nil:
		fo := m.rep.Failover
		klog.InfoS("Master failed over", append(kv, "oldMaster", fo.OldMaster, "newMaster", fo.NewMaster, "mode", cr.cfg.FailoverMode.String(), "failoverSeconds", fo.Seconds)...)
	case name == report.StepEvict:
		klog.InfoS("Pod evicted", append(kv, "reason", m.mv.Reason)...)
	case name == report.StepReobserve:
		klog.InfoS("Move done", append(kv, "from", m.rep.From, "to", m.rep.To, "expected", m.mv.Expected)...)
	default:
		v := klog.Level(2)
		if cr.cfg.LogEveryStep {
			v = 0
		}
		klog.V(v).InfoS("Step done", append(kv, "note", res.reason)...)
	}
}

// logStop logs why the run stopped acting on a cluster before compliance (report.ClusterRun's
// Stopped and StoppedBy).
func (cr *clusterRun) logStop(by, reason string, err error) {
	kv := append(clusterKeys(cr.key), "stoppedBy", by)
	if err != nil {
		klog.ErrorS(err, "Cluster stopped", kv...)
		return
	}
	klog.InfoS("Cluster stopped", append(kv, "reason", reason)...)
}
