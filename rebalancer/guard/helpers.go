package guard

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

func labelSet(m map[string]string) labels.Set { return labels.Set(m) }

// myself returns the CLUSTER NODES line of the node that answered.
func myself(nodes []redisctl.Node) (redisctl.Node, bool) {
	for _, n := range nodes {
		if n.IsMyself() {
			return n, true
		}
	}
	return redisctl.Node{}, false
}

func nodeByID(nodes []redisctl.Node, id string) (redisctl.Node, bool) {
	for _, n := range nodes {
		if n.ID == id {
			return n, true
		}
	}
	return redisctl.Node{}, false
}

// shardName names a shard after its master's first slot range, as the model names shards read
// from Redis ("slots-0-5460"; a "+" per further range), or after the master's ID without slots.
func shardName(master redisctl.Node) string {
	if len(master.Slots) == 0 {
		id := master.ID
		if len(id) > 8 {
			id = id[:8]
		}
		return "node-" + id
	}
	r := master.Slots[0]
	name := fmt.Sprintf("slots-%d", r.Start)
	if r.End != r.Start {
		name += fmt.Sprintf("-%d", r.End)
	}
	return name + strings.Repeat("+", len(master.Slots)-1)
}

// sameAddr reports whether a master's replica entry is the node at addr (host:port).
func sameAddr(r redisctl.ReplicaEntry, addr string) bool {
	return net.JoinHostPort(r.IP, strconv.Itoa(r.Port)) == addr
}
