package policies

import (
	"fmt"
	"net"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
)

// ShardSourceKind names where a pod's shard comes from (ShardSource).
type ShardSourceKind string

// The shard sources.
const (
	// ShardAuto: the pod's controller, unless Redis, once read (Cluster.ApplyRedis), groups the
	// pods otherwise than their controllers do (Bitnami's one StatefulSet for the whole cluster,
	// OT's leader and follower StatefulSets): then Redis.
	ShardAuto ShardSourceKind = v1alpha1.ShardSourceAuto
	// ShardRedis: Redis's CLUSTER NODES (a master and the replicas whose master it is). Until
	// Redis is read, every pod's shard is unknown.
	ShardRedis ShardSourceKind = v1alpha1.ShardSourceRedis
	// ShardOwner: the pod's controller (one StatefulSet per shard, the seed layout and ucloud's
	// operator; KubeBlocks' one InstanceSet per shard); a pod without one is a shard of its own.
	ShardOwner ShardSourceKind = v1alpha1.ShardSourceOwner
	// ShardLabel: the value of a pod label (ShardSource.Key); a pod without it falls back to its
	// controller.
	ShardLabel ShardSourceKind = v1alpha1.ShardSourceLabel
)

// ShardSource says where a pod's shard comes from. Its text form (ParseShardSource, String) is
// "auto", "redis", "owner" or "label:KEY".
type ShardSource struct {
	// Kind is the source; "" means ShardAuto.
	Kind ShardSourceKind
	// Key is ShardLabel's label key.
	Key string
}

// ParseShardSource reads "auto", "redis", "owner" or "label:KEY" ("" is "auto"), the policy's
// selection.shardSource (v1alpha1.ParseShardSource). It fails on anything else, naming the
// choices, and on a KEY that is not a label key.
func ParseShardSource(s string) (ShardSource, error) {
	kind, key, err := v1alpha1.ParseShardSource(s)
	if err != nil {
		return ShardSource{}, err
	}
	return ShardSource{Kind: ShardSourceKind(kind), Key: key}, nil
}

// String returns the text form ParseShardSource reads.
func (s ShardSource) String() string {
	switch s.Kind {
	case "":
		return string(ShardAuto)
	case ShardLabel:
		return string(ShardLabel) + ":" + s.Key
	}
	return string(s.Kind)
}

// RedisNode is one node of a Redis Cluster as CLUSTER NODES lists it (one line,
// https://redis.io/commands/cluster-nodes/): what ApplyRedis reads to match Redis nodes to pods
// and to group them into shards. rebalancer/observe converts redisctl's topology into it.
type RedisNode struct {
	// ID is the 40-character node ID.
	ID string
	// IP is the announced IP ("" for a node without address).
	IP string
	// Hostname is the hostname the node announces (Redis 7 cluster-announce-hostname: the field
	// after the comma in "ip:port@cport,hostname"), "" when none.
	Hostname string
	// Role is RoleMaster or RoleReplica (flags master, slave).
	Role Role
	// MasterID is a replica's master's ID.
	MasterID string
	// Slots are the inclusive slot ranges a master serves, in the order CLUSTER NODES prints them.
	Slots [][2]int
	// Failing is true for a node flagged fail, fail? or noaddr.
	Failing bool
}

// shardsNotRead is why a member has no shard while Options.ShardSource says ShardRedis and
// Cluster.ApplyRedis has not run.
const shardsNotRead = "shard unknown: shards come from Redis, which was not read"

// ShardsUnread reports whether c's shards come from Redis (ShardRedis) and Redis was not read
// (Cluster.ApplyRedis never ran for it): every member is then a shard of its own, and the rules
// that read shards (ShardSeparation, MasterQuorum) cannot judge it.
func (c *Cluster) ShardsUnread() bool {
	for _, mem := range c.Members {
		if mem.shardWhy == shardsNotRead {
			return true
		}
	}
	return false
}

// ownerShard gives, in Build, a member's shard from its controller (or its own name), by the
// shard source: a ShardLabel value when the pod has one, and nothing known for ShardRedis (until
// ApplyRedis).
func (m *Model) ownerShard(mem *Member, owner string) {
	src := m.Options.ShardSource
	switch {
	case src.Kind == ShardRedis:
		mem.Shard, mem.shardWhy = mem.Pod.Name, shardsNotRead
		return
	case src.Kind == ShardLabel:
		if v, ok := mem.Pod.Labels[src.Key]; ok {
			mem.Shard = v
			return
		}
	}
	mem.Shard = owner
	if mem.Shard == "" {
		mem.Shard = mem.Pod.Name
	}
}

// ownerEvictable sets why the member's controller never re-creates it ("" when it does): a pod
// without a controller, or owned by a StatefulSet the snapshot lacks. (A pod of any other owner
// than a StatefulSet or one of Options.RecreatingOwners is no member: Model.notMember.)
func (m *Model) ownerEvictable(mem *Member, kind, name string) {
	switch {
	case kind == "":
		mem.ownerWhy = "no controller: nothing would re-create the pod"
	case kind == "StatefulSet" && mem.sts == nil:
		mem.ownerWhy = fmt.Sprintf("StatefulSet %s is not in the snapshot: the re-creation template is unknown", name)
	}
}

// groupShards sorts the members by shard, ordinal and name, numbers them, and builds c.Shards
// from their Shard names. It sets old, when not nil (one element per member), to the members'
// previous positions by their new ones.
func (c *Cluster) groupShards(old []int) {
	for i, mem := range c.Members {
		mem.Index = i
	}
	sort.SliceStable(c.Members, func(i, j int) bool {
		a, b := c.Members[i], c.Members[j]
		if a.Shard != b.Shard {
			return a.Shard < b.Shard
		}
		if a.Ordinal != b.Ordinal {
			return a.Ordinal < b.Ordinal
		}
		return a.Pod.Name < b.Pod.Name
	})
	// Sorted by shard, each shard's members are a run of positions: its Members are a window
	// (capacity capped) of one array of every position, its Shard one of an array of shards.
	pos := make([]int, len(c.Members))
	runs := 0
	for i, mem := range c.Members {
		if i == 0 || mem.Shard != c.Members[i-1].Shard {
			runs++
		}
	}
	shards := make([]Shard, runs)
	c.Shards = make([]*Shard, 0, runs)
	start := 0
	for i, mem := range c.Members {
		if old != nil {
			old[i] = mem.Index
		}
		mem.Index = i
		pos[i] = i
		if i > 0 && mem.Shard != c.Members[i-1].Shard {
			start = i
		}
		if start == i {
			sh := &shards[len(c.Shards)]
			sh.Name = mem.Shard
			c.Shards = append(c.Shards, sh)
		}
		mem.ShardIndex = len(c.Shards) - 1
		c.Shards[mem.ShardIndex].Members = pos[start : i+1 : i+1]
	}
	// A shard's StatefulSet: the one controlling every member of the shard and no other shard's.
	// shardOf: a StatefulSet's one shard, -1 when it controls members of several.
	shardOf := make(map[*appsv1.StatefulSet]int, len(c.Shards))
	for _, mem := range c.Members {
		if mem.sts != nil {
			if si, ok := shardOf[mem.sts]; !ok {
				shardOf[mem.sts] = mem.ShardIndex
			} else if si != mem.ShardIndex {
				shardOf[mem.sts] = -1
			}
		}
	}
	for _, sh := range c.Shards {
		sts := c.Members[sh.Members[0]].sts
		for _, i := range sh.Members[1:] {
			if c.Members[i].sts != sts {
				sts = nil
			}
		}
		if sts != nil && shardOf[sts] >= 0 {
			sh.StatefulSet = sts
		}
	}
}

// ApplyRedis sets, from the nodes of the cluster's Redis Cluster as CLUSTER NODES lists them,
// each member's Role, EmptyMaster and RedisID, and, when Options.ShardSource says so, its shard:
// with ShardRedis always, with ShardAuto when Redis groups the pods it knows otherwise than their
// controllers (Cluster.ShardSource says which). A Redis shard is a master and the replicas whose
// master it is; a member Redis does not know (not yet joined, or its node gone) keeps an unknown
// shard of its own, is never evicted, and is named in Warnings, never guessed into a shard.
//
// Members are matched to nodes by the hostname a node announces (Redis 7
// cluster-announce-hostname: the pod's hostname or FQDN, "<pod>.<subdomain>.<namespace>.svc...";
// see hostnameMatches), else by pod IP, else by the address of the Service that exposes the pod
// alone (Member.ServiceAddrs: a node announcing its LoadBalancer's IP, or its hostname, as the
// Bitnami chart's externalAccess makes it). A pod matching two live nodes, or a node two pods, is
// left unmatched and reported. Members Redis lists but that are not bound to a node or are
// terminating get their shard from it, but no role.
//
// It must be called before anything reads the cluster's placement rules or filter (a State,
// Evaluate, Candidates, the planner): regrouping renumbers the members. It panics otherwise.
func (c *Cluster) ApplyRedis(nodes []RedisNode) {
	if c.read.Load() {
		panic("policies: ApplyRedis after the cluster was read")
	}
	match, warnings := c.matchRedis(nodes)
	byID := make(map[string]*RedisNode, len(nodes))
	for k := range nodes {
		byID[nodes[k].ID] = &nodes[k]
	}
	for i, mem := range c.Members {
		mem.Role, mem.EmptyMaster, mem.RedisID, mem.shardWhy = RoleUnknown, false, "", ""
		k := match[i]
		if k < 0 {
			continue
		}
		n := &nodes[k]
		mem.RedisID = n.ID
		if mem.Node >= 0 && !mem.Terminating {
			mem.Role = n.Role
			// A master serving no slot does not vote (MasterQuorum counts masters serving slots).
			mem.EmptyMaster = n.Role == RoleMaster && len(n.Slots) == 0
		}
	}
	// Redis's shard of each member: its master's ID, or "" when Redis does not know it.
	key := make([]string, len(c.Members))
	for i := range c.Members {
		if match[i] < 0 {
			continue
		}
		n := &nodes[match[i]]
		switch {
		case n.Role == RoleMaster:
			key[i] = n.ID
		case n.MasterID != "":
			key[i] = n.MasterID
		}
	}
	src := c.model.Options.ShardSource // defaulted by Build (ShardAuto)
	regroup := src.Kind == ShardRedis || src.Kind == ShardAuto && !samePartition(c.Members, key)
	if regroup {
		c.ShardSource = ShardSource{Kind: ShardRedis}
		named := map[string]string{} // master ID → shard name
		taken := map[string]bool{}
		for i, mem := range c.Members {
			if key[i] == "" {
				mem.Shard = mem.Pod.Name
				if match[i] < 0 {
					mem.shardWhy = "Redis does not know the pod (no node at its pod IP, hostname or Service address): shard unknown"
					if mem.pending() {
						mem.shardWhy = "Pending, not in Redis yet: shard unknown"
					}
				} else {
					mem.shardWhy = "Redis lists its node without a master: shard unknown"
				}
				continue
			}
			name, ok := named[key[i]]
			if !ok {
				name = redisShardName(byID[key[i]], key[i])
				if taken[name] { // two masters claiming one slot: Redis is mid-conflict
					if short := name + "@" + shortID(key[i]); !taken[short] {
						name = short
					} else {
						name += "@" + key[i] // node IDs are unique
					}
				}
				named[key[i]], taken[name] = name, true
			}
			mem.Shard = name
		}
		old := make([]int, len(c.Members))
		c.groupShards(old)
		c.permuteMembers(old)
	} else {
		for i, mem := range c.Members {
			if match[i] < 0 && mem.Node >= 0 && !mem.Terminating {
				mem.shardWhy = "Redis does not know the pod (no node at its pod IP, hostname or Service address)"
			}
		}
	}
	c.Warnings = append(c.ownerWarnings(), warnings...)
	sort.Strings(c.Warnings)
}

// samePartition reports whether the members Redis knows (key[i] != "") are grouped by their
// current shards exactly as by Redis's: one Redis shard per shard and the reverse.
func samePartition(members []*Member, key []string) bool {
	toRedis, toShard := map[string]string{}, map[string]string{}
	for i, mem := range members {
		if key[i] == "" {
			continue
		}
		if r, ok := toRedis[mem.Shard]; ok && r != key[i] {
			return false
		}
		if s, ok := toShard[key[i]]; ok && s != mem.Shard {
			return false
		}
		toRedis[mem.Shard], toShard[key[i]] = key[i], mem.Shard
	}
	return true
}

// redisShardName names the shard of master id (master nil when Redis does not list it): by its
// first slot range, stable across failovers ("slots-0-5460", "+" per further range); a master
// serving no slot by its node ID's first 8 characters ("node-1a2b3c4d").
func redisShardName(master *RedisNode, id string) string {
	if master != nil && len(master.Slots) > 0 {
		r := master.Slots[0]
		name := fmt.Sprintf("slots-%d", r[0])
		if r[1] != r[0] {
			name += fmt.Sprintf("-%d", r[1])
		}
		return name + strings.Repeat("+", len(master.Slots)-1)
	}
	return "node-" + shortID(id)
}

// permuteMembers reorders what Build computed per member index after groupShards moved the
// members (old[i] is member i's previous index).
func (c *Cluster) permuteMembers(old []int) {
	perm := func(s []bool) []bool {
		out := make([]bool, len(s))
		for i, o := range old {
			out[i] = s[o]
		}
		return out
	}
	for _, in := range c.spread {
		in.matchCur, in.matchNext = perm(in.matchCur), perm(in.matchNext)
	}
}

// matchRedis matches members to nodes (ApplyRedis): match[i] is member i's node index, -1 when
// none. warnings name the pods and nodes that could not be matched one to one.
func (c *Cluster) matchRedis(nodes []RedisNode) (match []int, warnings []string) {
	match = make([]int, len(c.Members))
	cands := make([][]int, len(c.Members))
	for k := range nodes {
		n := &nodes[k]
		at := n.IP
		if at == "" {
			at = n.Hostname
		}
		// The ways a node names its pod, in order: the first that names exactly one member
		// decides; one that names several is reported and names none.
		ways := []struct {
			applies bool
			is      func(*Member) bool
			several func() string // the warning when it names several
		}{
			// By hostname: the pod the node announces.
			{n.Hostname != "", func(mem *Member) bool { return hostnameMatches(n.Hostname, mem.Pod) },
				func() string {
					return fmt.Sprintf("Redis node %s announces hostname %s, which names more than one pod", shortID(n.ID), n.Hostname)
				}},
			// By IP: the running pod with the node's IP.
			{n.IP != "", func(mem *Member) bool {
				return mem.Pod.Status.PodIP != "" && !mem.Terminating && sameIP(mem.Pod.Status.PodIP, n.IP)
			}, func() string {
				return fmt.Sprintf("Redis node %s at %s: more than one pod has that IP", shortID(n.ID), n.IP)
			}},
			// By a Service: the pod whose own Service exposes the address the node announces.
			{at != "", func(mem *Member) bool { return !mem.Terminating && mem.announcedAt(n.IP, n.Hostname) },
				func() string {
					return fmt.Sprintf("Redis node %s at %s: the Services of more than one pod expose that address", shortID(n.ID), at)
				}},
		}
		for _, w := range ways {
			if !w.applies {
				continue
			}
			i := c.onlyMember(w.is)
			if i >= 0 {
				cands[i] = append(cands[i], k)
			}
			if i == several {
				warnings = append(warnings, w.several())
			}
			if i != -1 {
				break
			}
		}
	}
	warnings = append(warnings, c.notMemberNodes(nodes, cands)...)
	for i, mem := range c.Members {
		match[i] = -1
		cs := cands[i]
		if len(cs) > 1 {
			// A pod re-created with a new node ID leaves its old one behind, failing: the live one
			// is the pod's.
			var live []int
			for _, k := range cs {
				if !nodes[k].Failing {
					live = append(live, k)
				}
			}
			if len(live) == 1 {
				cs = live
			} else {
				ids := make([]string, len(cs))
				for j, k := range cs {
					ids[j] = shortID(nodes[k].ID)
				}
				warnings = append(warnings, fmt.Sprintf("pod %s matches Redis nodes %s: left unmatched", mem.Pod.Name, strings.Join(ids, ", ")))
				continue
			}
		}
		if len(cs) == 1 {
			match[i] = cs[0]
		}
	}
	return match, warnings
}

// notMemberNodes names the Redis nodes no member matches that are a pod of NotMembers (by its
// announced hostname, or its IP on a running pod): Redis lists a pod that no workload of the
// cluster owns, which is then neither judged nor evicted.
func (c *Cluster) notMemberNodes(nodes []RedisNode, cands [][]int) []string {
	if len(c.NotMembers) == 0 {
		return nil
	}
	matched := map[int]bool{}
	for _, cs := range cands {
		for _, k := range cs {
			matched[k] = true
		}
	}
	var out []string
	for k := range nodes {
		n := &nodes[k]
		if matched[k] {
			continue
		}
		for _, nm := range c.NotMembers {
			p := nm.Pod
			if n.Hostname != "" && hostnameMatches(n.Hostname, p) ||
				n.IP != "" && p.DeletionTimestamp == nil && p.Status.PodIP != "" && net.ParseIP(n.IP).Equal(net.ParseIP(p.Status.PodIP)) {
				out = append(out, fmt.Sprintf("Redis node %s is pod %s, which is not a member (%s): not judged", shortID(n.ID), p.Name, nm.Why))
				break
			}
		}
	}
	return out
}

// several is what onlyMember returns when more than one member is the one asked for.
const several = -2

// onlyMember returns the index of the one member is reports true for, -1 when none, several
// when more than one.
func (c *Cluster) onlyMember(is func(*Member) bool) int {
	found := -1
	for i, mem := range c.Members {
		if is(mem) {
			if found >= 0 {
				return several
			}
			found = i
		}
	}
	return found
}

// hostnameMatches reports whether hostname h, as a Redis node announces it, names pod p: its
// first DNS label is the pod's hostname (spec.hostname, else its name), and the labels after it,
// when present, are the pod's subdomain (when it has one; a StatefulSet's serviceName) and its
// namespace ("redis-0.redis-headless.ns.svc.cluster.local", "redis-0.redis-headless",
// "redis-0"). Case is ignored, as DNS does.
// HostnameMatches reports whether h, the hostname a Redis node announces (Redis 7
// cluster-announce-hostname), names pod p: its first label is the pod's hostname (or name), and
// the next ones, when present, its subdomain and namespace (case-insensitively).
func HostnameMatches(h string, p *corev1.Pod) bool { return hostnameMatches(h, p) }

func hostnameMatches(h string, p *corev1.Pod) bool {
	labels := strings.Split(strings.TrimSuffix(h, "."), ".")
	host := p.Spec.Hostname
	if host == "" {
		host = p.Name
	}
	if !strings.EqualFold(labels[0], host) {
		return false
	}
	if len(labels) > 1 && p.Spec.Subdomain != "" && !strings.EqualFold(labels[1], p.Spec.Subdomain) {
		return false
	}
	return len(labels) < 3 || strings.EqualFold(labels[2], p.Namespace)
}

// ownerWarnings lists, one line per reason, the members never evicted and why (NotEvictable).
func (c *Cluster) ownerWarnings() []string {
	byWhy := map[string][]string{}
	var whys []string
	for _, mem := range c.Members {
		why := mem.NotEvictable()
		if why == "" {
			continue
		}
		if _, ok := byWhy[why]; !ok {
			whys = append(whys, why)
		}
		byWhy[why] = append(byWhy[why], mem.Pod.Name)
	}
	out := make([]string, 0, len(whys))
	for _, why := range whys {
		pods := byWhy[why]
		sort.Strings(pods)
		what := "pod " + pods[0] + " is"
		if len(pods) > 1 {
			what = "pods " + strings.Join(pods, ", ") + " are"
		}
		out = append(out, fmt.Sprintf("%s never evicted: %s", what, why))
	}
	return out
}

// shortID returns a Redis node ID's first 8 characters, as the warnings and shard names show it.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
