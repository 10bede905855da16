package redisctl

import (
	"sort"
	"strconv"
	"strings"
)

// Info is a parsed INFO (or CLUSTER INFO) reply: section name (lower case, "" before the first
// "# Section" header) → field → value. See https://redis.io/commands/info/.
type Info map[string]map[string]string

// ParseInfo parses the reply of INFO or CLUSTER INFO: "# Section" headers and "field:value"
// lines; the value is everything after the first ':'. Lines without ':' are ignored, so the
// parser accepts any text; it never fails.
func ParseInfo(text string) Info {
	info := Info{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasPrefix(line, "#") {
			section = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(line, "#")))
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			continue
		}
		s := info[section]
		if s == nil {
			s = map[string]string{}
			info[section] = s
		}
		s[k] = v
	}
	return info
}

// Get returns the value of field key from any section (fields are unique across sections in
// Redis' INFO), looking at sections in name order.
func (i Info) Get(key string) (string, bool) {
	names := make([]string, 0, len(i))
	for name := range i {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if v, ok := i[name][key]; ok {
			return v, true
		}
	}
	return "", false
}

// Int returns field key as an integer, or def when it is missing or not a number.
func (i Info) Int(key string, def int64) int64 {
	v, ok := i.Get(key)
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return def
	}
	return n
}

// Roles reported in INFO replication's "role" field.
const (
	RoleMaster  = "master"
	RoleReplica = "slave"
)

// Replication is the typed content of INFO replication (Redis 6 and 7), as documented at
// https://redis.io/commands/info/. Numeric fields missing from the reply are -1.
type Replication struct {
	// Role is "master" or "slave", as Redis prints it.
	Role string
	// MasterHost and MasterPort are the replica's master (replicas only).
	MasterHost string
	MasterPort int
	// MasterLinkStatus is "up" or "down" (replicas only).
	MasterLinkStatus string
	// MasterLastIOSecondsAgo is the number of seconds since the replica last heard from its
	// master; -1 when the link is down or on a master.
	MasterLastIOSecondsAgo int
	// MasterSyncInProgress is true while the replica loads a full sync from its master.
	MasterSyncInProgress bool
	// MasterSyncTotalBytes and MasterSyncReadBytes are master_sync_total_bytes (-1 with a
	// diskless sync, whose size is not known in advance) and master_sync_read_bytes: the size of
	// the snapshot a replica receives in a full sync and how much of it has arrived (-1 when
	// absent: no sync in progress).
	MasterSyncTotalBytes, MasterSyncReadBytes int64
	// MasterLinkDownSinceSeconds is how long the link has been down (-1 when up or unknown).
	MasterLinkDownSinceSeconds int
	// ReplicaReplOffset is slave_repl_offset: the replication offset the replica has applied.
	ReplicaReplOffset int64
	// ReplicaReadReplOffset is slave_read_repl_offset (Redis 7): what it has read, applied or
	// not.
	ReplicaReadReplOffset int64
	// MasterReplOffset is master_repl_offset: on a master, the offset of its replication
	// stream; on a replica, the offset it has processed.
	MasterReplOffset int64
	// ConnectedReplicas is connected_slaves.
	ConnectedReplicas int
	// Replicas are the slaveN lines of a master, in N order.
	Replicas []ReplicaEntry
	// MasterFailoverState is master_failover_state (Redis 6.2+, FAILOVER command), "" when absent.
	MasterFailoverState string
}

// ReplicaEntry is one "slaveN:ip=...,port=...,state=...,offset=...,lag=..." line of a master's
// INFO replication. IP is what the replica announces (replica-announce-ip) or the source
// address of its connection.
type ReplicaEntry struct {
	IP    string
	Port  int
	State string // "online" once synced; "wait_bgsave", "send_bulk", ... while syncing
	// Offset is the replication offset the replica last acknowledged (REPLCONF ACK, every second).
	Offset int64
	// Lag is the number of seconds since that acknowledgement.
	Lag int64
}

// IsMaster reports whether Role is "master".
func (r Replication) IsMaster() bool { return r.Role == RoleMaster }

// IsReplica reports whether Role is "slave".
func (r Replication) IsReplica() bool { return r.Role == RoleReplica }

// Replication returns the typed INFO replication fields (Redis 6 and 7 names). It never fails;
// fields missing from i keep their "unknown" value (-1 or "").
func (i Info) Replication() Replication {
	r := Replication{
		MasterLastIOSecondsAgo:     -1,
		MasterLinkDownSinceSeconds: -1,
		ReplicaReplOffset:          -1,
		ReplicaReadReplOffset:      -1,
		MasterReplOffset:           -1,
		MasterPort:                 -1,
		ConnectedReplicas:          -1,
	}
	s := i["replication"]
	if s == nil {
		s = i[""]
	}
	get := func(k string) (string, bool) {
		v, ok := s[k]
		return strings.TrimSpace(v), ok
	}
	num := func(k string, def int64) int64 {
		v, ok := get(k)
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return def
		}
		return n
	}
	r.Role, _ = get("role")
	r.MasterHost, _ = get("master_host")
	r.MasterPort = int(num("master_port", -1))
	r.MasterLinkStatus, _ = get("master_link_status")
	r.MasterLastIOSecondsAgo = int(num("master_last_io_seconds_ago", -1))
	r.MasterSyncInProgress = num("master_sync_in_progress", 0) == 1
	r.MasterSyncTotalBytes = num("master_sync_total_bytes", -1)
	r.MasterSyncReadBytes = num("master_sync_read_bytes", -1)
	r.MasterLinkDownSinceSeconds = int(num("master_link_down_since_seconds", -1))
	r.ReplicaReplOffset = num("slave_repl_offset", -1)
	r.ReplicaReadReplOffset = num("slave_read_repl_offset", -1)
	r.MasterReplOffset = num("master_repl_offset", -1)
	r.ConnectedReplicas = int(num("connected_slaves", -1))
	r.MasterFailoverState, _ = get("master_failover_state")

	type indexed struct {
		n int
		e ReplicaEntry
	}
	var entries []indexed
	for k, v := range s {
		if !strings.HasPrefix(k, "slave") {
			continue
		}
		n, err := strconv.Atoi(k[len("slave"):])
		if err != nil || n < 0 {
			continue
		}
		entries = append(entries, indexed{n, parseReplicaEntry(v)})
	}
	sort.Slice(entries, func(a, b int) bool { return entries[a].n < entries[b].n })
	for _, e := range entries {
		r.Replicas = append(r.Replicas, e.e)
	}
	return r
}

func parseReplicaEntry(v string) ReplicaEntry {
	e := ReplicaEntry{Port: -1, Offset: -1, Lag: -1}
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "ip":
			e.IP = val
		case "port":
			if p, err := strconv.Atoi(val); err == nil {
				e.Port = p
			}
		case "state":
			e.State = val
		case "offset":
			if o, err := strconv.ParseInt(val, 10, 64); err == nil {
				e.Offset = o
			}
		case "lag":
			if l, err := strconv.ParseInt(val, 10, 64); err == nil {
				e.Lag = l
			}
		}
	}
	return e
}

// ClusterState returns CLUSTER INFO's cluster_state ("ok" or "fail"), "" when absent.
func (i Info) ClusterState() string {
	v, _ := i.Get("cluster_state")
	return strings.TrimSpace(v)
}
