// Package policies judges the placement of Redis Cluster pods on Kubernetes against the rules of
// its rule registry (Rules, registry.go: how many pods a node or a zone may hold, shards kept
// apart, allowed zones, the pods' own topology spread constraints with kube-scheduler's
// semantics, Pending pods, where the masters are, and two soft spread rules), and holds a
// feasibility filter that says where a re-created pod may be placed.
//
// API objects are converted once (Build) into a Model of indexed nodes and Redis clusters; rules and
// the filter then only read the model and a Placement (member index → node index), so a planner can
// try many placements cheaply.
//
// # What it owns
//
// The package owns the model (Snapshot and RedisNode, what it reads of CLUSTER NODES, in; Model,
// Cluster, Shard, Member and Placement out; Snapshot.Objects walks a snapshot's objects), the rules
// (Evaluate, EvaluateHard, NodeLimit, ZoneLimit) and their registry (Rules, LookupRule: each
// rule's name, hard or soft, scope, description and fix, which help, metrics and docs read), the
// filter (Candidates, CandidatesIn, Fits, Explain), the quick infeasibility count
// (StaticInfeasibility), the node classes the planner groups interchangeable nodes by (NodeClass),
// and State: a placement whose rules' and filter's counts are kept up to date per move, which the
// planner searches on. It does not read a live cluster, talk to Redis, plan or evict: the
// rebalancer does, on top of it. The generator of the recommended constraints lives in
// policies/constraints and the StatefulSet linter in policies/lint; both build on this package,
// never the reverse.
//
// # What it may import
//
// The standard library; the API types (k8s.io/api) and apimachinery's labels, selection, sets,
// meta/v1 and runtime (Snapshot.Objects); kube-scheduler's own helpers in
// k8s.io/component-helpers (node affinity, taints and tolerations, pod requests, PersistentVolume
// node affinity, generic ephemeral volumes' claims) and k8s.io/csi-translation-lib (the CSI
// driver and volume handle of in-tree volumes, as NodeVolumeLimits counts them), so that the
// filter computes what the scheduler computes; klog only for the logger those helpers take;
// k8s.io/utils/ptr. Nothing that talks to an API server (client-go). Of this module,
// api/v1alpha1 only: the policy's defaults and the shard source's text form (ParseShardSource).
//
// # Layout
//
//   - types.go: the public types (Snapshot, Options, Role, Node, Model, Cluster, Shard, Member,
//     Placement) and their small methods; objects.go: Snapshot.Objects.
//   - build.go: the Build pipeline (pods by cluster, shards, N, PodDisruptionBudgets, each
//     cluster finished in parallel); shards.go: where shards come from (ShardSource: owner,
//     label, or Redis's CLUSTER NODES through Cluster.ApplyRedis, nodes matched to pods by
//     announced hostname or pod IP), which pods may be evicted (Member.NotEvictable) and the
//     warnings that say why not; builder.go: each Build worker's caches and interned ids;
//     sig.go, equal.go: the signatures and equalities those caches are keyed by; template.go: the
//     pod a StatefulSet re-creates; spec.go: a member's scheduling-relevant spec, converted once;
//     zones.go: zone keys, allowed zones, usable nodes; index.go: pods by label, topology domains,
//     existing pods' anti-affinity.
//   - registry.go: the rule registry (Rules: each rule's name, hard or soft, scope, description,
//     fix and check), which Evaluate runs; rules.go: the HA rules' checks; quorum.go: MasterQuorum (Masters, Quorum, and QuorumFix, the
//     fewest failovers that satisfy it); spread.go: PodTopologySpread's constraint instances and counts,
//     shared by the TopologySpread rule and the filter; infeasible.go: StaticInfeasibility;
//     nodeclass.go: NodeClass; state.go: State, the rules' sums and the filter's PreFilter state
//     updated per move (kube-scheduler's AddPod/RemovePod extensions), checked against Evaluate
//     and Candidates by state_test.go.
//   - filter.go: the filter's API, its plugin order and the per-placement state (fitter); one
//     filter_<plugin>.go per kube-scheduler filter plugin with that plugin's precomputed state,
//     PreFilter and Filter, as in kube-scheduler's own plugin folders.
//
// # Scale
//
// Build scales to thousands of nodes and hundreds of thousands of pods: scheduled pods are indexed
// by label (so a selector's matching pods are found without scanning), existing pods' required
// anti-affinity terms by the rarest label pair they require, the scheduling-relevant parts of pod
// specs are interned and their node masks shared, the pods of a StatefulSet share one converted
// template, and clusters are converted in parallel. Checking one node for one member then costs
// O(constraints), not O(members).
//
// The filter is kept equal to kube-scheduler v1.36's filter plugins by a differential test against
// a literal port of their code (oracle_test.go), by kube-scheduler's own unit-test cases for
// NodeResourcesFit, NodePorts, VolumeRestrictions, NodeVolumeLimits and NodeName restated in our
// tables (filter_kubecases_test.go), and against the kube-scheduler binary itself
// (e2e/scheduleroracle).
//
// A pod that stays keeps its node: the rules count a member where it runs whatever the node's
// schedulability, and only a member being placed (Pending, evicted, new) must pass the filter;
// StaticInfeasibility counts the nodes a member could not be placed on now but runs on.
package policies
