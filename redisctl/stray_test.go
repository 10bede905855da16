package redisctl_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis/v8"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
)

// TestRejoinStray makes a replica a stray master as Redis 7.0 does (its nodes.conf saved with
// myself flagged master while it replicated; restarted, Redis's start-up check marks every slot
// it holds keys of importing from their owner), and checks that the health gate names it once
// (stray_master), that RejoinStray refuses another owner (ErrNotStray, nothing changed), and that
// with the right owner it becomes a replica again, in sync after a full sync, with every key
// written before still readable and the cluster healthy.
func TestRejoinStray(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cc := c.ClusterClient()
	const keys = 300
	for i := range keys {
		if err := cc.Set(ctx, fmt.Sprintf("stray:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	master, replica := c.Shards[0][0], c.Shards[0][1]
	waitApplied(t, c.Client, master.Addr(), replica.Addr())
	owner := nodeAt(t, c, master.Addr())

	// What Redis 7.0 saves after an UPDATE message about itself: "myself,master -".
	replica.Stop()
	if err := redistest.FlagMyselfMaster(replica.Dir); err != nil {
		t.Fatal(err)
	}
	if err := replica.Start(); err != nil {
		t.Fatal(err)
	}
	stray := waitStray(t, c, replica.Addr())
	t.Logf("stray master: %s", stray)
	if stray.Owner.ID != owner.ID || stray.Count == 0 {
		t.Fatalf("stray master %s: want owner %s and importing slots", stray, owner.ID)
	}
	_, err := c.Client.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
	var he *redisctl.HealthError
	if !errors.As(err, &he) || !he.Has(redisctl.ReasonStrayMaster) || he.Has(redisctl.ReasonSlotMigration) {
		t.Fatalf("health gate: %v, want stray_master and no slot_migration", err)
	}
	t.Logf("health gate: %v", err)

	other := nodeAt(t, c, c.Shards[1][0].Addr())
	if err := c.Client.RejoinStray(ctx, replica.Addr(), other.ID, c.Addrs(), 10*time.Second, nil); !errors.Is(err, redisctl.ErrNotStray) {
		t.Fatalf("RejoinStray with another owner: %v, want ErrNotStray", err)
	}
	rejoinStray(t, c, replica.Addr(), owner.ID, nil)
	readBack(t, cc, "stray:", keys)
}

// sendUpdateAbout sends the node at busAddr (its cluster bus) one UPDATE message, as the cluster
// bus of Redis 7.0 frames it (cluster.h: the clusterMsg header, 2,256 bytes, then
// clusterMsgDataUpdate, 2,096 bytes; numbers in network byte order), from the known node
// senderID (config epoch senderEpoch), reporting that node aboutID has config epoch epoch and
// serves no slot: what a node with a stale view sends a replica that claims its master's slots
// at an older epoch than it knows for that replica.
func sendUpdateAbout(t *testing.T, busAddr, senderID string, senderEpoch uint64, aboutID string, epoch uint64) {
	t.Helper()
	const header, update = 2256, 2096
	msg := make([]byte, header+update)
	copy(msg[0:4], "RCmb")
	binary.BigEndian.PutUint32(msg[4:8], header+update)
	binary.BigEndian.PutUint16(msg[8:10], 1)  // protocol version
	binary.BigEndian.PutUint16(msg[12:14], 7) // CLUSTERMSG_TYPE_UPDATE
	binary.BigEndian.PutUint64(msg[16:24], senderEpoch)
	binary.BigEndian.PutUint64(msg[24:32], senderEpoch)
	copy(msg[40:80], senderID)
	binary.BigEndian.PutUint64(msg[header:header+8], epoch)
	copy(msg[header+8:header+48], aboutID)
	conn, err := net.DialTimeout("tcp", busAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
}

// TestRejoinReplicatingStray reproduces Redis 7.0's UPDATE-about-myself path on real
// redis-server: a replica sent an UPDATE about itself at a newer config epoch flags itself a
// master without slots (in its nodes.conf too) while it goes on replicating ("Discarding UPDATE
// message about myself."). The health gate names it (stray_master, replicating); RejoinStray
// restarts its server (SHUTDOWN NOSAVE; here the test plays the kubelet and starts it again),
// which comes back importing its master's slots, then makes it a replica again, in sync, every
// key still readable.
func TestRejoinReplicatingStray(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t, redistest.Config{Shards: 3, PodsPerShard: 2})
	cc := c.ClusterClient()
	const keys = 300
	for i := range keys {
		if err := cc.Set(ctx, fmt.Sprintf("replicating:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	master, replica := c.Shards[1][0], c.Shards[1][1]
	waitApplied(t, c.Client, master.Addr(), replica.Addr())
	owner, me := nodeAt(t, c, master.Addr()), nodeAt(t, c, replica.Addr())
	bus := net.JoinHostPort(replica.IP, strconv.Itoa(redisctl.DefaultPort+10000))
	// The replica's own config epoch is not shown (CLUSTER NODES prints its master's): report
	// one above every epoch it knows, cluster_current_epoch.
	info, err := c.Client.ClusterInfo(ctx, replica.Addr())
	if err != nil {
		t.Fatal(err)
	}
	current := info.Int("cluster_current_epoch", -1)
	if current < 0 {
		t.Fatalf("CLUSTER INFO of %s has no cluster_current_epoch", replica.Addr())
	}
	sendUpdateAbout(t, bus, owner.ID, owner.ConfigEpoch, me.ID, uint64(current)+1)

	stray := waitStray(t, c, replica.Addr())
	t.Logf("stray master: %s", stray)
	if !stray.Replicating || stray.Owner.ID != owner.ID {
		t.Fatalf("stray master %s: want replicating %s", stray, owner.ID)
	}
	if log, err := os.ReadFile(filepath.Join(replica.Dir, "redis.log")); err != nil || !strings.Contains(string(log), "Discarding UPDATE message about myself") {
		t.Errorf("the replica's log does not say it discarded the UPDATE about itself (%v)", err)
	}
	_, err = c.Client.CheckHealth(ctx, c.Addrs(), redisctl.HealthOptions{})
	if !strings.Contains(fmt.Sprint(err), "stray_master "+replica.Addr()+": flags itself a master without slots") {
		t.Fatalf("health gate: %v, want the replicating stray_master", err)
	}

	// The kubelet's part: start the server again once it has exited.
	srv := replica.Server()
	restarted := make(chan error, 1)
	go func() {
		<-srv.Done()
		replica.Stop()
		restarted <- replica.Start()
	}()
	rejoinStray(t, c, replica.Addr(), owner.ID, restarted)
	readBack(t, cc, "replicating:", keys)
}

// waitStray waits (30 s) until the node at addr is a stray master of c and returns it.
func waitStray(t *testing.T, c *redistest.Cluster, addr string) redisctl.StrayMaster {
	t.Helper()
	var stray redisctl.StrayMaster
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		topo, err := c.Client.Topology(ctx, c.Addrs())
		if err != nil {
			return false, nil
		}
		for _, s := range topo.StrayMasters() {
			if s.Addr == addr {
				stray = s
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("%s never became a stray master: %v", addr, err)
	}
	return stray
}

// rejoinStray makes the stray master at addr a replica of ownerID (RejoinStray; then, when
// restarted is not nil, the error of the restart the test played), waits until it is in sync
// and the cluster healthy, and logs each step.
func rejoinStray(t *testing.T, c *redistest.Cluster, addr, ownerID string, restarted <-chan error) {
	t.Helper()
	ctx := context.Background()
	var steps []string
	progress := func(s string) { steps = append(steps, s) }
	defer func() {
		for _, s := range steps {
			t.Log(s)
		}
	}()
	if err := c.Client.RejoinStray(ctx, addr, ownerID, c.Addrs(), 60*time.Second, progress); err != nil {
		t.Fatal(err)
	}
	if restarted != nil {
		if err := <-restarted; err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Client.WaitRejoin(ctx, addr, ownerID, 60*time.Second, progress); err != nil {
		t.Fatal(err)
	}
	if _, err := redistest.WaitFormed(ctx, c.Client, c.Addrs(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// readBack checks that keys prefix0 … prefix<n-1> hold 0 … n-1.
func readBack(t *testing.T, cc *redis.ClusterClient, prefix string, n int) {
	t.Helper()
	for i := range n {
		k := prefix + strconv.Itoa(i)
		if v, err := cc.Get(context.Background(), k).Int(); err != nil || v != i {
			t.Errorf("%s = %d, %v; want %d", k, v, err, i)
		}
	}
}
