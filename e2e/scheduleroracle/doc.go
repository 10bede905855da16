// Package scheduleroracle checks the feasibility filter (policies: Cluster.Explain, FitReport)
// against the kube-scheduler binary itself, on a local control plane of its own
// (e2e/localcluster, pod network 127.61): random small placements with zones, nodes without a
// zone, taints, cordons, CPU, ephemeral-storage and extended-resource requests against random
// node allocatables, host ports, CSI volumes (claims bound to CSI PersistentVolumes, one of them
// ReadWriteOncePod) against CSINode attach limits, bound and Pending pods, spread constraints and
// (anti-)affinity; then, for each pod the scheduler is asked to place, the filter's verdict on
// the state the scheduler sees must agree with what the scheduler does: a pod it binds is bound to
// a node the filter allows, and a pod it leaves Pending has a FailedScheduling message whose
// per-reason node counts are the filter's.
//
// policies/oracle_test.go checks the filter against a port of kube-scheduler's plugin code; this
// package's test checks it, and the whole path from the API objects (observe.ReadSnapshot,
// trimming included) to the verdict, against the scheduler itself. It owns no code outside its
// test.
package scheduleroracle
