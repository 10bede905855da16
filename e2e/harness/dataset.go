package harness

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/redisctl"
)

// datasetValueSize is the size of each value a realistic bed fills its masters with: random
// bytes, so that neither RDB compression nor the append-only file makes a resync cheaper than on
// a real dataset.
const datasetValueSize = 64 << 10

// DatasetKeyPrefix starts the keys a realistic bed fills its masters with ("dataset{<tag>}:<i>"),
// so that a test's own keys never collide with them.
const DatasetKeyPrefix = "dataset"

// Dataset is what a realistic bed wrote into one master of an environment when it was set up.
type Dataset struct {
	// Master is the master's Redis address as the cluster was formed; Bytes the value bytes
	// written to it, Keys the keys.
	Master string
	Bytes  int64
	Keys   int
}

// Datasets returns what a realistic bed filled the environment's masters with (nil otherwise).
func (e *Env) Datasets() []Dataset { return slices.Clone(e.datasets) }

// fillDataset fills every master of the environment's Redis Cluster with a seeded random number
// of bytes between the profile's DatasetMin and DatasetMax (values of datasetValueSize random
// bytes, all in one slot of the master, a hash tag found with CLUSTER KEYSLOT), then waits until
// every replica has them (the health gate: every master with an in-sync replica).
func (e *Env) fillDataset(ctx context.Context) error {
	r := *e.Bed.Realistic
	start := time.Now()
	topo, err := e.Redis.Topology(ctx, e.Addrs())
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	client, err := redisctl.NewClusterClient(e.RedisOptions, e.Addrs())
	if err != nil {
		return fmt.Errorf("dataset: %w", err)
	}
	defer client.Close()
	masters := topo.Masters()
	slices.SortFunc(masters, func(a, b redisctl.Node) int { return a.Slots[0].Start - b.Slots[0].Start })
	h := fnv.New64a()
	h.Write([]byte(e.Namespace))
	rng := rand.New(rand.NewPCG(r.Seed, h.Sum64()))
	var seed [32]byte
	for i := range 4 {
		v := rng.Uint64()
		for b := range 8 {
			seed[8*i+b] = byte(v >> (8 * b))
		}
	}
	bytes := rand.NewChaCha8(seed)
	value := make([]byte, datasetValueSize)
	var total int64
	for _, m := range masters {
		if len(m.Slots) == 0 {
			continue
		}
		tag, err := e.tagIn(ctx, m)
		if err != nil {
			return fmt.Errorf("dataset: %w", err)
		}
		size := r.DatasetMin + rng.Int64N(r.DatasetMax-r.DatasetMin+1)
		keys := int((size + datasetValueSize - 1) / datasetValueSize)
		for i := 0; i < keys; i += 16 {
			pipe := client.Pipeline()
			for j := i; j < min(i+16, keys); j++ {
				_, _ = bytes.Read(value)
				pipe.Set(ctx, DatasetKeyPrefix+"{"+tag+"}:"+strconv.Itoa(j), value, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return fmt.Errorf("dataset: fill %s: %w", m.Addr(), err)
			}
		}
		e.datasets = append(e.datasets, Dataset{Master: m.Addr(), Bytes: int64(keys) * datasetValueSize, Keys: keys})
		total += int64(keys) * datasetValueSize
	}
	if _, err := e.WaitHealthy(ctx, 5*time.Minute); err != nil {
		return fmt.Errorf("dataset: replicas not in sync after the fill: %w", err)
	}
	e.logf("dataset: %d MiB over %d masters (%d–%d MiB each) in %s", total>>20, len(e.datasets), r.DatasetMin>>20, r.DatasetMax>>20, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// tagIn returns a hash tag whose slot master m serves (CLUSTER KEYSLOT asked of m).
func (e *Env) tagIn(ctx context.Context, m redisctl.Node) (string, error) {
	for i := range 100000 {
		tag := "fill-" + strconv.Itoa(i)
		reply, err := e.Redis.Do(ctx, m.Addr(), "CLUSTER", "KEYSLOT", tag)
		if err != nil {
			return "", err
		}
		slot, ok := reply.(int64)
		if !ok {
			return "", fmt.Errorf("CLUSTER KEYSLOT %s: %v", tag, reply)
		}
		for _, r := range m.Slots {
			if int(slot) >= r.Start && int(slot) <= r.End {
				return tag, nil
			}
		}
	}
	return "", fmt.Errorf("no hash tag found in the slots of %s", m.Addr())
}
