// Package policies judges the placement of Redis Cluster pods on Kubernetes: the HA rules of
// seed 000 §一 (ShardSeparation, MaxPodsPerNode, ZoneEvenSplit, MaxPodsPerZone, AllowedZones), the
// pods' own topology spread constraints with kube-scheduler's semantics (TopologySpread), Pending
// pods (Unschedulable), the soft NodeSpread and ZoneBalance rules, a feasibility filter that says
// where a re-created pod may be placed, and the seed's constraint generator.
//
// API objects are converted once (Build) into a Model of indexed nodes and Redis clusters; rules and
// the filter then only read the model and a Placement (member index → node index), so a planner can
// try many placements cheaply.
package policies
