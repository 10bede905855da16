package policies

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	csitrans "k8s.io/csi-translation-lib"
	csiplugins "k8s.io/csi-translation-lib/plugins"
	"k8s.io/klog/v2"
)

// csiVolume is one attachable volume of a pod as NodeVolumeLimits counts it: the CSI driver (an
// id of Model.csi) and the volume's unique name, "<driver>/<volume handle>".
type csiVolume struct {
	driver int32
	name   string
}

// csiModel is NodeVolumeLimits' view of the cluster, built by Build when a CSINode reports an
// attach limit: the drivers with a limit on some node, the limits, and the volumes of those
// drivers attached to each node by its scheduled pods.
type csiModel struct {
	translator csitrans.CSITranslator
	drivers    map[string]int32
	// limits[n][d] is node n's limit for driver d (CSINode spec.drivers[].allocatable.count), -1
	// for none; nil for a node without a CSINode or without limits.
	limits [][]int32
	// attached[n] maps the unique name of each volume the scheduled pods of node n use to the
	// number of those pods; count[n][d] is the number of distinct volumes of driver d there.
	attached []map[string]int32
	count    [][]int32
	// nodesOf maps a unique name to the nodes it is attached to (one entry per node).
	nodesOf map[string][]int32
}

// volumeLimitsOf is NodeVolumeLimits' getVolumeLimits: the attach limit of each driver of a
// CSINode that reports one.
func volumeLimitsOf(n *storagev1.CSINode) map[string]int64 {
	out := map[string]int64{}
	for _, d := range n.Spec.Drivers {
		if d.Allocatable != nil && d.Allocatable.Count != nil {
			out[d.Name] = int64(*d.Allocatable.Count)
		}
	}
	return out
}

// buildCSI reads the CSINodes' limits and, when any, the volumes of the scheduled pods (Build).
func (m *Model) buildCSI(csiNodes []*storagev1.CSINode) {
	var limits [][]int32
	drivers := map[string]int32{}
	for _, cn := range csiNodes {
		n, ok := m.nodeIndex[cn.Name]
		if !ok {
			continue
		}
		for name, lim := range volumeLimitsOf(cn) {
			d, ok := drivers[name]
			if !ok {
				d = int32(len(drivers))
				drivers[name] = d
			}
			if limits == nil {
				limits = make([][]int32, len(m.Nodes))
			}
			for int(d) >= len(limits[n]) {
				limits[n] = append(limits[n], -1)
			}
			limits[n][d] = int32(min(lim, math.MaxInt32))
		}
	}
	if limits == nil {
		return
	}
	x := &csiModel{
		translator: csitrans.New(), drivers: drivers, limits: limits,
		attached: make([]map[string]int32, len(m.Nodes)), count: make([][]int32, len(m.Nodes)),
		nodesOf: map[string][]int32{},
	}
	m.csi = x
	for k, p := range m.pods {
		if len(p.Spec.Volumes) == 0 {
			continue
		}
		n := m.podNode[k]
		for _, v := range m.csiVolumesOf(p) {
			a := x.attached[n]
			if a == nil {
				a = map[string]int32{}
				x.attached[n] = a
			}
			if a[v.name] == 0 {
				for int(v.driver) >= len(x.count[n]) {
					x.count[n] = append(x.count[n], 0)
				}
				x.count[n][v.driver]++
				x.nodesOf[v.name] = append(x.nodesOf[v.name], n)
			}
			a[v.name]++
		}
	}
}

// csiVolumesOf returns the distinct volumes of pod p that NodeVolumeLimits counts and whose
// driver has a limit on some node (filterAttachableVolumes): a claim's (or a generic ephemeral
// volume's claim's) bound PersistentVolume with a CSI source, or with an in-tree source CSI
// migration translates (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx; csi-translation-lib), and
// inline in-tree volumes of those plugins, translated. Unbound claims are not counted: the
// scheduler finds their driver through their StorageClass, which the snapshot does not hold.
// Claims and volumes missing from the snapshot are not counted.
func (m *Model) csiVolumesOf(p *corev1.Pod) []csiVolume {
	x := m.csi
	var out []csiVolume
	add := func(driver, handle string) {
		d, ok := x.drivers[driver]
		if !ok || handle == "" {
			return
		}
		v := csiVolume{d, driver + "/" + handle}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	logger := klog.Background()
	for k := range p.Spec.Volumes {
		vol := &p.Spec.Volumes[k]
		var claim string
		switch {
		case vol.PersistentVolumeClaim != nil:
			claim = vol.PersistentVolumeClaim.ClaimName
		case vol.Ephemeral != nil:
			claim = ephemeral.VolumeClaimName(p, vol)
		default:
			if !x.translator.IsInlineMigratable(vol) {
				continue
			}
			plugin, err := x.translator.GetInTreePluginNameFromSpec(nil, vol)
			if err != nil || !csiMigrationOn(plugin) {
				continue
			}
			pv, err := x.translator.TranslateInTreeInlineVolumeToCSI(logger, vol, p.Namespace)
			if err != nil || pv == nil || pv.Spec.CSI == nil {
				continue
			}
			driver, err := x.translator.GetCSINameFromInTreeName(plugin)
			if err == nil {
				add(driver, pv.Spec.CSI.VolumeHandle)
			}
			continue
		}
		pvc := m.pvcs[p.Namespace+"/"+claim]
		if pvc == nil || pvc.Spec.VolumeName == "" {
			continue
		}
		pv := m.pvs[pvc.Spec.VolumeName]
		if pv == nil {
			continue
		}
		src := pv.Spec.CSI
		if src == nil {
			if !x.translator.IsPVMigratable(pv) {
				continue
			}
			plugin, err := x.translator.GetInTreePluginNameFromSpec(pv, nil)
			if err != nil || !csiMigrationOn(plugin) {
				continue
			}
			csiPV, err := x.translator.TranslateInTreePVToCSI(logger, pv)
			if err != nil || csiPV.Spec.CSI == nil {
				continue
			}
			src = csiPV.Spec.CSI
		}
		add(src.Driver, src.VolumeHandle)
	}
	return out
}

// csiMigrationOn is NodeVolumeLimits' isCSIMigrationOn for a node with a CSINode (the only nodes
// with limits): the in-tree plugins whose migration v1.36 turns on.
func csiMigrationOn(plugin string) bool {
	switch plugin {
	case csiplugins.AWSEBSInTreePluginName, csiplugins.PortworxVolumePluginName, csiplugins.GCEPDInTreePluginName,
		csiplugins.AzureDiskInTreePluginName, csiplugins.CinderInTreePluginName:
		return true
	}
	return false
}

// nodeVolume is one volume on one node.
type nodeVolume struct {
	node int32
	name string
}

// csiIndex is what NodeVolumeLimits needs for one cluster, built on first use: per driver the
// members use (a slot each) and node, the limit minus the distinct volumes of that driver the
// non-members attach (unlimited: math.MaxInt32), and the (node, volume) pairs where a member's
// volume is attached by a non-member too (not new there).
type csiIndex struct {
	drivers []int32
	free    [][]int32 // slot → node
	shared  map[nodeVolume]bool
}

// buildCSIIndex builds c.csiIdx from the members' specs and the model's attachments.
func (c *Cluster) buildCSIIndex() {
	m := c.model
	x := &csiIndex{}
	// Uses of each volume by the members bound in the snapshot, per node, and its driver.
	memberUses := map[nodeVolume]int32{}
	driverOf := map[string]int32{}
	for _, mem := range c.Members {
		if mem.Node >= 0 && !mem.Terminating {
			for _, v := range mem.cur.csi {
				memberUses[nodeVolume{int32(mem.Node), v.name}]++
				driverOf[v.name] = v.driver
			}
		}
		for _, s := range [2]*podSpec{mem.cur, mem.next} {
			for _, v := range s.csi {
				if !slices.Contains(x.drivers, v.driver) {
					x.drivers = append(x.drivers, v.driver)
				}
			}
		}
	}
	mc := m.csi
	x.free = make([][]int32, len(x.drivers))
	for k, d := range x.drivers {
		free := make([]int32, len(m.Nodes))
		for n := range m.Nodes {
			free[n] = math.MaxInt32
			if lim := mc.limits[n]; int(d) < len(lim) && lim[d] >= 0 {
				var attached int32
				if int(d) < len(mc.count[n]) {
					attached = mc.count[n][d]
				}
				free[n] = lim[d] - attached
			}
		}
		x.free[k] = free
	}
	// A volume only members attach to a node is not the non-members'.
	for nv, uses := range memberUses {
		if mc.attached[nv.node][nv.name] == uses {
			if k := slices.Index(x.drivers, driverOf[nv.name]); k >= 0 && x.free[k][nv.node] != math.MaxInt32 {
				x.free[k][nv.node]++
			}
		}
	}
	for _, mem := range c.Members {
		for _, s := range [2]*podSpec{mem.cur, mem.next} {
			for _, v := range s.csi {
				for _, n := range mc.nodesOf[v.name] {
					nv := nodeVolume{n, v.name}
					if mc.attached[n][v.name] > memberUses[nv] {
						if x.shared == nil {
							x.shared = map[nodeVolume]bool{}
						}
						x.shared[nv] = true
					}
				}
			}
		}
	}
	c.csiIdx = x
}

// addCSIVolumes records the volumes of another member, placed on node nj with spec sj, whose
// driver the incoming pod uses (NodeVolumeLimits counts the volumes of every pod on the node).
func (f *fitter) addCSIVolumes(nj int, sj *podSpec) {
	for _, v := range sj.csi {
		if !slices.ContainsFunc(f.spec.csi, func(w csiVolume) bool { return w.driver == v.driver }) {
			continue
		}
		if f.csiAt == nil {
			f.csiAt = map[int][]csiVolume{}
		}
		if at := f.csiAt[nj]; !slices.Contains(at, v) {
			f.csiAt[nj] = append(at, v)
		}
	}
}

// volumeLimitsFit is NodeVolumeLimits' Filter on node n: for each driver of the incoming pod's
// volumes with a limit on the node, the volumes new to the node (attached by no pod there) plus
// the distinct volumes attached there (non-members' and other members') stay within the limit.
// A driver none of whose volumes is new is not checked.
func (f *fitter) volumeLimitsFit(n int) bool {
	x := f.c.csiIdx
	at := f.csiAt[n]
	for k, d := range x.drivers {
		free := x.free[k][n]
		if free == math.MaxInt32 {
			continue
		}
		newVols, members := 0, int32(0)
		for _, v := range f.spec.csi {
			if v.driver == d && !x.isShared(n, v.name) && !slices.Contains(at, v) {
				newVols++
			}
		}
		if newVols == 0 {
			continue
		}
		for _, v := range at {
			if v.driver == d && !x.isShared(n, v.name) {
				members++
			}
		}
		if members+int32(newVols) > free {
			return false
		}
	}
	return true
}

// driversOrNil returns the drivers' slots, none for a nil index.
func (x *csiIndex) driversOrNil() []int32 {
	if x == nil {
		return nil
	}
	return x.drivers
}

// isShared reports whether a non-member attaches volume name to node n.
func (x *csiIndex) isShared(n int, name string) bool {
	return x.shared != nil && x.shared[nodeVolume{int32(n), name}]
}
