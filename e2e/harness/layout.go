package harness

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/provisioner"
	"github.com/redis-rebalancer/redis-rebalancer/test/redistest"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// Laying a scenario out on the bed, in the order layOut takes the steps: the scenario's objects,
// its pods bound to the nodes it names, their redis-servers, the Redis Cluster formed over them,
// then the StatefulSets handed over to kube-scheduler.

// layOut creates the scenario's objects, binds its pods, forms the Redis Cluster and hands the
// StatefulSets over to the default scheduler. opts gives the password Secret (Bitnami's layout),
// the pod annotations, the templates' changes and the running pods' template
// (Options.PodAnnotations, Templates, RunningPods).
func (e *Env) layOut(ctx context.Context, opts Options) error {
	if err := e.createSecret(ctx); err != nil {
		return err
	}
	if err := e.createPDBs(ctx); err != nil {
		return err
	}
	stss, templates, err := e.createStatefulSets(ctx, opts.PodAnnotations, opts.Templates, opts.RunningPods)
	if err != nil {
		return err
	}
	if err := e.bindPods(ctx); err != nil {
		return err
	}
	addrs, err := e.waitServers(ctx)
	if err != nil {
		return err
	}
	if err := e.formCluster(ctx, addrs); err != nil {
		return err
	}
	if err := e.handOver(ctx, stss, templates); err != nil {
		return err
	}
	return e.recreateUnplaced(ctx)
}

// createSecret creates the chart's password Secret in Bitnami's layout when the environment's
// Redis has a password; nothing otherwise.
func (e *Env) createSecret(ctx context.Context) error {
	if e.Scenario.Layout != scenario.LayoutBitnami || e.RedisOptions.Password == "" {
		return nil
	}
	if _, err := e.Client().CoreV1().Secrets(e.Namespace).Create(ctx, e.Scenario.BitnamiSecret(e.RedisOptions.Password), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create secret: %w", err)
	}
	return nil
}

// createPDBs creates the scenario's PodDisruptionBudgets.
func (e *Env) createPDBs(ctx context.Context) error {
	for _, pdb := range e.Scenario.PodDisruptionBudgets() {
		if _, err := e.Client().PolicyV1().PodDisruptionBudgets(e.Namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pdb %s: %w", pdb.Name, err)
		}
	}
	return nil
}

// createStatefulSets creates the scenario's StatefulSets with annotations added to their pod
// templates and, when runningPods is set, the templates it changes (the pods are created from
// those). It returns the StatefulSets and, by name, the templates they get back at the hand-over:
// the scenario's (with the annotations), for the default scheduler.
func (e *Env) createStatefulSets(ctx context.Context, annotations map[string]string, tmpl, runningPods func(*corev1.PodTemplateSpec)) ([]*appsv1.StatefulSet, map[string]*corev1.PodTemplateSpec, error) {
	stss, err := e.Scenario.StatefulSets()
	if err != nil {
		return nil, nil, err
	}
	templates := map[string]*corev1.PodTemplateSpec{} // the scenario's, by StatefulSet
	for _, s := range stss {
		s.UID = ""
		for k, v := range annotations {
			metav1.SetMetaDataAnnotation(&s.Spec.Template.ObjectMeta, k, v)
		}
		if tmpl != nil {
			tmpl(&s.Spec.Template)
		}
		templates[s.Name] = s.Spec.Template.DeepCopy()
		templates[s.Name].Spec.SchedulerName = corev1.DefaultSchedulerName
		if runningPods != nil {
			runningPods(&s.Spec.Template)
		}
		if _, err := e.Client().AppsV1().StatefulSets(e.Namespace).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("create statefulset %s: %w", s.Name, err)
		}
	}
	return stss, templates, nil
}

// bindPods binds the pods the scenario places to the nodes it names (pods/binding), as the
// StatefulSet controller creates them; no scheduler serves ManualScheduler. A pod's unbound claims
// (WaitForFirstConsumer) first get the node, as kube-scheduler's VolumeBinding plugin gives it
// (claimsOn): the pod is bound once they are.
func (e *Env) bindPods(ctx context.Context) error {
	client := e.Client()
	want := e.Scenario.Placement
	bound := map[string]bool{}
	var listErr error // the last failed list, the cause when the poll times out
	err := poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(e.Namespace).List(ctx, metav1.ListOptions{LabelSelector: e.Scenario.Selector()})
		if listErr = err; err != nil {
			return false, nil
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			node, ok := want[p.Name]
			if !ok || bound[p.Name] || p.Spec.NodeName != "" {
				if p.Spec.NodeName != "" {
					bound[p.Name] = true
				}
				continue
			}
			if ready, err := e.claimsOn(ctx, p, node); err != nil || !ready {
				if err != nil {
					return false, err
				}
				continue
			}
			err := client.CoreV1().Pods(e.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsConflict(err) {
				return false, fmt.Errorf("bind %s to %s: %w", p.Name, node, err)
			}
			bound[p.Name] = true
		}
		return len(bound) == len(want), nil
	})
	if err != nil {
		if listErr != nil {
			err = fmt.Errorf("%w (list pods: %w)", err, listErr)
		}
		return fmt.Errorf("bind pods (%d of %d bound): %w", len(bound), len(want), err)
	}
	return nil
}

// claimsOn puts pod p's unbound claims on node (annotation volume.kubernetes.io/selected-node, as
// kube-scheduler's VolumeBinding PreBind does for WaitForFirstConsumer claims, so that their
// provisioner creates their volumes where the pod runs) and reports whether every claim is bound.
// A claim the StatefulSet controller has not created yet is not ready.
func (e *Env) claimsOn(ctx context.Context, p *corev1.Pod, node string) (bool, error) {
	claims := e.Client().CoreV1().PersistentVolumeClaims(p.Namespace)
	ready := true
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		c, err := claims.Get(ctx, v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			ready = false
			continue
		case err != nil:
			return false, fmt.Errorf("claim %s of pod %s: %w", v.PersistentVolumeClaim.ClaimName, p.Name, err)
		case c.Spec.VolumeName != "":
			continue
		}
		ready = false
		if c.Annotations[provisioner.AnnSelectedNode] == "" {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, provisioner.AnnSelectedNode, node)
			if _, err := claims.Patch(ctx, c.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				return false, fmt.Errorf("put claim %s on node %s: %w", c.Name, node, err)
			}
		}
	}
	return ready, nil
}

// waitServers waits for the redis-server of every pod the scenario places and returns their
// addresses by pod name.
func (e *Env) waitServers(ctx context.Context) (map[string]string, error) {
	addrs := map[string]string{}
	for name := range e.Scenario.Placement {
		if err := poll(ctx, 100*time.Millisecond, time.Minute, func(ctx context.Context) (bool, error) {
			a, ok := e.Runtime.Addr(e.Namespace, name)
			addrs[name] = a
			return ok, nil
		}); err != nil {
			return nil, fmt.Errorf("redis-server of pod %s: %w", name, err)
		}
	}
	return addrs, nil
}

// formCluster forms the Redis Cluster over the servers at addrs (by pod name) with the shards
// the scenario says, the first pod of each the master (redistest.FormCluster). That first pod
// must be placed.
func (e *Env) formCluster(ctx context.Context, addrs map[string]string) error {
	sc := e.Scenario
	var shards [][]string
	for i := 0; i < sc.Shards; i++ {
		var shard []string
		for _, pod := range sc.ShardPods(i) {
			if a, ok := addrs[pod]; ok {
				shard = append(shard, a)
			}
		}
		if len(shard) == 0 || shard[0] != addrs[sc.PodName(i, 0)] {
			return fmt.Errorf("shard %d: pod %s must be placed (it becomes the master)", i, sc.PodName(i, 0))
		}
		shards = append(shards, shard)
	}
	t0 := time.Now()
	if _, err := redistest.FormCluster(ctx, e.Redis, shards, 90*time.Second); err != nil {
		return fmt.Errorf("form redis cluster: %w", err)
	}
	e.logf("redis cluster formed over %d pods in %s", len(addrs), time.Since(t0).Round(10*time.Millisecond))
	return nil
}

// handOver hands the StatefulSets over to kube-scheduler: their templates use the default
// scheduler (and are the scenario's, templates by name) from now on; updateStrategy OnDelete
// keeps the running pods as they are.
func (e *Env) handOver(ctx context.Context, stss []*appsv1.StatefulSet, templates map[string]*corev1.PodTemplateSpec) error {
	client := e.Client()
	for _, s := range stss {
		if err := retryUpdate(ctx, func() error {
			cur, err := client.AppsV1().StatefulSets(e.Namespace).Get(ctx, s.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.Template = *templates[s.Name]
			_, err = client.AppsV1().StatefulSets(e.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("hand statefulset %s to the default scheduler: %w", s.Name, err)
		}
	}
	return nil
}

// recreateUnplaced deletes the pods the scenario leaves unplaced, so that their StatefulSets
// re-create them for the default scheduler (they stay Pending where it cannot place them).
func (e *Env) recreateUnplaced(ctx context.Context) error {
	pods, err := e.Scenario.Pods()
	if err != nil {
		return err
	}
	for _, p := range pods {
		if _, placed := e.Scenario.Placement[p.Name]; placed {
			continue
		}
		if err := e.Client().CoreV1().Pods(e.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("re-create pending pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// retryUpdate calls f until it succeeds, returns an error other than a conflict, or 30 s pass.
func retryUpdate(ctx context.Context, f func() error) error {
	var last error
	err := poll(ctx, 100*time.Millisecond, 30*time.Second, func(ctx context.Context) (bool, error) {
		last = f()
		if last == nil {
			return true, nil
		}
		if apierrors.IsConflict(last) {
			return false, nil
		}
		return false, last
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
