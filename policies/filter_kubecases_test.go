package policies_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// The cases of kube-scheduler v1.36.3's own unit tests for the plugins the filter mirrors
// (k8s.io/kubernetes/pkg/scheduler/framework/plugins/<plugin>/<file>_test.go), restated as facts
// in our tables: the same node, the same pods on it, the same incoming pod, the same verdict, by
// the case's upstream name. Each row is one node "n1"; the incoming pod is the Pending member
// "in" of cluster c1, the pods already on the node are not members. The verdict is the list of
// reasons the filter gives for n1 (Explain), none when the pod fits. Cases that test what the
// filter deliberately does not model are left out, each with the reason, so that the count of
// replayed cases is honest.

// kubeCase is one replayed case.
type kubeCase struct {
	name string
	// allocatable are n1's allocatable resources ("name=quantity", replacing the defaults).
	allocatable []string
	in          []fixture.PodOption
	// objs are the pods on n1 (On is added), claims, volumes and CSINodes.
	objs []any
	want []string
}

// runKubeCases runs the cases of one upstream file and returns how many ran.
func runKubeCases(t *testing.T, cases []kubeCase) int {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n1 := fixture.Node("n1")
			if tc.allocatable != nil {
				n1.Status.Allocatable = fixture.ResourceList(tc.allocatable...)
			}
			objs := []any{incoming("x", tc.in...)}
			for _, o := range tc.objs {
				if p, ok := o.(*corev1.Pod); ok {
					fixture.On("n1")(p)
				}
				objs = append(objs, o)
			}
			m, err := policies.Build(snapshotOf([]*corev1.Node{n1}, nil, objs...), policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := clusterNamed(m, "c1")
			rep := c.Explain(c.Current(), memberIndex(c, "in"))
			var got []string
			for reason, nodes := range rep.Rejected {
				if slices.Contains(nodes, "n1") {
					got = append(got, reason)
				}
			}
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reasons on n1 (-kube-scheduler +filter):\n%s\n%s", diff, rep.Summary())
			}
			if fits := len(rep.Fits) == 1; fits != (len(tc.want) == 0) {
				t.Errorf("fits = %v, kube-scheduler: %v", fits, len(tc.want) == 0)
			}
		})
	}
	return len(cases)
}

// containers replaces the pod's containers with one per entry, each requesting its
// "name=quantity" list.
func containers(reqs ...[]string) fixture.PodOption {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for k, r := range reqs {
			fixture.WithContainer(fmt.Sprintf("c%d", k), r...)(p)
		}
	}
}

// initContainers adds one init container per entry (not restartable).
func initContainers(reqs ...[]string) fixture.PodOption {
	return func(p *corev1.Pod) {
		for k, r := range reqs {
			fixture.WithInitContainer(fmt.Sprintf("init%d", k), false, r...)(p)
		}
	}
}

// onNode is a pod already on n1 whose containers request reqs (containers).
func onNode(name string, reqs ...[]string) *corev1.Pod {
	return fixture.Pod(name, containers(reqs...))
}

func req(entries ...string) []string { return entries }

// fitAllocatable is fit_test.go's makeAllocatableResources(10, 20, 32, 5, 20, 5).
var fitAllocatable = []string{"cpu=10m", "memory=20", "pods=32", "example.com/aaa=5", "ephemeral-storage=20", "hugepages-2Mi=5"}

// TestKubeSchedulerNodeResourcesFitCases replays noderesources/fit_test.go (TestEnoughRequests,
// TestNotEnoughRequests, TestStorageRequests, TestRestartableInitContainers). Left out: the
// cases of plugin arguments (ignoredResources, ignoredResourceGroups: the default profile has
// none), of DRA extended resources ("extended resource backed by DRA", "… (Allocatable: 0)":
// DeviceClasses are not read, the filter does not hand a resource to DRA) and of the
// SidecarContainers gate off (locked on since v1.33).
func TestKubeSchedulerNodeResourcesFitCases(t *testing.T) {
	a := fitAllocatable
	aaa, bbb := "example.com/aaa", "example.com/bbb"
	hp := "hugepages-2Mi"
	ins := func(name string) string { return "Insufficient " + name }
	cases := []kubeCase{
		// TestEnoughRequests.
		{name: "no resources requested always fits", allocatable: a, in: []fixture.PodOption{containers()}, objs: []any{onNode("e", req("cpu=10m", "memory=20"))}},
		{name: "too many resources fails", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=10m", "memory=20"))}, want: []string{rCPU, rMemory}},
		{name: "too many resources fails due to init container cpu", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), initContainers(req("cpu=3m", "memory=1"))}, objs: []any{onNode("e", req("cpu=8m", "memory=19"))}, want: []string{rCPU}},
		{name: "too many resources fails due to highest init container cpu", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), initContainers(req("cpu=3m", "memory=1"), req("cpu=2m", "memory=1"))}, objs: []any{onNode("e", req("cpu=8m", "memory=19"))}, want: []string{rCPU}},
		{name: "too many resources fails due to init container memory", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), initContainers(req("cpu=1m", "memory=3"))}, objs: []any{onNode("e", req("cpu=9m", "memory=19"))}, want: []string{rMemory}},
		{name: "too many resources fails due to highest init container memory", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), initContainers(req("cpu=1m", "memory=3"), req("cpu=1m", "memory=2"))}, objs: []any{onNode("e", req("cpu=9m", "memory=19"))}, want: []string{rMemory}},
		{name: "init container fits because it's the max, not sum, of containers and init containers", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), initContainers(req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=9m", "memory=19"))}},
		{name: "multiple init containers fit because it's the max, not sum, of containers and init containers", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), initContainers(req("cpu=1m", "memory=1"), req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=9m", "memory=19"))}},
		{name: "both resources fit", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=5"))}},
		{name: "one resource memory fits", allocatable: a, in: []fixture.PodOption{containers(req("cpu=2m", "memory=1"))}, objs: []any{onNode("e", req("cpu=9m", "memory=5"))}, want: []string{rCPU}},
		{name: "one resource cpu fits", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=2"))}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}, want: []string{rMemory}},
		{name: "equal edge case", allocatable: a, in: []fixture.PodOption{containers(req("cpu=5m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}},
		{name: "equal edge case for init container", allocatable: a, in: []fixture.PodOption{containers(req("cpu=4m", "memory=1")), initContainers(req("cpu=5m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}},
		{name: "extended resource fits", allocatable: a, in: []fixture.PodOption{containers(req(aaa + "=1"))}, objs: []any{onNode("e", req())}},
		{name: "extended resource fits for init container", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req(aaa + "=1"))}, objs: []any{onNode("e", req())}},
		{name: "extended resource capacity enforced", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", aaa+"=10"))}, objs: []any{onNode("e", req(aaa+"=0"))}, want: []string{ins(aaa)}},
		{name: "extended resource capacity enforced for init container", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", aaa+"=10"))}, objs: []any{onNode("e", req(aaa+"=0"))}, want: []string{ins(aaa)}},
		{name: "extended resource allocatable enforced", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", aaa+"=1"))}, objs: []any{onNode("e", req(aaa+"=5"))}, want: []string{ins(aaa)}},
		{name: "extended resource allocatable enforced for init container", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", aaa+"=1"))}, objs: []any{onNode("e", req(aaa+"=5"))}, want: []string{ins(aaa)}},
		{name: "extended resource allocatable enforced for multiple containers", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", aaa+"=3"), req("cpu=1m", "memory=1", aaa+"=3"))}, objs: []any{onNode("e", req(aaa+"=2"))}, want: []string{ins(aaa)}},
		{name: "extended resource allocatable admits multiple init containers", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", aaa+"=3"), req("cpu=1m", "memory=1", aaa+"=3"))}, objs: []any{onNode("e", req(aaa+"=2"))}},
		{name: "extended resource allocatable enforced for multiple init containers", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", aaa+"=6"), req("cpu=1m", "memory=1", aaa+"=3"))}, objs: []any{onNode("e", req(aaa+"=2"))}, want: []string{ins(aaa)}},
		{name: "extended resource allocatable enforced for unknown resource", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", bbb+"=1"))}, objs: []any{onNode("e", req())}, want: []string{ins(bbb)}},
		{name: "extended resource allocatable enforced for unknown resource for init container", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", bbb+"=1"))}, objs: []any{onNode("e", req())}, want: []string{ins(bbb)}},
		{name: "kubernetes.io resource capacity enforced", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", "kubernetes.io/something=10"))}, objs: []any{onNode("e", req())}, want: []string{ins("kubernetes.io/something")}},
		{name: "kubernetes.io resource capacity enforced for init container", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", "subdomain.kubernetes.io/something=10"))}, objs: []any{onNode("e", req())}, want: []string{ins("subdomain.kubernetes.io/something")}},
		{name: "hugepages resource capacity enforced", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", hp+"=10"))}, objs: []any{onNode("e", req(hp+"=0"))}, want: []string{ins(hp)}},
		{name: "hugepages resource capacity enforced for init container", allocatable: a, in: []fixture.PodOption{containers(req()), initContainers(req("cpu=1m", "memory=1", hp+"=10"))}, objs: []any{onNode("e", req(hp+"=0"))}, want: []string{ins(hp)}},
		{name: "hugepages resource allocatable enforced for multiple containers", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", hp+"=3"), req("cpu=1m", "memory=1", hp+"=3"))}, objs: []any{onNode("e", req(hp+"=2"))}, want: []string{ins(hp)}},
		{name: "resources + pod overhead fits", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), fixture.WithOverhead("cpu=3m", "memory=13")}, objs: []any{onNode("e", req("cpu=5m", "memory=5"))}},
		{name: "requests + overhead does not fit for memory", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), fixture.WithOverhead("cpu=1m", "memory=15")}, objs: []any{onNode("e", req("cpu=5m", "memory=5"))}, want: []string{rMemory}},
		{name: "skip checking extended resource request with quantity zero via resource groups", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", aaa+"=0"))}, objs: []any{onNode("e", req(aaa+"=6"))}},
		{name: "skip checking resource request with quantity zero", allocatable: a, in: []fixture.PodOption{containers(req(aaa + "=1"))}, objs: []any{onNode("e", req("cpu=20m", "memory=30", aaa+"=1"))}},
		{name: "both pod-level and container-level resources fit", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), fixture.WithPodResources("cpu=1m", "memory=2")}, objs: []any{onNode("e", req("cpu=5m", "memory=5"))}},
		{name: "pod-level cpu resource not fit", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), fixture.WithPodResources("cpu=7m", "memory=2")}, objs: []any{onNode("e", req("cpu=5m", "memory=5"))}, want: []string{rCPU}},
		{name: "pod-level memory resource not fit", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), fixture.WithPodResources("cpu=3m", "memory=2")}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}, want: []string{rMemory}},
		{name: "pod-level hugepages resource fit", allocatable: a, in: []fixture.PodOption{containers(), fixture.WithPodResources("cpu=3m", "memory=2", hp+"=5")}},
		{name: "both pod-level and container-level hugepages resource fit", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", hp+"=3")), fixture.WithPodResources("cpu=3m", "memory=2", hp+"=5")}},
		{name: "pod-level hugepages resource not fit", allocatable: a, in: []fixture.PodOption{containers(), fixture.WithPodResources("cpu=3m", "memory=2", hp+"=10")}, want: []string{ins(hp)}},
		{name: "one pod-level cpu resource fits and all init and non-init containers resources fit", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1")), fixture.WithPodResources("cpu=3m", "memory=2"), initContainers(req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}, want: []string{rMemory}},
		{name: "extended resource backed by device plugin", allocatable: a, in: []fixture.PodOption{containers(req(aaa + "=1"))}, objs: []any{onNode("e", req())}},
		{name: "extended resource backed by DRA, nil draManager", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", aaa+"=1"))}, objs: []any{onNode("e", req())}},
		{name: "extended resource backed by DRA not enabled", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", "extended.resource.dra.io/something=1"))}, objs: []any{onNode("e", req())}, want: []string{ins("extended.resource.dra.io/something")}},
		{name: "extended resource NOT backed by DRA", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1", bbb+"=1"))}, objs: []any{onNode("e", req())}, want: []string{ins(bbb)}},
		{name: "extended resource was backed by Device Plugin (Allocatable: 0), global cache", allocatable: a, in: []fixture.PodOption{containers(req(aaa + "=1"))}, objs: []any{onNode("e", req(aaa+"=0"))}},
	}
	// TestNotEnoughRequests: makeAllocatableResources(10, 20, 1, 0, 0, 0), one pod already there.
	one := []string{"cpu=10m", "memory=20", "pods=1", "example.com/aaa=0", "ephemeral-storage=0", "hugepages-2Mi=0"}
	cases = append(cases,
		kubeCase{name: "even without specified resources, predicate fails when there's no space for additional pod", allocatable: one, in: []fixture.PodOption{containers()}, objs: []any{onNode("e", req("cpu=10m", "memory=20"))}, want: []string{rPods}},
		kubeCase{name: "even if both resources fit, predicate fails when there's no space for additional pod", allocatable: one, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=5"))}, want: []string{rPods}},
		kubeCase{name: "even for equal edge case, predicate fails when there's no space for additional pod", allocatable: one, in: []fixture.PodOption{containers(req("cpu=5m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}, want: []string{rPods}},
		kubeCase{name: "even for equal edge case, predicate fails when there's no space for additional pod due to init container", allocatable: one, in: []fixture.PodOption{containers(req("cpu=5m", "memory=1")), initContainers(req("cpu=5m", "memory=1"))}, objs: []any{onNode("e", req("cpu=5m", "memory=19"))}, want: []string{rPods}},
	)
	// TestStorageRequests.
	cases = append(cases,
		kubeCase{name: "empty storage requested, and pod fits", allocatable: a, in: []fixture.PodOption{containers(req("cpu=1m", "memory=1"))}, objs: []any{onNode("e", req("cpu=2m", "memory=10"))}},
		kubeCase{name: "storage ephemeral local storage request exceeds allocatable", allocatable: a, in: []fixture.PodOption{containers(req("ephemeral-storage=25"))}, objs: []any{onNode("e", req("cpu=2m", "memory=2"))}, want: []string{rEphemeral}},
		kubeCase{name: "ephemeral local storage is sufficient", allocatable: a, in: []fixture.PodOption{containers(req("ephemeral-storage=5"))}, objs: []any{onNode("e", req("cpu=2m", "memory=2", "ephemeral-storage=10"))}},
		kubeCase{name: "pod fits", allocatable: a, in: []fixture.PodOption{containers(req("ephemeral-storage=10"))}, objs: []any{onNode("e", req("cpu=2m", "memory=2"))}},
	)
	// TestRestartableInitContainers (SidecarContainers on): makeAllocatableResources(2, 0, 1, 0,
	// 0, 0), no pod on the node.
	small := []string{"cpu=2m", "memory=0", "pods=1", "example.com/aaa=0", "ephemeral-storage=0", "hugepages-2Mi=0"}
	sidecar := func(reqs ...string) fixture.PodOption {
		return fixture.WithInitContainer("restartable-init", true, reqs...)
	}
	cases = append(cases,
		kubeCase{name: "allow pod without restartable init containers if sidecar containers is enabled", allocatable: small, in: []fixture.PodOption{containers(req())}},
		kubeCase{name: "allow pod with restartable init containers if sidecar containers is enabled", allocatable: small, in: []fixture.PodOption{containers(req()), sidecar()}},
		kubeCase{name: "allow pod if the total requested resources do not exceed the node's allocatable resources", allocatable: small, in: []fixture.PodOption{containers(req("cpu=1m")), sidecar("cpu=1m")}},
		kubeCase{name: "not allow pod if the total requested resources do exceed the node's allocatable resources", allocatable: small, in: []fixture.PodOption{containers(req("cpu=1m")), sidecar("cpu=2m")}, want: []string{rCPU}},
	)
	t.Logf("%d cases of noderesources/fit_test.go replayed", runKubeCases(t, cases))
}

// TestKubeSchedulerNodePortsCases replays nodeports/node_ports_test.go (TestNodePorts, TestFits).
// Ports are "protocol/hostIP/port", as the upstream helper writes them.
func TestKubeSchedulerNodePortsCases(t *testing.T) {
	ports := func(specs ...string) fixture.PodOption {
		return func(p *corev1.Pod) {
			for _, s := range specs {
				f := strings.Split(s, "/")
				port, err := strconv.Atoi(f[2])
				if err != nil {
					panic(err)
				}
				fixture.HostPort(int32(port), f[1], corev1.Protocol(f[0]))(p)
			}
		}
	}
	existing := func(specs ...string) *corev1.Pod { return fixture.Pod("p1", ports(specs...)) }
	initPort := func(sidecar bool) fixture.PodOption {
		return func(p *corev1.Pod) {
			fixture.WithInitContainer("init", sidecar)(p)
			p.Spec.InitContainers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8001, HostPort: 8001, Protocol: corev1.ProtocolTCP}}
		}
	}
	cases := []kubeCase{
		// TestNodePorts.
		{name: "skip filter"},
		{name: "other port", in: []fixture.PodOption{ports("UDP/127.0.0.1/8080")}, objs: []any{existing("UDP/127.0.0.1/9090")}},
		{name: "same udp port", in: []fixture.PodOption{ports("UDP/127.0.0.1/8080")}, objs: []any{existing("UDP/127.0.0.1/8080")}, want: []string{rNodePorts}},
		{name: "same tcp port", in: []fixture.PodOption{ports("TCP/127.0.0.1/8080")}, objs: []any{existing("TCP/127.0.0.1/8080")}, want: []string{rNodePorts}},
		{name: "different host ip", in: []fixture.PodOption{ports("TCP/127.0.0.1/8080")}, objs: []any{existing("TCP/127.0.0.2/8080")}},
		{name: "different protocol", in: []fixture.PodOption{ports("UDP/127.0.0.1/8080")}, objs: []any{existing("TCP/127.0.0.1/8080")}},
		{name: "second udp port conflict", in: []fixture.PodOption{ports("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080")}, objs: []any{existing("UDP/127.0.0.1/8080")}, want: []string{rNodePorts}},
		{name: "first tcp port conflict", in: []fixture.PodOption{ports("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080")}, objs: []any{existing("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")}, want: []string{rNodePorts}},
		{name: "first tcp port conflict due to 0.0.0.0 hostIP", in: []fixture.PodOption{ports("TCP/0.0.0.0/8001")}, objs: []any{existing("TCP/127.0.0.1/8001")}, want: []string{rNodePorts}},
		{name: "TCP hostPort conflict due to 0.0.0.0 hostIP", in: []fixture.PodOption{ports("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001")}, objs: []any{existing("TCP/127.0.0.1/8001")}, want: []string{rNodePorts}},
		{name: "second tcp port conflict to 0.0.0.0 hostIP", in: []fixture.PodOption{ports("TCP/127.0.0.1/8001")}, objs: []any{existing("TCP/0.0.0.0/8001")}, want: []string{rNodePorts}},
		{name: "second different protocol", in: []fixture.PodOption{ports("UDP/127.0.0.1/8001")}, objs: []any{existing("TCP/0.0.0.0/8001")}},
		{name: "UDP hostPort conflict due to 0.0.0.0 hostIP", in: []fixture.PodOption{ports("UDP/127.0.0.1/8001")}, objs: []any{existing("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")}, want: []string{rNodePorts}},
		{name: "non-sidecar initContainer using hostPort", in: []fixture.PodOption{initPort(false)}, objs: []any{existing("TCP/0.0.0.0/8001")}},
		{name: "TCP hostPort conflict from sidecar initContainer", in: []fixture.PodOption{initPort(true)}, objs: []any{existing("TCP/0.0.0.0/8001")}, want: []string{rNodePorts}},
		// TestFits.
		{name: "non-conflicting ports", in: []fixture.PodOption{ports("TCP/127.0.0.1/80")}, objs: []any{existing("TCP/127.0.0.1/9090")}},
		{name: "multiple non-conflicting ports", in: []fixture.PodOption{ports("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100")}, objs: []any{existing("TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080")}},
		{name: "same ports on different protocols", in: []fixture.PodOption{ports("TCP/127.0.0.1/80")}, objs: []any{existing("UDP/127.0.0.1/80")}},
		{name: "conflicting ports", in: []fixture.PodOption{ports("TCP/127.0.0.1/80")}, objs: []any{existing("TCP/127.0.0.1/80")}, want: []string{rNodePorts}},
		{name: "multiple ports, some conflicting", in: []fixture.PodOption{ports("TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100")}, objs: []any{existing("TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080")}, want: []string{rNodePorts}},
	}
	t.Logf("%d cases of nodeports/node_ports_test.go replayed", runKubeCases(t, cases))
}

// TestKubeSchedulerVolumeRestrictionsCases replays volumerestrictions/volume_restrictions_test.go
// (TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts,
// TestAccessModeConflicts). Left out: "failed to get PVC" (a claim missing from the snapshot
// does not restrict: the filter reads a snapshot, and a StatefulSet's claim exists before its
// pod).
func TestKubeSchedulerVolumeRestrictionsCases(t *testing.T) {
	vol := func(src corev1.VolumeSource) corev1.Volume { return corev1.Volume{Name: "v", VolumeSource: src} }
	kinds := []struct {
		test       string
		one, other corev1.Volume
	}{
		{"TestGCEDiskConflicts", vol(corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "foo"}}), vol(corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "bar"}})},
		{"TestAWSDiskConflicts", vol(corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "foo"}}), vol(corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "bar"}})},
		{"TestRBDDiskConflicts", vol(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"a", "b"}, RBDPool: "foo", RBDImage: "bar", FSType: "ext4"}}), vol(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"c", "d"}, RBDPool: "foo", RBDImage: "bar", FSType: "ext4"}})},
		{"TestISCSIDiskConflicts", vol(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "127.0.0.1:3260", IQN: "iqn.2016-12.server:storage.target01", FSType: "ext4"}}), vol(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "127.0.0.1:3260", IQN: "iqn.2017-12.server:storage.target01", FSType: "ext4"}})},
	}
	var cases []kubeCase
	for _, k := range kinds {
		cases = append(cases,
			kubeCase{name: k.test + "/nothing"},
			kubeCase{name: k.test + "/one state", objs: []any{fixture.Pod("e", fixture.WithVolume(k.one))}},
			kubeCase{name: k.test + "/same state", in: []fixture.PodOption{fixture.WithVolume(k.one)}, objs: []any{fixture.Pod("e", fixture.WithVolume(k.one))}, want: []string{rDisk}},
			kubeCase{name: k.test + "/different state", in: []fixture.PodOption{fixture.WithVolume(k.other)}, objs: []any{fixture.Pod("e", fixture.WithVolume(k.one))}},
		)
	}
	cases = append(cases, kubeCase{name: "TestGCEDiskConflicts/pod with a volume that doesn't have restrictions", in: []fixture.PodOption{fixture.WithVolume(corev1.Volume{Name: "volume with no restriction"})}})
	// TestAccessModeConflicts: claims in the pods' namespace, pods on node-1.
	claim := func(name string, mode corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: fixture.Namespace, Name: name}, Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}}}
	}
	rwop1, rwop2 := claim("claim-with-rwop-1", corev1.ReadWriteOncePod), claim("claim-with-rwop-2", corev1.ReadWriteOncePod)
	rwx := claim("claim-with-rwx", corev1.ReadWriteMany)
	uses := func(name string, claims ...string) *corev1.Pod {
		p := fixture.Pod(name)
		for k, c := range claims {
			fixture.WithNamedClaim(fmt.Sprintf("v%d", k), c)(p)
		}
		return p
	}
	usesOpt := func(claims ...string) fixture.PodOption {
		return func(p *corev1.Pod) {
			for k, c := range claims {
				fixture.WithNamedClaim(fmt.Sprintf("v%d", k), c)(p)
			}
		}
	}
	cases = append(cases,
		kubeCase{name: "TestAccessModeConflicts/nothing"},
		kubeCase{name: "TestAccessModeConflicts/no access mode conflict", in: []fixture.PodOption{usesOpt("claim-with-rwop-1")}, objs: []any{uses("pod-with-rwx", "claim-with-rwx"), rwop1, rwx}},
		kubeCase{name: "TestAccessModeConflicts/access mode conflict, unschedulable", in: []fixture.PodOption{usesOpt("claim-with-rwop-1")}, objs: []any{uses("pod-with-one-pvc", "claim-with-rwop-1"), uses("pod-with-rwx", "claim-with-rwx"), rwop1, rwx}, want: []string{rRWOP}},
		kubeCase{name: "TestAccessModeConflicts/two conflicts, unschedulable", in: []fixture.PodOption{usesOpt("claim-with-rwop-1", "claim-with-rwop-2")}, objs: []any{uses("pod-with-two-pvcs", "claim-with-rwop-1", "claim-with-rwop-2"), uses("pod-with-rwx", "claim-with-rwx"), rwop1, rwop2, rwx}, want: []string{rRWOP}},
	)
	t.Logf("%d cases of volumerestrictions/volume_restrictions_test.go replayed", runKubeCases(t, cases))
}

// TestKubeSchedulerNodeNameCases replays nodename/node_name_test.go (TestNodeName). The filter
// applies NodeName to re-creation templates (a running pod's nodeName is where it runs), so the
// incoming pod is a StatefulSet's evicted pod whose template names the node, or none.
func TestKubeSchedulerNodeNameCases(t *testing.T) {
	for _, tc := range []struct {
		name, named string
		want        []string
	}{
		{name: "no host specified"},
		{name: "host matches", named: "foo"},
		{name: "host doesn't match", named: "bar", want: []string{rNodeName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := redisCluster{shards: 1, perShard: 1, zones: []string{"a"}, place: [][]string{{"foo"}},
				templateOpts: []fixture.PodOption{func(p *corev1.Pod) {
					p.Spec.NodeName = tc.named
					p.Spec.Affinity, p.Spec.TopologySpreadConstraints = nil, nil
				}}}
			m, err := policies.Build(snapshotOf([]*corev1.Node{fixture.Node("foo", fixture.InZone("zone-a"))}, []redisCluster{rc}), policies.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := m.Clusters[0]
			p := c.Current()
			p[0] = -1
			var got []string
			for reason := range c.Explain(p, 0).Rejected {
				got = append(got, reason)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reasons on foo (-kube-scheduler +filter):\n%s", diff)
			}
		})
	}
}

// TestKubeSchedulerNodeVolumeLimitsCases replays nodevolumelimits/csi_test.go (TestCSILimits),
// with its world: for each driver of a case and j in 0..3 a claim "csi-<driver>-<j>" bound to
// the volume of that name (a CSI volume of the driver; an AWS EBS volume for
// kubernetes.io/aws-ebs, which CSI migration counts as ebs.csi.aws.com; a hostPath volume for
// kubernetes.io/hostpath), claim "csi-5" without class or volume, and a CSINode for n1 listing the
// case's drivers with the case's limit ("csinode"), without limits ("csinode-with-no-limit"), or
// none. Left out: the cases that count VolumeAttachments without a pod ("should count
// VolumeAttachments towards volume limit when no pods exist": they are not read), that count an
// unbound claim through its StorageClass (the four "pending"/"invalid PV name"/"unbound in-tree"
// cases and the five "ephemeral/persistent … <= / >" cases with unbound ephemeral claims:
// StorageClasses are not read), and those where a claim is missing or not owned by its pod
// ("ephemeral volume missing", "ephemeral volume not owned", "don't skip Filter when the pod has
// ephemeral volumes": a claim missing from the snapshot does not restrict).
func TestKubeSchedulerNodeVolumeLimitsCases(t *testing.T) {
	const (
		ebs      = "ebs.csi.aws.com"
		gce      = "pd.csi.storage.gke.io"
		inTree   = "kubernetes.io/aws-ebs"
		hostPath = "kubernetes.io/hostpath"
	)
	world := func(drivers ...string) []any {
		var out []any
		for _, d := range drivers {
			for j := range 4 {
				name := fmt.Sprintf("csi-%s-%d", d, j)
				pvc, pv := fixture.CSIClaim(fixture.Namespace, name, name, d, corev1.ReadWriteOnce)
				pv.Spec.CSI.VolumeHandle = name
				switch d {
				case inTree:
					pv.Spec.CSI = nil
					pv.Spec.AWSElasticBlockStore = &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: name}
				case hostPath:
					pv.Spec.CSI = nil
					pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp"}
				}
				out = append(out, pvc, pv)
			}
		}
		return append(out, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: fixture.Namespace, Name: "csi-5"}})
	}
	csiNode := func(source string, limit int, drivers ...string) []any {
		var entries []string
		for _, d := range drivers {
			switch source {
			case "csinode":
				entries = append(entries, fmt.Sprintf("%s=%d", d, limit))
			case "csinode-with-no-limit":
				entries = append(entries, d)
			}
		}
		if source == "" {
			return nil
		}
		return []any{fixture.CSINode("n1", entries...)}
	}
	claims := func(names ...string) fixture.PodOption {
		return func(p *corev1.Pod) {
			for k, n := range names {
				fixture.WithNamedClaim(fmt.Sprintf("v%d", k), n)(p)
			}
		}
	}
	inline := func(id string) fixture.PodOption {
		return fixture.WithVolume(corev1.Volume{Name: "inline", VolumeSource: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: id}}})
	}
	configMapAndSecret := func(p *corev1.Pod) {
		fixture.WithVolume(corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})(p)
		fixture.WithVolume(corev1.Volume{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}})(p)
	}
	pod := func(name string, opts ...fixture.PodOption) *corev1.Pod { return fixture.Pod(name, opts...) }
	running := func() *corev1.Pod { return pod("running", claims("csi-ebs.csi.aws.com-3")) }
	ebsTwo := func() *corev1.Pod { return pod("ebs-two", claims("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")) }
	gceTwo := []fixture.PodOption{claims("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")}
	inTreeOne := []fixture.PodOption{claims("csi-kubernetes.io/aws-ebs-0")}
	inTreeTwo := func() *corev1.Pod {
		return pod("in-tree-two", claims("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2"))
	}
	ebsOne := []fixture.PodOption{claims("csi-ebs.csi.aws.com-0")}
	type csiCase struct {
		name     string
		in       []fixture.PodOption
		existing []*corev1.Pod
		limit    int
		drivers  []string
		source   string
		want     []string
	}
	var cases []kubeCase
	for _, tc := range []csiCase{
		{name: "should schedule pod when VolumeAttachments count does not exceed limit", in: ebsOne, limit: 2, drivers: []string{ebs}, source: "csinode"},
		{name: "fits when node volume limit >= new pods CSI volume", in: ebsOne, existing: []*corev1.Pod{running(), ebsTwo()}, limit: 4, drivers: []string{ebs}, source: "csinode"},
		{name: "doesn't when node volume limit <= pods CSI volume", in: ebsOne, existing: []*corev1.Pod{running(), ebsTwo()}, limit: 2, drivers: []string{ebs}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "should when driver does not support volume limits", in: ebsOne, existing: []*corev1.Pod{running(), ebsTwo()}, limit: 2, drivers: []string{ebs}, source: "csinode-with-no-limit"},
		{name: "don't count pvcs with missing SC towards volume limit", in: ebsOne, existing: []*corev1.Pod{running(), pod("no-sc", claims("csi-5"))}, limit: 2, drivers: []string{ebs}, source: "csinode"},
		{name: "count pvcs with the same type towards volume limit", in: ebsOne, existing: []*corev1.Pod{pod("gce-two", gceTwo...), ebsTwo()}, limit: 2, drivers: []string{ebs, gce}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "don't count pvcs with different type towards volume limit", in: gceTwo, existing: []*corev1.Pod{ebsTwo(), running()}, limit: 2, drivers: []string{ebs, gce}, source: "csinode"},
		{name: "should count in-tree volumes if migration is enabled", in: inTreeOne, existing: []*corev1.Pod{inTreeTwo()}, limit: 2, drivers: []string{inTree, ebs}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "nil csi node", in: []fixture.PodOption{inline("aws-inline1")}, existing: []*corev1.Pod{inTreeTwo()}, drivers: []string{inTree, ebs}},
		{name: "should not limit pod if volume used does not report limits", in: inTreeOne, existing: []*corev1.Pod{inTreeTwo()}, limit: 2, drivers: []string{inTree, ebs}, source: "csinode-with-no-limit"},
		{name: "should not count non-migratable in-tree volumes", in: []fixture.PodOption{claims("csi-kubernetes.io/hostpath-0")}, existing: []*corev1.Pod{ebsTwo()}, limit: 2, drivers: []string{hostPath, ebs}, source: "csinode"},
		{name: "should count in-tree inline volumes if migration is enabled", in: []fixture.PodOption{inline("aws-inline1")}, existing: []*corev1.Pod{inTreeTwo()}, limit: 2, drivers: []string{inTree, ebs}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)", in: inTreeOne, existing: []*corev1.Pod{ebsTwo()}, limit: 2, drivers: []string{inTree, ebs}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", in: []fixture.PodOption{inline("aws-inline1")}, existing: []*corev1.Pod{ebsTwo(), pod("in-tree-one", inTreeOne...)}, limit: 3, drivers: []string{inTree, ebs}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", in: []fixture.PodOption{inline("csi-ebs.csi.aws.com-1")}, existing: []*corev1.Pod{ebsTwo(), pod("in-tree-one", inTreeOne...)}, limit: 3, drivers: []string{inTree, ebs}, source: "csinode"},
		{name: "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)", in: ebsOne, existing: []*corev1.Pod{inTreeTwo()}, limit: 2, drivers: []string{inTree, ebs}, source: "csinode", want: []string{rVolumeLimits}},
		{name: "ephemeral volume unbound", in: []fixture.PodOption{fixture.WithVolume(corev1.Volume{Name: "xyz", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}})}, drivers: []string{ebs}, source: "csinode-with-no-limit"},
		{name: "skip Filter when the pod only uses secrets and configmaps", in: []fixture.PodOption{configMapAndSecret}, limit: 2, drivers: []string{ebs}, source: "csinode"},
		{name: "don't skip Filter when the pod has pvcs", in: []fixture.PodOption{configMapAndSecret, claims("csi-ebs.csi.aws.com-0")}, limit: 2, drivers: []string{ebs}, source: "csinode"},
		{name: "don't skip Filter when the pod has inline migratable volumes", in: []fixture.PodOption{configMapAndSecret, inline("aws-inline1")}, existing: []*corev1.Pod{inTreeTwo()}, limit: 2, drivers: []string{inTree, ebs}, source: "csinode", want: []string{rVolumeLimits}},
	} {
		objs := append(world(tc.drivers...), csiNode(tc.source, tc.limit, tc.drivers...)...)
		for _, p := range tc.existing {
			objs = append(objs, p)
		}
		cases = append(cases, kubeCase{name: tc.name, in: tc.in, objs: objs, want: tc.want})
	}
	t.Logf("%d cases of nodevolumelimits/csi_test.go replayed", runKubeCases(t, cases))
}
