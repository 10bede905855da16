package localcluster_test

import (
	"context"
	"fmt"
	"log"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
)

// A cluster with two nodes in two zones and a pod. In a test, use
// localcluster.StartForTest(t, localcluster.Config{}) instead of Start and Stop.
func Example() {
	ctx := context.Background()
	c, err := localcluster.Start(ctx, localcluster.Config{Log: os.Stderr})
	if err != nil {
		log.Fatal(err) // says which binary is missing and how to build it
	}
	defer c.Stop()

	for _, n := range []localcluster.NodeSpec{{Name: "node-a", Zone: "zone-a"}, {Name: "node-b", Zone: "zone-b"}} {
		if _, err := c.AddNode(ctx, n); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := c.Namespace(ctx, "demo"); err != nil {
		log.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "demo"},
		Spec: corev1.PodSpec{
			// kwok nodes are tainted: pods must tolerate it.
			Tolerations: []corev1.Toleration{fixture.KwokToleration()},
			Containers:  []corev1.Container{{Name: "c", Image: "fake"}},
		},
	}
	if _, err := c.Client().CoreV1().Pods("demo").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("KUBECONFIG=" + c.Kubeconfig())
}
