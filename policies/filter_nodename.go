package policies

// nodeNameFits is NodeName's Filter: a pod that names a node in spec.nodeName fits that node
// only; one that names none fits any. The filter applies it to re-creation templates (a
// StatefulSet template may name a node; the pod is then created bound to it); a running pod's
// nodeName is where it runs, not a constraint, and a Pending pod names none. staticMask folds it
// into the node-level checks.
func nodeNameFits(nodeName, node string) bool {
	return nodeName == "" || nodeName == node
}
