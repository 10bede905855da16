package bench

// The check command's memory and time on the scale benchmark's snapshot, read the two ways a user
// reads it: live, from an API server that serves the objects in pages as
// kube-apiserver does, and offline, from the `kubectl get ... -o yaml` (and -o json) dump of the
// same objects. Each iteration runs the real command in this process, `redis-rebalancer check
// --role-label ... -o json`, so what is measured is the command's own path: the paged LISTs or
// the streamed dump, the trimming, the model, every rule and the JSON output. The peak heap
// counts everything the command holds.
//
// The objects come from test/synth (ConfigFromEnv), dressed as kube-apiserver returns them
// (decorate: defaulted fields, managedFields, container statuses, the service-account volume,
// node images), because that is what a live read and a kubectl dump carry. A child process (this
// test binary, started by startSnapshotServer) generates them, serves them and writes the dumps,
// so this process's heap holds only what `check` holds.
//
//	go test -run '^$' -bench 'Check' -benchtime 1x ./bench                           # 5,000 nodes
//	REBALANCER_BENCH_SCALE=0.2 go test -run '^$' -bench 'Check' -benchtime 3x ./bench  # 1,000 nodes

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/redis-rebalancer/redis-rebalancer/cmd/redis-rebalancer/app"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/proc"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
	"github.com/redis-rebalancer/redis-rebalancer/test/synth"
)

// snapshotServerEnv, when set in a process of this test binary, makes TestMain serve the
// snapshot instead of running tests: its value is a directory for the server's address file and
// the dumps.
const snapshotServerEnv = "REBALANCER_BENCH_SNAPSHOT_SERVER"

// TestMain runs the tests, or, in the child startSnapshotServer starts, the snapshot server.
func TestMain(m *testing.M) {
	if dir := os.Getenv(snapshotServerEnv); dir != "" {
		if err := serveSnapshot(dir); err != nil {
			fmt.Fprintln(os.Stderr, "snapshot server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	serverStop()
	os.Exit(code)
}

var server struct {
	once sync.Once
	s    *snapshotServer
	err  error
}

// startSnapshotServer starts (once per test binary) the child that generates ConfigFromEnv's
// snapshot, serves it and writes the dumps, and waits until it is ready (at most 10 minutes).
// The child is stopped when the benchmarks end.
func startSnapshotServer(b *testing.B) *snapshotServer {
	b.Helper()
	server.once.Do(func() {
		dir, err := os.MkdirTemp("", "rebalancer-bench-check-")
		if err != nil {
			server.err = err
			return
		}
		p, err := proc.Start(proc.Spec{
			Name: "snapshot server", Path: os.Args[0], Args: []string{"-test.run=^$"},
			Env: []string{snapshotServerEnv + "=" + dir}, LogPath: filepath.Join(dir, "server.log"),
		})
		if err != nil {
			server.err = err
			return
		}
		ready := filepath.Join(dir, "ready.json")
		s := &snapshotServer{}
		err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
			if exited, err := p.Exited(); exited {
				return false, fmt.Errorf("snapshot server exited (%v): %s", err, p.LogTail(2000))
			}
			data, err := os.ReadFile(ready)
			if err != nil {
				return false, nil
			}
			return true, json.Unmarshal(data, s)
		})
		if err != nil {
			p.Stop(5 * time.Second)
			server.err = err
			return
		}
		serverStop = func() { p.Stop(5 * time.Second); os.RemoveAll(dir) }
		server.s = s
	})
	if server.err != nil {
		b.Fatal(server.err)
	}
	return server.s
}

// serverStop stops the child and removes its directory (TestMain calls it when the benchmarks
// end; PR_SET_PDEATHSIG stops the child should this process die first).
var serverStop = func() {}

// snapshotServer is what the child writes to ready.json once it serves: where to reach it, the
// dumps and their sizes, and what the snapshot holds.
type snapshotServer struct {
	Kubeconfig string   `json:"kubeconfig"`
	YAMLDump   string   `json:"yamlDump"`
	JSONDump   string   `json:"jsonDump"`
	DumpBytes  [2]int64 `json:"dumpBytes"`
	Clusters   int      `json:"clusters"`
	Stats      string   `json:"stats"`
}

// serveSnapshot is the child: it generates and decorates the snapshot, writes the dumps, serves
// the objects on a loopback port until killed, and writes ready.json.
func serveSnapshot(dir string) error {
	cfg, err := ConfigFromEnv()
	if err != nil {
		return err
	}
	snap, stats := synth.GenerateWithStats(cfg)
	decorate(snap)
	info := snapshotServer{Clusters: len(stats.Clusters), Stats: stats.String(), YAMLDump: filepath.Join(dir, "dump.yaml"), JSONDump: filepath.Join(dir, "dump.json")}
	items := kubectlOrder(snap)
	if info.DumpBytes[0], err = writeDump(info.YAMLDump, items, false); err != nil {
		return err
	}
	if info.DumpBytes[1], err = writeDump(info.JSONDump, items, true); err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	info.Kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: bench\n  cluster: {server: \"http://%s\"}\ncontexts:\n- name: bench\n  context: {cluster: bench, user: bench}\ncurrent-context: bench\nusers:\n- name: bench\n  user: {}\n", l.Addr())
	if err := os.WriteFile(info.Kubeconfig, []byte(kc), 0o600); err != nil {
		return err
	}
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready.json.tmp"), data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "ready.json.tmp"), filepath.Join(dir, "ready.json")); err != nil {
		return err
	}
	return http.Serve(l, listHandler(snap))
}

// listHandler serves LIST requests of the six resources check reads, paged by limit and
// continue as kube-apiserver pages them, in protobuf or JSON as the client accepts.
func listHandler(snap *policies.Snapshot) http.Handler {
	type resource struct {
		n    int
		list func(lo, hi int) runtime.Object
	}
	resources := map[string]resource{
		"/api/v1/nodes": {len(snap.Nodes), func(lo, hi int) runtime.Object {
			return &corev1.NodeList{Items: page(snap.Nodes, lo, hi)}
		}},
		"/api/v1/pods": {len(snap.Pods), func(lo, hi int) runtime.Object {
			return &corev1.PodList{Items: page(snap.Pods, lo, hi)}
		}},
		"/apis/apps/v1/statefulsets": {len(snap.StatefulSets), func(lo, hi int) runtime.Object {
			return &appsv1.StatefulSetList{Items: page(snap.StatefulSets, lo, hi)}
		}},
		"/apis/policy/v1/poddisruptionbudgets": {len(snap.PodDisruptionBudgets), func(lo, hi int) runtime.Object {
			return &policyv1.PodDisruptionBudgetList{Items: page(snap.PodDisruptionBudgets, lo, hi)}
		}},
		"/api/v1/persistentvolumeclaims":   {0, func(int, int) runtime.Object { return &corev1.PersistentVolumeClaimList{} }},
		"/api/v1/persistentvolumes":        {0, func(int, int) runtime.Object { return &corev1.PersistentVolumeList{} }},
		"/apis/storage.k8s.io/v1/csinodes": {0, func(int, int) runtime.Object { return &storagev1.CSINodeList{} }},
		"/api/v1/services":                 {0, func(int, int) runtime.Object { return &corev1.ServiceList{} }},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := resources[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		lo, _ := strconv.Atoi(q.Get("continue"))
		limit, _ := strconv.Atoi(q.Get("limit"))
		hi := res.n
		if limit > 0 && lo+limit < hi {
			hi = lo + limit
		}
		list := res.list(lo, hi)
		lm, _ := list.(metav1.ListInterface)
		lm.SetResourceVersion("1")
		if hi < res.n {
			lm.SetContinue(strconv.Itoa(hi))
		}
		mediaType := runtime.ContentTypeJSON
		if strings.Contains(r.Header.Get("Accept"), runtime.ContentTypeProtobuf) {
			mediaType = runtime.ContentTypeProtobuf
		}
		info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		gv := schema.GroupVersion{Version: "v1"}
		switch {
		case strings.HasPrefix(r.URL.Path, "/apis/apps/"):
			gv = appsv1.SchemeGroupVersion
		case strings.HasPrefix(r.URL.Path, "/apis/policy/"):
			gv = policyv1.SchemeGroupVersion
		}
		w.Header().Set("Content-Type", mediaType)
		if err := scheme.Codecs.EncoderForVersion(info.Serializer, gv).Encode(list, w); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// page returns copies of objs[lo:hi], a list's Items.
func page[T any](objs []*T, lo, hi int) []T {
	var out []T
	for _, o := range objs[lo:hi] {
		out = append(out, *o)
	}
	return out
}

// kubectlOrder returns the objects in the order `kubectl get nodes,pods,statefulsets,
// poddisruptionbudgets,pvc,pv,csinodes,services -A` prints them, with their kinds set (the
// snapshot has no claims, volumes, CSINodes or Services).
func kubectlOrder(snap *policies.Snapshot) []runtime.Object {
	var items []runtime.Object
	add := func(o runtime.Object, gvk schema.GroupVersionKind) {
		o.GetObjectKind().SetGroupVersionKind(gvk)
		items = append(items, o)
	}
	for _, o := range snap.Nodes {
		add(o, corev1.SchemeGroupVersion.WithKind("Node"))
	}
	for _, o := range snap.Pods {
		add(o, corev1.SchemeGroupVersion.WithKind("Pod"))
	}
	for _, o := range snap.StatefulSets {
		add(o, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))
	}
	for _, o := range snap.PodDisruptionBudgets {
		add(o, policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"))
	}
	return items
}

// writeDump writes items as kubectl prints a List: YAML (sigs.k8s.io/yaml, each item as a
// sequence entry at column 0, "kind: List" after the items) or indented JSON, without
// managedFields (kubectl's --show-managed-fields=false). It returns the file's size.
func writeDump(path string, items []runtime.Object, asJSON bool) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	if asJSON {
		fmt.Fprint(w, "{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n")
	} else {
		fmt.Fprint(w, "apiVersion: v1\nitems:\n")
	}
	for i, o := range items {
		o = o.DeepCopyObject()
		if m, err := meta.Accessor(o); err == nil {
			m.SetManagedFields(nil)
		}
		if asJSON {
			b, err := json.MarshalIndent(o, "        ", "    ")
			if err != nil {
				return 0, err
			}
			sep := ",\n"
			if i == len(items)-1 {
				sep = "\n"
			}
			fmt.Fprintf(w, "        %s%s", b, sep)
			continue
		}
		b, err := yaml.Marshal(o)
		if err != nil {
			return 0, err
		}
		for j, line := range bytes.SplitAfter(b, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			if j == 0 {
				w.WriteString("- ")
			} else {
				w.WriteString("  ")
			}
			w.Write(line)
		}
	}
	if asJSON {
		fmt.Fprint(w, "    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n")
	} else {
		fmt.Fprint(w, "kind: List\nmetadata:\n  resourceVersion: \"\"\n")
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// decorate dresses the generated objects as kube-apiserver returns them: the fields admission
// and defaulting set, managedFields (the controllers' and the kubelet's), pod IPs and container
// statuses, the projected service-account volume, node images, addresses and system info. None of
// it is read by the model.
func decorate(snap *policies.Snapshot) {
	started := metav1.NewTime(time.Date(2025, 6, 1, 0, 5, 0, 0, time.UTC))
	fields := func(manager, op string, n int) []metav1.ManagedFieldsEntry {
		var b strings.Builder
		b.WriteString(`{"f:metadata":{"f:labels":{".":{}},"f:ownerReferences":{".":{}}},"f:spec":{`)
		for i := range n {
			fmt.Fprintf(&b, `"f:field%d":{".":{},"f:name":{},"f:value":{}},`, i)
		}
		b.WriteString(`"f:x":{}}}`)
		return []metav1.ManagedFieldsEntry{{
			Manager: manager, Operation: metav1.ManagedFieldsOperationType(op), APIVersion: "v1", Time: &started,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(b.String())},
		}}
	}
	for i, n := range snap.Nodes {
		n.UID = types.UID(fmt.Sprintf("node-uid-%08d", i))
		n.ResourceVersion = strconv.Itoa(1000 + i)
		n.Annotations = map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
		n.ManagedFields = append(fields("kubelet", "Update", 12), fields("kube-controller-manager", "Update", 3)...)
		n.Spec.PodCIDR = fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
		n.Spec.ProviderID = "example://" + n.Name
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("192.168.%d.%d", i/256, i%256)}, {Type: corev1.NodeHostName, Address: n.Name}}
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
		n.Status.NodeInfo = corev1.NodeSystemInfo{MachineID: n.Name, SystemUUID: n.Name, BootID: n.Name, KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12", ContainerRuntimeVersion: "containerd://1.7.0", KubeletVersion: "v1.36.3", OperatingSystem: "linux", Architecture: "amd64"}
		for _, c := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: c, Status: corev1.ConditionFalse, Reason: "KubeletHas" + string(c), Message: "kubelet has no " + string(c), LastHeartbeatTime: started, LastTransitionTime: started})
		}
		for j := range 12 {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
				Names:     []string{fmt.Sprintf("registry.example/team-%d/image-%d@sha256:%064d", j, j, j), fmt.Sprintf("registry.example/team-%d/image-%d:v1.%d", j, j, j)},
				SizeBytes: int64(50+j) << 20,
			})
		}
	}
	for i, p := range snap.Pods {
		p.UID = types.UID(fmt.Sprintf("pod-uid-%08d", i))
		p.ResourceVersion = strconv.Itoa(100000 + i)
		p.GenerateName = p.Name[:len(p.Name)-1]
		p.ManagedFields = append(fields("kube-controller-manager", "Update", 5), fields("kubelet", "Update", 4)...)
		token := fmt.Sprintf("kube-api-access-%05d", i%100000)
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: token, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](420),
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
		}}})
		p.Spec.DNSPolicy, p.Spec.RestartPolicy, p.Spec.SchedulerName = corev1.DNSClusterFirst, corev1.RestartPolicyAlways, corev1.DefaultSchedulerName
		p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount = "default", "default"
		p.Spec.TerminationGracePeriodSeconds, p.Spec.EnableServiceLinks = ptr.To[int64](30), ptr.To(true)
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
		p.Spec.PreemptionPolicy, p.Spec.Priority = ptr.To(corev1.PreemptLowerPriority), ptr.To[int32](0)
		p.Spec.Tolerations = append(p.Spec.Tolerations,
			corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
		for j := range p.Spec.Containers {
			c := &p.Spec.Containers[j]
			if c.Image == "" {
				c.Image = "registry.example/redis:7.0.15"
			}
			c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy = corev1.PullIfNotPresent, "/dev/termination-log", corev1.TerminationMessageReadFile
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: "main", ContainerPort: 6379, Protocol: corev1.ProtocolTCP})
			c.Env = append(c.Env, corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: token, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
			c.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		}
		if p.Spec.NodeName == "" {
			continue
		}
		p.Status.HostIP = fmt.Sprintf("192.168.%d.%d", i%200, i%250)
		p.Status.HostIPs = []corev1.HostIP{{IP: p.Status.HostIP}}
		if p.Status.PodIP == "" {
			p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255)
		}
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		p.Status.StartTime, p.Status.QOSClass = &started, corev1.PodQOSBurstable
		for j := range p.Status.Conditions {
			p.Status.Conditions[j].LastTransitionTime = started
		}
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "registry.example/redis@sha256:" + strings.Repeat("ab", 32),
				ContainerID: fmt.Sprintf("containerd://%064x", i), Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			})
		}
	}
	for i, s := range snap.StatefulSets {
		s.ResourceVersion = strconv.Itoa(500000 + i)
		s.Generation = 1
		s.ManagedFields = fields("kubectl-client-side-apply", "Update", 12)
		s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat(`{"apiVersion":"apps/v1","kind":"StatefulSet"}`, 8)}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: ptr.Deref(s.Spec.Replicas, 0), ReadyReplicas: ptr.Deref(s.Spec.Replicas, 0),
			CurrentRevision: s.Name + "-5d4f8b", UpdateRevision: s.Name + "-5d4f8b", CollisionCount: ptr.To[int32](0)}
	}
	for i, p := range snap.PodDisruptionBudgets {
		p.ResourceVersion = strconv.Itoa(700000 + i)
		p.ManagedFields = append(fields("kubectl-client-side-apply", "Update", 4), fields("kube-controller-manager", "Update", 6)...)
		p.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2,
			Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, LastTransitionTime: started}}}
	}
}

// runCheck runs `redis-rebalancer check` with args (and --role-label, --redis-roles=false, -o
// json) in this process, its output going to the file outPath as it would to a pipe (not into
// this process's heap).
func runCheck(outPath string, args ...string) error {
	out, err := os.Create(outPath)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd := app.NewRootCommand()
	// No Redis runs here: roles come from the label, and the health is not read.
	cmd.SetArgs(append([]string{"check", "--role-label", scenario.RoleLabel, "--redis-roles=false", "-o", "json"}, args...))
	cmd.SetOut(out)
	cmd.SetErr(io.Discard)
	// Exit status 3 (a hard rule broken) is check's answer on this snapshot, not an error.
	if err := cmd.Execute(); err != nil && err.Error() != fmt.Sprintf("exit %d", app.ExitViolations) {
		return err
	}
	return out.Close()
}

// countClusters returns the number of Redis clusters in check's JSON output at path.
func countClusters(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var a struct {
		Clusters []json.RawMessage `json:"clusters"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return 0, fmt.Errorf("check's JSON: %w", err)
	}
	return len(a.Clusters), nil
}

// cpuSeconds returns the CPU time (user and system) this process has used: on a machine shared
// with other work, the figure that does not depend on the others' load.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// benchmarkCheck measures check with args: seconds per run (wall and CPU), peak and live heap
// (MiB).
func benchmarkCheck(b *testing.B, s *snapshotServer, args ...string) {
	maxHeap, err := MaxHeapFromEnv()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("snapshot: %s", s.Stats)
	var peak uint64
	base, _ := LiveHeap()
	cpu0 := cpuSeconds()
	b.ResetTimer()
	outPath := filepath.Join(b.TempDir(), "check.json")
	for range b.N {
		sampler := StartPeakSampler(maxHeap)
		err := runCheck(outPath, args...)
		peak = max(peak, sampler.Stop())
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		n, err := countClusters(outPath)
		if err != nil || n != s.Clusters {
			b.Fatalf("check reported %d Redis clusters (%v), want %d", n, err, s.Clusters)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "s-cpu/op")
	after, sys := LiveHeap()
	b.ReportMetric(MiB(peak), "MiB-peak")
	b.ReportMetric(MiB(base), "MiB-before")
	b.ReportMetric(MiB(after), "MiB-after")
	b.ReportMetric(MiB(sys), "MiB-sys")
}

// BenchmarkCheckLive measures `check` reading the objects from the API server.
func BenchmarkCheckLive(b *testing.B) {
	s := startSnapshotServer(b)
	benchmarkCheck(b, s, "--kubeconfig", s.Kubeconfig)
}

// BenchmarkCheckOfflineYAML measures `check --snapshot` on the `kubectl get ... -o yaml` dump.
func BenchmarkCheckOfflineYAML(b *testing.B) {
	s := startSnapshotServer(b)
	benchmarkCheck(b, s, "--snapshot", s.YAMLDump)
	b.ReportMetric(float64(s.DumpBytes[0])/1e6, "MB-dump")
}

// BenchmarkCheckOfflineJSON measures `check --snapshot` on the `kubectl get ... -o json` dump.
func BenchmarkCheckOfflineJSON(b *testing.B) {
	s := startSnapshotServer(b)
	benchmarkCheck(b, s, "--snapshot", s.JSONDump)
	b.ReportMetric(float64(s.DumpBytes[1])/1e6, "MB-dump")
}
