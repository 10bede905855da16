// Package redisctl is the Redis Cluster side of the rebalancer: it reads a cluster's state node
// by node, decides whether a disruption is safe, and moves a master's role away from a pod
// before the pod is evicted, without losing an acknowledged write.
//
//   - Connections: a Client keeps one go-redis single-node client per node address (pod IP:port),
//     with AUTH (password, or ACL user and password, from a file or an environment variable),
//     TLS (CA, optional client certificate, verification on) and dial/read/write timeouts. No
//     password ever appears in an error or a log line.
//   - Topology: ParseClusterNodes reads CLUSTER NODES (Redis 3 to 7 formats, hostnames,
//     importing/migrating slots); Client.Topology merges the views of every reachable node and
//     lists where they disagree; Topology.NodeByIP maps a pod to its node.
//   - Health gate (before any disruption): Client.CheckHealth returns a *HealthError
//     with every precise reason (cluster_state, slots not served, fail/pfail flags, unreachable
//     nodes, masters without a connected replica, open slot migrations, disagreeing views,
//     replicas out of sync by master_link_status, offset lag in bytes, or
//     master_last_io_seconds_ago).
//   - Failover (step 4): Client.ChooseReplica picks an in-sync replica (placement preference
//     decided by the caller); Client.Failover sends CLUSTER FAILOVER (FORCE and TAKEOVER only on
//     explicit request) and verifies that the roles really switched on every reachable node, or
//     times out saying what it saw and leaves the cluster alone.
//   - Rejoin (step 6): Client.WaitRejoin waits until a recreated pod's node is a connected,
//     in-sync replica of its shard's master again, wherever its new IP is, saying where a full
//     sync stands (the master's snapshot prepared, on its way, loaded).
//   - Re-introduction: Client.Reintroduce brings back a replica whose claim was released: its pod
//     came back with an empty volume, as a new Redis node knowing nobody; it meets the shard's
//     master, replicates it (a full sync), and every node forgets the old node's ID.
//   - NewClusterClient returns a go-redis v8 cluster client that works with Redis 6 and 7.
//
// It never creates or grows a cluster: forming one (slot shares, CLUSTER MEET, ADDSLOTS,
// REPLICATE) is test-only and lives in test/redistest, which also starts real redis-server
// clusters on loopback for tests. Re-introducing a replica in place of one whose data was
// released keeps the cluster's shape: as many nodes, the same masters and slots.
//
// It may import go-redis, k8s.io/apimachinery's wait and klog, and of this module only
// api/v1alpha1 (the policy's defaults, which its own zero values take); the rebalancer imports
// it, not the reverse.
package redisctl
