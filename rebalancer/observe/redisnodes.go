package observe

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// Offline, Redis's view of a cluster comes from files: what `redis-cli -h <any node> cluster
// nodes` prints, one file per Redis cluster, named after the cluster it belongs to:
// "<namespace>_<cluster>" (the cluster label's value) with any extension, such as
// "redis_my-release.txt". The underscore cannot occur in a namespace, so the name splits one way.
// A plan made from a snapshot and these files is the plan `run` would make live from the same
// state: the roles and the shards come from the same lines, read by the same code
// (policies.Cluster.ApplyRedis).

// RedisNodesFile is the name LoadRedisNodes expects for cluster namespace/name's file, without
// extension.
func RedisNodesFile(namespace, name string) string { return namespace + "_" + name }

// LoadRedisNodes reads the CLUSTER NODES files at path: one file, or every regular file of a
// directory (not its subdirectories, nor hidden files). It returns the nodes by cluster key
// ("namespace/name"). A file whose name is not "<namespace>_<cluster>[.ext]", two files for one
// cluster, a file that does not parse as CLUSTER NODES output, or one that no Redis prints (a node
// ID twice, a slot served by two masters: checkRedisNodes) is an error naming the file.
func LoadRedisNodes(path string) (map[string][]policies.RedisNode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("redis nodes: %w", err)
	}
	files := []string{path}
	if fi.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("redis nodes: %w", err)
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("redis nodes: directory %s holds no file", path)
		}
	}
	out := map[string][]policies.RedisNode{}
	from := map[string]string{}
	for _, f := range files {
		key, err := clusterOfFile(filepath.Base(f))
		if err != nil {
			return nil, fmt.Errorf("redis nodes %s: %w", f, err)
		}
		if prev, ok := from[key]; ok {
			return nil, fmt.Errorf("redis nodes %s: cluster %s already read from %s", f, key, prev)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("redis nodes: %w", err)
		}
		nodes, err := redisctl.ParseClusterNodes(string(data))
		if err != nil {
			return nil, fmt.Errorf("redis nodes %s: %w", f, err)
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("redis nodes %s: no node", f)
		}
		if err := checkRedisNodes(nodes); err != nil {
			return nil, fmt.Errorf("redis nodes %s: %w", f, err)
		}
		topo := redisctl.MergeViews([]redisctl.View{{Addr: f, Nodes: nodes}})
		out[key], from[key] = RedisNodes(topo.Nodes), f
	}
	return out, nil
}

// checkRedisNodes refuses what one node's CLUSTER NODES never prints: a node ID on two lines, and
// a slot that two masters (or one master twice) serve. Each error names the lines.
func checkRedisNodes(nodes []redisctl.Node) error {
	var errs []error
	line := map[string]int{}
	for i, n := range nodes {
		if prev, ok := line[n.ID]; ok {
			errs = append(errs, fmt.Errorf("node %s on lines %d and %d: a node ID is listed once", n.ID, prev, i+1))
			continue
		}
		line[n.ID] = i + 1
	}
	type served struct {
		r    redisctl.SlotRange
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

// clusterOfFile reads "<namespace>_<cluster>[.ext]" into "namespace/cluster".
func clusterOfFile(name string) (string, error) {
	ns, rest, ok := strings.Cut(name, "_")
	cluster := strings.TrimSuffix(rest, filepath.Ext(rest))
	if !ok || cluster == "" {
		return "", fmt.Errorf("the file name must be <namespace>_<cluster>[.ext], the cluster being its cluster label's value")
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return "", fmt.Errorf("namespace %q of the file name: %s", ns, strings.Join(msgs, "; "))
	}
	return ns + "/" + cluster, nil
}

// ApplyRedisNodes applies the nodes of each cluster of m that byCluster has (LoadRedisNodes) to
// it (policies.Cluster.ApplyRedis), and returns the cluster keys of byCluster that m has no
// cluster for (a file for a cluster the selection left out, or misnamed), sorted.
func ApplyRedisNodes(m *policies.Model, byCluster map[string][]policies.RedisNode) (unused []string) {
	used := map[string]bool{}
	for _, c := range m.Clusters {
		if nodes, ok := byCluster[c.Key()]; ok {
			c.ApplyRedis(nodes)
			used[c.Key()] = true
		}
	}
	for k := range byCluster {
		if !used[k] {
			unused = append(unused, k)
		}
	}
	sort.Strings(unused)
	return unused
}
