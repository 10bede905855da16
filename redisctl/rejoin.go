package redisctl

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitRejoin waits until the node at addr, after its pod came back (possibly on a new IP), is back
// in the cluster, before the next disruption of that cluster: it answers, its own CLUSTER NODES
// shows it a replica of masterID (any master when masterID is ""), its master's view lists it at
// addr, connected and not flagged fail/fail?, and it is in sync (master_link_status:up, offset lag
// and master_last_io_seconds_ago within the Client's limits). It polls every 100 ms and calls
// progress (when not nil) with a one-line status each time the status changes. On timeout the error
// wraps ErrRejoinTimeout and gives the last status.
func (c *Client) WaitRejoin(ctx context.Context, addr, masterID string, timeout time.Duration, progress func(string)) error {
	status := ""
	set := func(s string) {
		if s != status {
			status = s
			if progress != nil {
				progress(s)
			}
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, s := c.rejoinStatus(ctx, addr, masterID)
		if !ok && ctx.Err() != nil && status != "" {
			// A round cut short by the deadline says nothing: keep the last whole one.
			return false, nil
		}
		set(s)
		return ok, nil
	})
	if err != nil {
		return c.errf("rejoin %s: %w after %s: %s: %w", addr, ErrRejoinTimeout, timeout, status, err)
	}
	return nil
}

func (c *Client) rejoinStatus(ctx context.Context, addr, masterID string) (bool, string) {
	nodes, err := c.clusterNodes(ctx, addr)
	if err != nil {
		return false, "not answering: " + err.Error()
	}
	v := View{Nodes: nodes}
	me, ok := v.Myself()
	if !ok {
		return false, "no myself line in CLUSTER NODES"
	}
	if !me.IsReplica() {
		return false, fmt.Sprintf("node %s reports flags %s, not a replica", shortID(me.ID), strings.Join(me.Flags, ","))
	}
	if masterID != "" && me.MasterID != masterID {
		return false, fmt.Sprintf("replica of %s, want %s", shortID(me.MasterID), shortID(masterID))
	}
	m, ok := v.Node(me.MasterID)
	if !ok || !m.IsUsable() {
		return false, fmt.Sprintf("master %s unknown or without address", shortID(me.MasterID))
	}
	mnodes, err := c.clusterNodes(ctx, m.Addr())
	if err != nil {
		return false, "master not answering: " + err.Error()
	}
	seen, ok := (View{Nodes: mnodes}).Node(me.ID)
	switch {
	case !ok:
		return false, fmt.Sprintf("master %s does not know the node yet", m.Addr())
	case seen.Addr() != addr:
		return false, fmt.Sprintf("master %s still has the node at %s", m.Addr(), seen.Addr())
	case seen.IsFailing():
		return false, fmt.Sprintf("master %s flags the node %s", m.Addr(), failFlag(seen))
	case seen.LinkState != LinkConnected:
		return false, fmt.Sprintf("master %s: link to the node %s", m.Addr(), seen.LinkState)
	}
	if _, prob := c.syncOf(ctx, me.ID, addr, m.ID, m.Addr(), HealthOptions{}); prob != "" {
		if stage := c.fullSyncStage(ctx, addr, m.Addr()); stage != "" {
			return false, "full sync from " + m.Addr() + ": " + stage
		}
		return false, "not in sync with " + m.Addr() + ": " + prob
	}
	return true, "in sync replica of " + m.Addr() + " (" + shortID(m.ID) + ")"
}

// fullSyncStage says where a full sync of the replica at addr from the master at masterAddr
// stands, "" when none is seen under way: the master preparing its snapshot (the replica's
// entry in the master's INFO replication in state wait_bgsave: a fork, or the
// repl-diskless-sync-delay that lets more replicas share one transfer), the snapshot on its way
// (send_bulk; on the replica master_sync_in_progress with the bytes read, of the total when a
// disk-based sync announces it), or the replica loading it.
func (c *Client) fullSyncStage(ctx context.Context, addr, masterAddr string) string {
	rr, err := c.infoReplication(ctx, addr)
	if err != nil {
		return ""
	}
	state := ""
	if mr, err := c.infoReplication(ctx, masterAddr); err == nil {
		host, port, _ := net.SplitHostPort(addr)
		for _, e := range mr.Replicas {
			if e.IP == host && strconv.Itoa(e.Port) == port {
				state = e.State
			}
		}
	}
	switch {
	case rr.MasterSyncInProgress && rr.MasterSyncReadBytes >= 0 && rr.MasterSyncTotalBytes > 0:
		return fmt.Sprintf("receiving the snapshot: %s of %s", bytesText(rr.MasterSyncReadBytes), bytesText(rr.MasterSyncTotalBytes))
	case rr.MasterSyncInProgress && rr.MasterSyncReadBytes > 0:
		return "receiving the snapshot (diskless): " + bytesText(rr.MasterSyncReadBytes)
	case state == "wait_bgsave":
		return "the master prepares its snapshot (a fork, or repl-diskless-sync-delay)"
	case state == "send_bulk" || rr.MasterSyncInProgress:
		return "the snapshot is on its way"
	case rr.MasterLinkStatus != "up" && state == "online":
		return "loading the snapshot"
	}
	return ""
}

// bytesText writes n bytes in B, KiB or MiB.
func bytesText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
