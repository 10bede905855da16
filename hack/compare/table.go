package main

import (
	"fmt"
	"strings"
	"time"
)

// table renders the results as a Markdown table, with a note on the conditions.
func table(results []Result, cfg Config) string {
	var b strings.Builder
	b.WriteString("| scenario | tool | compliance reached | time to compliance | evictions | masters evicted without failover | writer errors | lost writes | survives losing the node with the most masters |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(&b, "| %s | %s | measurement failed: %s | | | | | | |\n", r.Scenario, r.Tool, oneLine(r.Err.Error()))
			continue
		}
		compliance := "yes"
		if !r.Compliant {
			compliance = "no"
			if len(r.Broken) > 0 {
				compliance += " (" + strings.Join(r.Broken, ", ") + ")"
			}
		}
		survived := "no"
		if r.Survived {
			survived = "yes"
		}
		tool := r.Tool
		if r.DrainTook > 0 {
			tool += fmt.Sprintf(" (drained in %s)", r.DrainTook.Round(100*time.Millisecond))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %d | %d of %d | %d | %s: %s (%d masters; %s) |\n",
			r.Scenario, tool, compliance, reachedText(r), r.Evictions, r.MastersEvicted,
			r.WriteErrors, r.WriteErrors+r.Acked, r.LostWrites, r.LostNode, survived, r.LostMasters, r.SurviveNote)
	}
	fmt.Fprintf(&b, "\nWriter at %d writes/s throughout; every re-created pod takes %s to start (kwok pod-ready delay); descheduler loop every %s, budget %s per tool; node loss: SIGSTOP of the node's redis-servers, judged within 4 × cluster-node-timeout (%s).\n",
		cfg.WriteRate, cfg.ReadyDelay, cfg.DeschedulingInterval, cfg.Budget, 4*redisNodeTimeout)
	b.WriteString("Rows \"+ guard\": `redis-rebalancer serve --guard` runs beside the tool, behind a ValidatingWebhookConfiguration on the scenario's pod evictions (failurePolicy Ignore): a master's eviction is answered 429 until the leader has failed it over. Drain rows: `kubectl drain` (k8s.io/kubectl/pkg/drain, a 429 retried every 5 s) of the node holding the most masters, then uncordoned; \"time to compliance\" is from the drain's end.\n")
	return b.String()
}

func reachedText(r Result) string {
	if r.Reached == 0 {
		return "never"
	}
	return r.Reached.Round(100 * time.Millisecond).String()
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.ReplaceAll(s, "|", "/")
}
