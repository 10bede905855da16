package observe

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// MaxRedisNodesBytes is the largest CLUSTER NODES file LoadRedisNodes reads (16 MiB): a reply
// of a thousand nodes (Redis's own advised limit) with every slot listed on its own and open
// migrations is under 2 MB, so a larger file is not one (a wrong file, /dev/zero) and is refused
// before it is held in memory.
const MaxRedisNodesBytes = 16 << 20

// LoadRedisNodes reads the CLUSTER NODES files at path: one file, or every regular file of a
// directory (not its subdirectories, nor hidden files). It returns the nodes by cluster key
// ("namespace/name"). A file whose name is not "<namespace>_<cluster>[.ext]", two files for one
// cluster, a file larger than MaxRedisNodesBytes, a file that does not parse as CLUSTER NODES
// output, or one that no Redis prints (redisctl.CheckClusterNodes: a node ID twice, two myself
// lines, an unknown flag, a replica of itself or of a node not listed, a master with a master ID,
// a slot served by two masters) is an error naming the file.
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
		data, err := readLimited(f, MaxRedisNodesBytes)
		if err != nil {
			return nil, fmt.Errorf("redis nodes %s: %w", f, err)
		}
		nodes, err := redisctl.ParseClusterNodes(string(data))
		if err != nil {
			return nil, fmt.Errorf("redis nodes %s: %w", f, err)
		}
		if len(nodes) == 0 {
			return nil, fmt.Errorf("redis nodes %s: no node", f)
		}
		if err := redisctl.CheckClusterNodes(nodes); err != nil {
			return nil, fmt.Errorf("redis nodes %s: %w", f, err)
		}
		topo := redisctl.MergeViews([]redisctl.View{{Addr: f, Nodes: nodes}})
		out[key], from[key] = RedisNodes(topo.Nodes), f
	}
	return out, nil
}

// readLimited reads the file at path, or refuses it once it holds more than limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d MiB, the most a CLUSTER NODES file may hold: is it the right file?", limit>>20)
	}
	return data, nil
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
