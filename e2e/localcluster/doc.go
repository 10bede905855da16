// Package localcluster runs a real Kubernetes control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler) on loopback with kwok simulating the nodes and their
// pods, for end-to-end tests and the demo.
//
// Binaries come from hack/build-tools.sh (`make tools`); see DefaultBinaries. A cluster starts
// in 5 to 10 seconds. Each cluster on a machine claims its own pod network 127.x.0.0/16
// (Config.PodNetwork) and its control plane listens on 127.0.0.1, on ports 20000+10*x and up
// (below the ephemeral range; a busy one is replaced by a random free one), so several clusters
// can run at once, in one process or several.
//
// kwok holds a Lease per node in kube-node-lease and renews it as the kubelet does
// (Config.NodeLeaseDuration), so nodes and pods stay Ready for as long as the cluster runs.
// StopAPIServer and StartAPIServer take the API server down and bring it back (same etcd,
// certificates and port), for fault tests. Once started, a component that exits is restarted,
// as the kubelet restarts a control plane's static pods (kube-scheduler exits when its cache is
// inconsistent, which an API server restart can cause).
//
// Nodes are added with AddNode. They carry kwok's NoSchedule taint (fixture.KwokTaint), so pods
// must tolerate it (fixture.KwokToleration). Pods become Running and Ready as soon as they are scheduled and
// get an IP from their node's pod CIDR (PodNetwork.<i>.0/24), a loopback address that a test can
// bind a real server (redis-server) to. Pod annotations PodReadyDelayAnnotation and
// PodDeleteDelayAnnotation slow starts and terminations down. A Job's pod completes as soon as it
// runs, with the exit code its PodExitCodeAnnotation gives (0 without one), so that the Job
// controller judges it as it would a real container's.
//
// No Service should select loopback pod IPs: EndpointSlices reject them. A StatefulSet's
// serviceName only has to be set.
//
// It may import test/fixture (kwok's taint, the test log writer), test/pki (the cluster's
// certificates), test/proc, client-go and sigs.k8s.io/yaml; nothing of the product.
package localcluster
