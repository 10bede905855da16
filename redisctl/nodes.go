package redisctl

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// NumSlots is the number of hash slots of a Redis Cluster.
const NumSlots = 16384

// Node flags as printed by CLUSTER NODES (https://redis.io/commands/cluster-nodes/).
const (
	FlagMyself     = "myself"     // the line of the node that answered
	FlagMaster     = "master"     // a master (with or without slots)
	FlagReplica    = "slave"      // a replica: Redis prints replicas as "slave"
	FlagPFail      = "fail?"      // PFAIL: the reporting node cannot reach it, not yet agreed
	FlagFail       = "fail"       // FAIL: a majority of masters agreed it is unreachable
	FlagHandshake  = "handshake"  // met, but the first PING/PONG exchange is not done
	FlagNoAddr     = "noaddr"     // address unknown
	FlagNoFailover = "nofailover" // a replica with cluster-replica-no-failover yes
)

// KnownFlags are the flags CLUSTER NODES prints (Redis 3 to 7; a node without any is printed
// "noflags"): CheckClusterNodes refuses any other.
var KnownFlags = []string{FlagMyself, FlagMaster, FlagReplica, FlagPFail, FlagFail, FlagHandshake, FlagNoAddr, FlagNoFailover}

// Link states as printed by CLUSTER NODES.
const (
	LinkConnected    = "connected"    // the reporting node's cluster bus link to it is up
	LinkDisconnected = "disconnected" // that link is down
)

// SlotRange is an inclusive range of hash slots, Start ≤ End, both in [0, 16383].
type SlotRange struct {
	Start, End int
}

// Len returns the number of slots in r.
func (r SlotRange) Len() int { return r.End - r.Start + 1 }

// String formats r as CLUSTER NODES does: "N" for a single slot, "N-M" otherwise.
func (r SlotRange) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// SlotMove is an open slot migration as shown on the line of the node that has it open:
// "[slot->-id]" (migrating to NodeID) or "[slot-<-id]" (importing from NodeID).
type SlotMove struct {
	Slot   int
	NodeID string
}

// Node is one line of CLUSTER NODES, the view one node has of one cluster member.
// See https://redis.io/commands/cluster-nodes/ for the meaning of each field.
type Node struct {
	// ID is the 40-character node ID.
	ID string
	// IP and Port are the client address; IP is empty for a node with flag noaddr (":0"). A
	// Client reports a node announced at an alias at its pod's address instead (see "Announced
	// addresses" in announce.go).
	IP   string
	Port int
	// BusPort is the cluster bus port (after '@'); 0 when the line has none (Redis < 4).
	BusPort int
	// Announced is the "ip:port" the node announces when a Client put its pod's address in IP
	// and Port ("" when IP and Port are what Redis printed).
	Announced string
	// Hostname is the announced hostname after ',' (Redis 7), empty when none.
	Hostname string
	// AddrExtra keeps further comma-separated address fields (later Redis versions), verbatim.
	AddrExtra []string
	// Flags are the comma-separated flags ("noflags" is parsed as none).
	Flags []string
	// MasterID is the ID of the master of a replica; empty for a master ("-").
	MasterID string
	// PingSent and PongRecv are millisecond Unix times (0 when none pending / never).
	PingSent, PongRecv int64
	// ConfigEpoch is the node's config epoch (for a replica, its master's).
	ConfigEpoch uint64
	// LinkState is LinkConnected or LinkDisconnected: the state of the reporting node's link
	// to this node.
	LinkState string
	// Slots are the slot ranges this node serves, in the order printed.
	Slots []SlotRange
	// Migrating and Importing are open slot migrations; Redis shows them only on the "myself"
	// line of the node that has them open.
	Migrating []SlotMove
	Importing []SlotMove
}

// Addr returns "IP:Port", the address clients use, or "" for a node without address.
func (n Node) Addr() string {
	if n.IP == "" {
		return ""
	}
	return net.JoinHostPort(n.IP, strconv.Itoa(n.Port))
}

// HasFlag reports whether n has flag f (one of the Flag constants).
func (n Node) HasFlag(f string) bool {
	for _, g := range n.Flags {
		if g == f {
			return true
		}
	}
	return false
}

// IsMaster reports whether n has the master flag.
func (n Node) IsMaster() bool { return n.HasFlag(FlagMaster) }

// IsReplica reports whether n has the slave (replica) flag.
func (n Node) IsReplica() bool { return n.HasFlag(FlagReplica) }

// IsMyself reports whether the line is the reporting node itself.
func (n Node) IsMyself() bool { return n.HasFlag(FlagMyself) }

// IsFailing reports whether n is flagged fail or fail? (PFAIL).
func (n Node) IsFailing() bool { return n.HasFlag(FlagFail) || n.HasFlag(FlagPFail) }

// IsUsable reports whether n has an address and has completed the handshake.
func (n Node) IsUsable() bool {
	return n.IP != "" && !n.HasFlag(FlagHandshake) && !n.HasFlag(FlagNoAddr)
}

// Role returns "master", "replica", or "" for a node with neither flag.
func (n Node) Role() string {
	switch {
	case n.IsMaster():
		return "master"
	case n.IsReplica():
		return "replica"
	}
	return ""
}

// SlotCount returns the number of slots n serves.
func (n Node) SlotCount() int {
	c := 0
	for _, r := range n.Slots {
		c += r.Len()
	}
	return c
}

// String formats n as one CLUSTER NODES line (without newline); ParseClusterNodes reads it back.
func (n Node) String() string {
	var b strings.Builder
	b.WriteString(n.ID)
	b.WriteByte(' ')
	b.WriteString(n.IP)
	b.WriteByte(':')
	b.WriteString(strconv.Itoa(n.Port))
	if n.BusPort != 0 || n.Hostname != "" || len(n.AddrExtra) > 0 {
		b.WriteByte('@')
		b.WriteString(strconv.Itoa(n.BusPort))
	}
	if n.Hostname != "" || len(n.AddrExtra) > 0 {
		b.WriteByte(',')
		b.WriteString(n.Hostname)
		for _, e := range n.AddrExtra {
			b.WriteByte(',')
			b.WriteString(e)
		}
	}
	b.WriteByte(' ')
	if len(n.Flags) == 0 {
		b.WriteString("noflags")
	} else {
		b.WriteString(strings.Join(n.Flags, ","))
	}
	b.WriteByte(' ')
	if n.MasterID == "" {
		b.WriteByte('-')
	} else {
		b.WriteString(n.MasterID)
	}
	fmt.Fprintf(&b, " %d %d %d %s", n.PingSent, n.PongRecv, n.ConfigEpoch, n.LinkState)
	for _, r := range n.Slots {
		b.WriteByte(' ')
		b.WriteString(r.String())
	}
	for _, m := range n.Migrating {
		fmt.Fprintf(&b, " [%d->-%s]", m.Slot, m.NodeID)
	}
	for _, m := range n.Importing {
		fmt.Fprintf(&b, " [%d-<-%s]", m.Slot, m.NodeID)
	}
	return b.String()
}

// ParseClusterNodes parses the reply of CLUSTER NODES (Redis 3 to 7): one node per line,
// "<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch>
// <link-state> <slot>...", as documented at https://redis.io/commands/cluster-nodes/.
// Empty lines are skipped. It returns an error naming the first malformed line: too few fields,
// a node ID that is not IDLength hexadecimal characters, a bad address, port, number, link state
// or slot. It judges each line alone and keeps flags it does not know, so that a live reply of a
// later Redis still reads; CheckClusterNodes judges a reply as a whole (files given by hand).
func ParseClusterNodes(text string) ([]Node, error) {
	nodes, err := parseClusterNodes(text)
	if err != nil {
		return nil, fmt.Errorf("redisctl: CLUSTER NODES %w", err)
	}
	return nodes, nil
}

func parseClusterNodes(text string) ([]Node, error) {
	var nodes []Node
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		n, err := parseNodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func parseNodeLine(line string) (Node, error) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return Node{}, fmt.Errorf("%d fields, want at least 8", len(f))
	}
	n := Node{ID: f[0], LinkState: f[7]}
	if !validID(n.ID) {
		return Node{}, idError("bad node id", n.ID)
	}
	if err := parseNodeAddr(f[1], &n); err != nil {
		return Node{}, err
	}
	if f[2] != "noflags" {
		for _, fl := range strings.Split(f[2], ",") {
			if fl == "" {
				return Node{}, fmt.Errorf("empty flag in %q", f[2])
			}
			n.Flags = append(n.Flags, fl)
		}
	}
	if f[3] != "-" {
		if !validID(f[3]) {
			return Node{}, idError("bad master id", f[3])
		}
		n.MasterID = f[3]
	}
	var err error
	if n.PingSent, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return Node{}, fmt.Errorf("ping-sent %q: %w", f[4], err)
	}
	if n.PongRecv, err = strconv.ParseInt(f[5], 10, 64); err != nil {
		return Node{}, fmt.Errorf("pong-recv %q: %w", f[5], err)
	}
	if n.ConfigEpoch, err = strconv.ParseUint(f[6], 10, 64); err != nil {
		return Node{}, fmt.Errorf("config-epoch %q: %w", f[6], err)
	}
	if n.LinkState != LinkConnected && n.LinkState != LinkDisconnected {
		return Node{}, fmt.Errorf("link-state %q", n.LinkState)
	}
	for _, s := range f[8:] {
		if err := parseSlotField(s, &n); err != nil {
			return Node{}, err
		}
	}
	return n, nil
}

// IDLength is the length of a Redis Cluster node ID: 40 hexadecimal characters (CLUSTER_NAMELEN;
// Redis draws them in lowercase and prints them whole).
const IDLength = 40

// validID reports whether s is a node ID: IDLength hexadecimal digits.
func validID(s string) bool {
	if len(s) != IDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// idError says what is wrong with a node ID that is not validID.
func idError(what, s string) error {
	return fmt.Errorf("%s %q: a node ID is %d hexadecimal characters", what, s, IDLength)
}

// parseNodeAddr parses "ip:port", "ip:port@cport" and "ip:port@cport,hostname[,extra...]".
// IPv6 addresses are printed without brackets, so the port is after the last ':'.
func parseNodeAddr(s string, n *Node) error {
	addr := s
	if i := strings.IndexByte(addr, ','); i >= 0 {
		extra := strings.Split(addr[i+1:], ",")
		addr = addr[:i]
		n.Hostname = extra[0]
		if len(extra) > 1 {
			n.AddrExtra = extra[1:]
		}
	}
	if i := strings.IndexByte(addr, '@'); i >= 0 {
		bp, err := parsePort(addr[i+1:])
		if err != nil {
			return fmt.Errorf("address %q: bus port: %w", s, err)
		}
		n.BusPort = bp
		addr = addr[:i]
	}
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return fmt.Errorf("address %q: no port", s)
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr[:i], "["), "]")
	port, err := parsePort(addr[i+1:])
	if err != nil {
		return fmt.Errorf("address %q: port: %w", s, err)
	}
	if strings.ContainsAny(host, " []@,") {
		return fmt.Errorf("address %q: bad host", s)
	}
	n.IP, n.Port = host, port
	return nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if p < 0 || p > 65535 {
		return 0, fmt.Errorf("%d out of range", p)
	}
	if strconv.Itoa(p) != s {
		return 0, fmt.Errorf("%q not canonical", s)
	}
	return p, nil
}

// parseSlotField parses "N", "N-M", "[N->-id]" or "[N-<-id]".
func parseSlotField(s string, n *Node) error {
	if strings.HasPrefix(s, "[") {
		if !strings.HasSuffix(s, "]") {
			return fmt.Errorf("slot %q: unterminated", s)
		}
		body := s[1 : len(s)-1]
		var sep string
		switch {
		case strings.Contains(body, "->-"):
			sep = "->-"
		case strings.Contains(body, "-<-"):
			sep = "-<-"
		default:
			return fmt.Errorf("slot %q: neither migrating nor importing", s)
		}
		i := strings.Index(body, sep)
		slot, err := parseSlot(body[:i])
		if err != nil {
			return fmt.Errorf("slot %q: %w", s, err)
		}
		id := body[i+len(sep):]
		if !validID(id) {
			return idError(fmt.Sprintf("slot %q: bad node id", s), id)
		}
		if sep == "->-" {
			n.Migrating = append(n.Migrating, SlotMove{Slot: slot, NodeID: id})
		} else {
			n.Importing = append(n.Importing, SlotMove{Slot: slot, NodeID: id})
		}
		return nil
	}
	lo, hi, found := strings.Cut(s, "-")
	start, err := parseSlot(lo)
	if err != nil {
		return fmt.Errorf("slot %q: %w", s, err)
	}
	end := start
	if found {
		if end, err = parseSlot(hi); err != nil {
			return fmt.Errorf("slot %q: %w", s, err)
		}
		if end < start {
			return fmt.Errorf("slot %q: end before start", s)
		}
	}
	n.Slots = append(n.Slots, SlotRange{Start: start, End: end})
	return nil
}

func parseSlot(s string) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, err
	}
	if v < 0 || v >= NumSlots || strconv.Itoa(v) != s {
		return 0, fmt.Errorf("slot %q out of range", s)
	}
	return v, nil
}

// CheckClusterNodes refuses what no node's CLUSTER NODES reply holds, every problem at once,
// each naming its line (a node's place among the reply's lines, 1-based): a node ID listed twice,
// more than one myself line, a flag not in KnownFlags, a node flagged both master and slave, a
// master with a master ID, a replica of itself or of a node the reply does not list, and a slot
// that two masters (or one master twice) serve. A replica whose master Redis does not know yet
// ("-") is accepted, as Redis prints it. The --redis-nodes files go through it (observe's
// LoadRedisNodes).
func CheckClusterNodes(nodes []Node) error {
	var errs []error
	line := map[string]int{}
	myself := 0
	for i, n := range nodes {
		at := i + 1
		if prev, ok := line[n.ID]; ok {
			errs = append(errs, fmt.Errorf("node %s on lines %d and %d: a node ID is listed once", n.ID, prev, at))
		} else {
			line[n.ID] = at
		}
		for _, f := range n.Flags {
			if !slices.Contains(KnownFlags, f) {
				errs = append(errs, fmt.Errorf("line %d: node %s: unknown flag %q: Redis prints %s, or noflags", at, n.ID, f, strings.Join(KnownFlags, ", ")))
			}
		}
		if n.IsMyself() {
			if myself > 0 {
				errs = append(errs, fmt.Errorf("line %d: node %s: a second myself line (the first on line %d): a reply is one node's view; give each Redis cluster's reply from one node", at, n.ID, myself))
			} else {
				myself = at
			}
		}
		switch {
		case n.IsMaster() && n.IsReplica():
			errs = append(errs, fmt.Errorf("line %d: node %s: flagged both master and slave", at, n.ID))
		case n.MasterID == n.ID:
			errs = append(errs, fmt.Errorf("line %d: node %s: a replica of itself", at, n.ID))
		case n.IsMaster() && n.MasterID != "":
			errs = append(errs, fmt.Errorf("line %d: node %s: a master with a master ID (%s): a master's is \"-\"", at, n.ID, n.MasterID))
		}
	}
	for i, n := range nodes {
		if _, ok := line[n.MasterID]; n.MasterID != "" && n.MasterID != n.ID && !ok {
			errs = append(errs, fmt.Errorf("line %d: node %s: a replica of %s, which no line lists", i+1, n.ID, n.MasterID))
		}
	}
	type served struct {
		r    SlotRange
		line int
		id   string
	}
	var ranges []served
	for i, n := range nodes {
		for _, r := range n.Slots {
			ranges = append(ranges, served{r, i + 1, n.ID})
		}
	}
	slices.SortFunc(ranges, func(a, b served) int { return a.r.Start - b.r.Start })
	var reach served // of the ranges before b, the one that reaches furthest
	for i, b := range ranges {
		if i > 0 && b.r.Start <= reach.r.End {
			errs = append(errs, fmt.Errorf("slots %d-%d (line %d, node %s) and %d-%d (line %d, node %s) overlap: a slot is served by one master", reach.r.Start, reach.r.End, reach.line, reach.id, b.r.Start, b.r.End, b.line, b.id))
		}
		if i == 0 || b.r.End > reach.r.End {
			reach = b
		}
	}
	return errors.Join(errs...)
}
