package execute

import (
	"time"

	"k8s.io/klog/v2"

	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// The structured log lines (klog) of the executor's key events, written beside the human progress
// on Config.Out: what a log pipeline reads (`--logging-format=json` makes them JSON). Each names
// the cluster ("namespace/name") and, for a move, the pod; reasons are the report's words.

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

// logStep logs a step of move m that ended with res after d: a skip or an abort with its reason,
// a verified failover, an eviction, the move's end; other steps at V(2).
func (cr *clusterRun) logStep(m *moveRun, name string, res result, d time.Duration) {
	pod := klog.KObj(m.pod)
	switch {
	case res.outcome == report.OutcomeSkip:
		klog.InfoS("Move skipped", "cluster", cr.key, "pod", pod, "step", name, "reason", res.reason)
	case res.outcome == report.OutcomeAbort:
		klog.ErrorS(res.err, "Move aborted", "cluster", cr.key, "pod", pod, "step", name)
	case name == report.StepFailover && m.rep.Failover != nil:
		fo := m.rep.Failover
		klog.InfoS("Master failed over", "cluster", cr.key, "pod", pod, "oldMaster", fo.OldMaster, "newMaster", fo.NewMaster, "mode", cr.cfg.FailoverMode.String(), "seconds", fo.Seconds)
	case name == report.StepEvict:
		klog.InfoS("Pod evicted", "cluster", cr.key, "pod", pod, "node", m.mv.Node, "reason", m.mv.Reason)
	case name == report.StepReobserve:
		klog.InfoS("Move done", "cluster", cr.key, "pod", pod, "from", m.rep.From, "to", m.rep.To, "expected", m.mv.Expected)
	default:
		klog.V(2).InfoS("Step done", "cluster", cr.key, "pod", pod, "step", name, "note", res.reason, "seconds", report.Seconds(d))
	}
}

// logStop logs why the run stopped acting on a cluster before compliance (report.ClusterRun's
// Stopped and StoppedBy).
func (cr *clusterRun) logStop(by, reason string, err error) {
	if err != nil {
		klog.ErrorS(err, "Cluster stopped", "cluster", cr.key, "stoppedBy", by)
		return
	}
	klog.InfoS("Cluster stopped", "cluster", cr.key, "stoppedBy", by, "reason", reason)
}
