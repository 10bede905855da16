package policies

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// needsDiskCheck is VolumeRestrictions' needsRestrictionsCheck: the inline volume types whose
// disks two pods of one node may not share (GCE PD, AWS EBS, RBD, iSCSI).
func needsDiskCheck(v *corev1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

// diskVolumesOf returns the pod's volumes that need the disk check, nil when none.
func diskVolumesOf(p *corev1.Pod) []corev1.Volume {
	var out []corev1.Volume
	for k := range p.Spec.Volumes {
		if needsDiskCheck(&p.Spec.Volumes[k]) {
			out = append(out, p.Spec.Volumes[k])
		}
	}
	return out
}

// diskConflict is VolumeRestrictions' isVolumeConflict: volume v of the incoming pod and one of
// the volumes of a pod on the node name the same disk: the same GCE PD name unless both mount it
// read-only, the same AWS EBS volume ID, the same iSCSI IQN unless both are read-only, an RBD
// image of the same pool with a monitor in common unless both are read-only.
func diskConflict(v *corev1.Volume, existing []corev1.Volume) bool {
	for k := range existing {
		e := &existing[k]
		if v.GCEPersistentDisk != nil && e.GCEPersistentDisk != nil {
			if v.GCEPersistentDisk.PDName == e.GCEPersistentDisk.PDName && !(v.GCEPersistentDisk.ReadOnly && e.GCEPersistentDisk.ReadOnly) {
				return true
			}
		}
		if v.AWSElasticBlockStore != nil && e.AWSElasticBlockStore != nil {
			if v.AWSElasticBlockStore.VolumeID == e.AWSElasticBlockStore.VolumeID {
				return true
			}
		}
		if v.ISCSI != nil && e.ISCSI != nil {
			if v.ISCSI.IQN == e.ISCSI.IQN && !(v.ISCSI.ReadOnly && e.ISCSI.ReadOnly) {
				return true
			}
		}
		if v.RBD != nil && e.RBD != nil {
			a, b := v.RBD, e.RBD
			if a.RBDPool == b.RBDPool && a.RBDImage == b.RBDImage && !(a.ReadOnly && b.ReadOnly) &&
				slices.ContainsFunc(a.CephMonitors, func(m string) bool { return slices.Contains(b.CephMonitors, m) }) {
				return true
			}
		}
	}
	return false
}

// disksConflict reports whether any of the incoming pod's disk volumes conflicts with a volume
// of pod other (VolumeRestrictions' satisfyVolumeConflicts, negated, for one pod of the node).
func disksConflict(disks []corev1.Volume, other *corev1.Pod) bool {
	for k := range disks {
		if diskConflict(&disks[k], other.Spec.Volumes) {
			return true
		}
	}
	return false
}

// diskMask returns, per node, whether a scheduled pod that is not a member of c uses a disk that
// one of disks names (the members are counted where the placement puts them). nil when none.
func (c *Cluster) diskMask(disks []corev1.Volume) []bool {
	m := c.model
	var mask []bool
	for _, k := range m.diskPods {
		op := m.pods[k]
		if c.memberOf(op) || !disksConflict(disks, op) {
			continue
		}
		if mask == nil {
			mask = make([]bool, len(m.Nodes))
		}
		mask[m.podNode[k]] = true
	}
	return mask
}

// readWriteOncePodClaims returns the names of the pod's PersistentVolumeClaims whose access modes
// include ReadWriteOncePod (VolumeRestrictions' readWriteOncePodPVCsForPod), nil when none.
// Claims missing from the snapshot do not restrict.
func (m *Model) readWriteOncePodClaims(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := m.pvcs[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName]
		if pvc != nil && slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOncePod) && !slices.Contains(out, pvc.Name) {
			out = append(out, pvc.Name)
		}
	}
	return out
}

// usesClaim reports whether pod p mounts PersistentVolumeClaim claim of its namespace.
func usesClaim(p *corev1.Pod, claim string) bool {
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

// claimInUse reports whether a scheduled pod that is not a member of c mounts one of the claims
// of namespace ns (StorageInfos().IsPVCUsedByPods, the members left out: they are counted where
// the placement puts them).
func (c *Cluster) claimInUse(ns string, claims []string) bool {
	m := c.model
	for _, k := range m.podsInNS[ns] {
		op := m.pods[k]
		if c.memberOf(op) {
			continue
		}
		for _, claim := range claims {
			if usesClaim(op, claim) {
				return true
			}
		}
	}
	return false
}

// addVolumeRestrictions counts another member, placed on node nj with spec sj, as
// VolumeRestrictions' PreFilter and AddPod count an existing pod: a node where it uses a disk of
// the incoming pod, and whether it mounts one of the incoming pod's ReadWriteOncePod claims (on
// any node).
func (f *fitter) addVolumeRestrictions(nj int, sj *podSpec) {
	s := f.spec
	if s.disks != nil && disksConflict(s.disks, sj.podOf()) {
		f.diskNodes = append(f.diskNodes, nj)
	}
	if s.rwop != nil && sj.namespace() == s.namespace() {
		for _, claim := range s.rwop {
			if usesClaim(sj.podOf(), claim) {
				f.rwopInUse = true
			}
		}
	}
}

// volumeRestrictionsFit is VolumeRestrictions' Filter on node n: no pod of the node uses one of
// the incoming pod's disks (reasonDiskConflict), then no pod anywhere mounts one of its
// ReadWriteOncePod claims (reasonReadWriteOncePod).
func (f *fitter) volumeRestrictionsFit(n int) reasonCode {
	s := f.spec
	if s.diskMask != nil && s.diskMask[n] || slices.Contains(f.diskNodes, n) {
		return reasonDiskConflict
	}
	if s.rwopInUse || f.rwopInUse {
		return reasonReadWriteOncePod
	}
	return fitOK
}
