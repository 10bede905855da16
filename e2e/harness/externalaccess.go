package harness

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// The Bitnami chart's cluster.externalAccess on the test bed. The chart exposes every pod by a
// LoadBalancer Service of its own and has its Redis node announce that LoadBalancer's IP
// (cluster.externalAccess.service.loadBalancerIP[i], cluster-announce-ip); its init forms the
// cluster with redis-cli over those IPs. The bed has no cloud: the harness creates the chart's
// Services with spec.loadBalancerIP, sets their status.loadBalancer.ingress as a cloud's
// controller would, and each pod's redis-server binds its LoadBalancer IP beside its pod IP, as
// the LoadBalancer would forward it. (The chart's creator pod, ordinal 0, sets no
// cluster-announce-ip and is announced at the address the others met it at, the same IP.)

// externalAccessNetwork holds the LoadBalancer stand-in IPs: ordinal i gets <network>.<i+1>, on
// the environment's Redis port (environments differ by port). It is outside every pod network
// (localcluster's 127.10 upward) and redistest's subnets (127.100 upward).
const externalAccessNetwork = "127.9.0"

// LoadBalancerIP returns the IP of the LoadBalancer that exposes pod (a pod of the Bitnami
// StatefulSet, "<fullname>-<ordinal>") with Options.ExternalAccess, "" without it or for another
// pod.
func (e *Env) LoadBalancerIP(pod string) string {
	if !e.externalAccess {
		return ""
	}
	o, ok := strings.CutPrefix(pod, e.Scenario.BitnamiFullname()+"-")
	i, err := strconv.Atoi(o)
	if !ok || err != nil || i < 0 || i >= 254 {
		return ""
	}
	return lbIP(i)
}

// lbIP returns the LoadBalancer stand-in IP of ordinal i.
func lbIP(i int) string { return fmt.Sprintf("%s.%d", externalAccessNetwork, i+1) }

// createExternalAccess creates the chart's per-pod Services (scenario.BitnamiExternalAccessServices)
// and sets each one's status.loadBalancer.ingress to its IP.
func (e *Env) createExternalAccess(ctx context.Context) error {
	if e.Scenario.Layout != scenario.LayoutBitnami {
		return fmt.Errorf("scenario %s: Options.ExternalAccess needs Bitnami's layout, not %q", e.Scenario.Name, e.Scenario.Layout)
	}
	svcs := e.Client().CoreV1().Services(e.Namespace)
	for _, s := range e.Scenario.BitnamiExternalAccessServices(e.Port, lbIP) {
		got, err := svcs.Create(ctx, s, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create service %s: %w", s.Name, err)
		}
		got.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: s.Spec.LoadBalancerIP, IPMode: ptr.To(corev1.LoadBalancerIPModeVIP)}}
		if _, err := svcs.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("set the LoadBalancer status of service %s: %w", s.Name, err)
		}
	}
	return nil
}
