// Package policies judges the placement of Redis Cluster pods on Kubernetes: the HA rules of
// seed 000 §一 (ShardSeparation, MaxPodsPerNode, ZoneEvenSplit, MaxPodsPerZone, AllowedZones), the
// pods' own topology spread constraints with kube-scheduler's semantics (TopologySpread), Pending
// pods (Unschedulable), the soft NodeSpread and ZoneBalance rules, a feasibility filter that says
// where a re-created pod may be placed, and the seed's constraint generator.
//
// API objects are converted once (Build) into a Model of indexed nodes and Redis clusters; rules and
// the filter then only read the model and a Placement (member index → node index), so a planner can
// try many placements cheaply.
//
// Build scales to thousands of nodes and hundreds of thousands of pods: scheduled pods are indexed
// by label (so a selector's matching pods are found without scanning), existing pods' required
// anti-affinity terms by the rarest label pair they require, the scheduling-relevant parts of pod
// specs are interned and their node masks shared, the pods of a StatefulSet share one converted
// template, and clusters are converted in parallel. Checking one node for one member then costs
// O(constraints), not O(members).
//
// The filter is kept equal to kube-scheduler v1.36's filter plugins by a differential test against
// a literal port of their code (oracle_test.go).
package policies
