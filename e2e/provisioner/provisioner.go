// Package provisioner is the test bed's volume provisioner: it plays a CSI driver's
// external-provisioner (kubernetes-csi/external-provisioner with a zonal disk driver) for the
// StorageClass it installs, so that a StatefulSet's claims get zonal PersistentVolumes as on a
// cloud.
//
// The StorageClass (StorageClass, the cluster's default: a claim that names no class gets it,
// as a chart's claims on a cloud do; provisioner Name, volumeBindingMode WaitForFirstConsumer,
// reclaimPolicy Delete) delays binding until a pod uses the claim: kube-scheduler's VolumeBinding
// plugin picks the pod's node, writes it on the claim (annotation volume.kubernetes.io/selected-node)
// and waits; kube-controller-manager's PersistentVolume controller marks the claim for this
// provisioner (volume.kubernetes.io/storage-provisioner). The provisioner then creates a
// PersistentVolume "pvc-<claim UID>" with the claim's size and access modes, a CSI source of its
// driver, a claimRef to the claim and required node affinity on the zone of the selected node (as
// a zonal disk's topology pins it); the PersistentVolume controller binds the two, and the
// scheduler binds the pod. When a claim is deleted, its volume is Released and the provisioner
// deletes it (reclaimPolicy Delete): its data is gone. A CSIDriver object with attachRequired
// false keeps the attach/detach controller out (kwok nodes attach nothing).
//
// The Redis pod runtime (e2e/redisrt) keeps a pod's data in a directory named after its volume,
// so a claim deleted and re-created really starts empty.
//
// It may import client-go and test/fixture (the test log writer); nothing of the product.
package provisioner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

const (
	// Name is the provisioner's name: the StorageClass's provisioner and the CSI driver of the
	// volumes it creates.
	Name = "zonal.csi.rebalancer.test"
	// StorageClass is the name of the StorageClass Install creates.
	StorageClass = "zonal"
	// AnnSelectedNode is the claim annotation kube-scheduler's VolumeBinding plugin sets to the
	// node it chose for the claim's first pod (WaitForFirstConsumer).
	AnnSelectedNode = "volume.kubernetes.io/selected-node"
	// AnnStorageProvisioner is the claim annotation the PersistentVolume controller sets to the
	// provisioner that is to provision it (and its deprecated beta form).
	AnnStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	AnnBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// AnnProvisionedBy marks a PersistentVolume with the provisioner that created it (the
	// external-provisioner's, which the PersistentVolume controller reads before a delete).
	AnnProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// AnnDefaultClass marks the cluster's default StorageClass (the DefaultStorageClass
	// admission plugin gives it to a claim that names none; k8s.io/kubernetes'
	// pkg/apis/storage/util.IsDefaultStorageClassAnnotation).
	AnnDefaultClass = "storageclass.kubernetes.io/is-default-class"
	// ZoneKey is the node label whose value pins a volume: the zone of the selected node.
	ZoneKey = corev1.LabelTopologyZone
)

// Install creates the StorageClass (the cluster's default one) and the CSIDriver the provisioner
// serves; it succeeds when they exist already.
func Install(ctx context.Context, client kubernetes.Interface) error {
	wffc := storagev1.VolumeBindingWaitForFirstConsumer
	deletePolicy := corev1.PersistentVolumeReclaimDelete
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: StorageClass, Annotations: map[string]string{
			// The default class: a claim without storageClassName (the charts' default) gets it.
			AnnDefaultClass: "true",
		}},
		Provisioner:       Name,
		ReclaimPolicy:     &deletePolicy,
		VolumeBindingMode: &wffc,
	}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("provisioner: create storageclass %s: %w", StorageClass, err)
	}
	driver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: Name},
		Spec: storagev1.CSIDriverSpec{
			AttachRequired: ptr.To(false),
			PodInfoOnMount: ptr.To(false),
		},
	}
	if _, err := client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("provisioner: create csidriver %s: %w", Name, err)
	}
	return nil
}

// Config configures a Provisioner. Client is required.
type Config struct {
	// Client is the Kubernetes client the claims, volumes and nodes are watched with.
	Client kubernetes.Interface
	// Log receives one line per volume created or deleted, and per failed attempt (discarded
	// when nil).
	Log io.Writer
}

// Provisioner provisions and deletes the volumes of StorageClass's claims. Create it with Start;
// stop it with Stop.
type Provisioner struct {
	cfg     Config
	cancel  context.CancelFunc
	factory informers.SharedInformerFactory
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	nodes   corelisters.NodeLister
	queue   workqueue.TypedRateLimitingInterface[string]
	workers sync.WaitGroup
	logMu   sync.Mutex
	stop    sync.Once
}

// Keys of the work queue: a claim ("claim/<namespace>/<name>") or a volume ("volume/<name>").
const (
	claimKey  = "claim/"
	volumeKey = "volume/"
)

// Start installs the StorageClass and the CSIDriver (Install), watches claims, volumes and nodes
// and returns once its informers have synced. ctx bounds the start; the provisioner runs until
// Stop.
func Start(ctx context.Context, cfg Config) (*Provisioner, error) {
	if cfg.Client == nil {
		return nil, errors.New("provisioner: Config.Client is required")
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := Install(ctx, cfg.Client); err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	factory := informers.NewSharedInformerFactory(cfg.Client, 0)
	p := &Provisioner{
		cfg: cfg, cancel: cancel, factory: factory,
		claims:  factory.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: factory.Core().V1().PersistentVolumes().Lister(),
		nodes:   factory.Core().V1().Nodes().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "provisioner"}),
	}
	handler := func(prefix string) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				p.queue.Add(prefix + key)
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
	}
	var errs []error
	_, err := factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(handler(claimKey))
	errs = append(errs, err)
	_, err = factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(handler(volumeKey))
	errs = append(errs, err)
	factory.Core().V1().Nodes().Informer()
	if err := errors.Join(errs...); err != nil {
		cancel()
		return nil, fmt.Errorf("provisioner: event handlers: %w", err)
	}
	factory.Start(pctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			p.Stop()
			return nil, fmt.Errorf("provisioner: informers did not sync: %w", context.Cause(ctx))
		}
	}
	for range 2 {
		p.workers.Go(func() {
			for p.processNext(pctx) {
			}
		})
	}
	return p, nil
}

// Stop stops the provisioner and waits for its workers. Volumes it created stay. Safe to call
// more than once.
func (p *Provisioner) Stop() {
	p.stop.Do(func() {
		p.cancel()
		p.queue.ShutDown()
		p.workers.Wait()
		p.factory.Shutdown()
	})
}

func (p *Provisioner) logf(format string, args ...any) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintf(p.cfg.Log, "[provisioner] "+format+"\n", args...)
}

func (p *Provisioner) processNext(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	var err error
	if k, ok := strings.CutPrefix(key, claimKey); ok {
		err = p.provision(ctx, k)
	} else if k, ok := strings.CutPrefix(key, volumeKey); ok {
		err = p.reclaim(ctx, k)
	}
	if err != nil && ctx.Err() == nil {
		p.logf("%s: %v; retrying", key, err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// provision creates the volume of one claim, when the claim is the provisioner's to provision:
// of StorageClass, unbound, marked for Name by the PersistentVolume controller, with a selected
// node (WaitForFirstConsumer). The volume is pinned to the selected node's zone.
func (p *Provisioner) provision(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	node := claim.Annotations[AnnSelectedNode]
	mine := claim.Annotations[AnnStorageProvisioner] == Name || claim.Annotations[AnnBetaStorageProvisioner] == Name
	if claim.DeletionTimestamp != nil || claim.Spec.VolumeName != "" || ptr.Deref(claim.Spec.StorageClassName, "") != StorageClass || !mine || node == "" {
		return nil
	}
	pvName := "pvc-" + string(claim.UID)
	if _, err := p.volumes.Get(pvName); err == nil {
		return nil // created already; the PersistentVolume controller binds it
	}
	n, err := p.nodes.Get(node)
	if err != nil {
		return fmt.Errorf("selected node %s: %w", node, err)
	}
	zone := n.Labels[ZoneKey]
	if zone == "" {
		return fmt.Errorf("selected node %s has no %s label: no zone to put the volume in", node, ZoneKey)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Annotations: map[string]string{AnnProvisionedBy: Name}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			VolumeMode:                    claim.Spec.VolumeMode,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              StorageClass,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name,
				UID: claim.UID, ResourceVersion: claim.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: Name, VolumeHandle: "vol-" + string(claim.UID), FSType: "ext4",
			}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: ZoneKey, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}
	if _, err := p.cfg.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create volume %s: %w", pvName, err)
	}
	p.logf("provisioned %s for claim %s/%s in %s (node %s)", pvName, claim.Namespace, claim.Name, zone, node)
	return nil
}

// reclaim deletes a volume the provisioner created once its claim is gone (Released,
// reclaimPolicy Delete).
func (p *Provisioner) reclaim(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil || pv.Annotations[AnnProvisionedBy] != Name || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	if err := p.cfg.Client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete released volume %s: %w", name, err)
	}
	claim := ""
	if pv.Spec.ClaimRef != nil {
		claim = pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name
	}
	p.logf("deleted %s (claim %s released)", name, claim)
	return nil
}
