package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/plan"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
)

// zonePrefix marks a zone in --without and prepare-drain's arguments ("zone=zone-b").
const zonePrefix = "zone="

// parseLeaving splits node names and "zone=ZONE" items (comma-separated values are split too)
// into nodes and a zone. It fails on an empty item, or on two zones.
func parseLeaving(values []string) (nodes []string, zone string, err error) {
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			switch {
			case item == "":
				return nil, "", fmt.Errorf("empty node name in %q", v)
			case strings.HasPrefix(item, zonePrefix):
				z := strings.TrimPrefix(item, zonePrefix)
				if z == "" || zone != "" && zone != z {
					return nil, "", fmt.Errorf("one zone at most, and not empty: %q", v)
				}
				zone = z
			default:
				nodes = append(nodes, item)
			}
		}
	}
	return nodes, zone, nil
}

// leavingModels is a cluster as it is and as it would be without some nodes: the model of the
// snapshot (roles read), the nodes leaving it, each cluster's hand-off, and the model of the
// snapshot without those nodes, its roles those after the hand-off and the pods that ran there
// marked lost (policies.Cluster.MarkLost).
type leavingModels struct {
	now, without *policies.Model
	leaving      policies.Leaving
	names        []string
	handOff      map[string]plan.HandOffPlan
	lost         map[string][]string
}

// buildWithout reads the snapshot once and builds both models (Redis read for each, live; the
// same --redis-nodes files offline). The Redis clients are closed before it returns.
func (o *modelOptions) buildWithout(ctx context.Context, errOut io.Writer, p *policy, nodes []string, zone string) (*leavingModels, error) {
	snap, err := o.readSnapshot(ctx, errOut, p)
	if err != nil {
		return nil, err
	}
	now, rc, err := o.build(ctx, errOut, p, snap, o.snapshot.redisRoles)
	if err != nil {
		return nil, err
	}
	if rc != nil {
		defer rc.Close()
	}
	leaving, err := now.LeavingNodes(nodes, zone)
	if err != nil {
		return nil, err
	}
	lm := &leavingModels{now: now, leaving: leaving, names: leaving.Names(now), handOff: map[string]plan.HandOffPlan{}, lost: map[string][]string{}}
	for _, c := range now.Clusters {
		lm.handOff[c.Key()] = plan.HandOff(c, leaving)
	}
	without, rc2, err := o.build(ctx, errOut, p, snap.Without(lm.names), o.snapshot.redisRoles)
	if err != nil {
		return nil, err
	}
	if rc2 != nil {
		defer rc2.Close()
	}
	for _, c := range without.Clusters {
		member := map[string]*policies.Member{}
		for _, mem := range c.Members {
			member[mem.Key()] = mem
		}
		for _, mv := range lm.handOff[c.Key()].Moves {
			if from, to := member[mv.From], member[mv.To]; from != nil && to != nil {
				from.Role, to.Role, to.EmptyMaster = policies.RoleReplica, policies.RoleMaster, false
			}
		}
		for _, i := range c.MarkLost() {
			lm.lost[c.Key()] = append(lm.lost[c.Key()], c.Members[i].Key())
		}
	}
	lm.without = without
	return lm, nil
}

// planWithout is `plan --without`: the analysis and plans of the cluster without the nodes, each
// cluster's hand-off beside it (report.WhatIf).
func (o *planOptions) planWithout(ctx context.Context, errOut io.Writer, p *policy) (*policies.Model, *report.Analysis, error) {
	nodes, zone, err := parseLeaving(o.without)
	if err != nil {
		return nil, nil, fmt.Errorf("--without: %w", err)
	}
	lm, err := o.model.buildWithout(ctx, errOut, p, nodes, zone)
	if err != nil {
		return nil, nil, fmt.Errorf("--without: %w", err)
	}
	a := report.Analyze(lm.without, true, planBounds(p))
	for k := range a.Clusters {
		ca := &a.Clusters[k]
		key := ca.Namespace + "/" + ca.Name
		h := lm.handOff[key]
		lost := lm.lost[key]
		if lost == nil {
			lost = []string{}
		}
		ca.Without = &report.WhatIf{Nodes: lm.names, HandOff: h.Moves, MasterQuorum: h.Quorum, QuorumHolds: h.QuorumHolds, Stuck: h.Stuck, Lost: lost}
	}
	return lm.without, a, nil
}
