package policies_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// TestObjectsWalksEverySnapshotList fills every list of a Snapshot (found by reflection, so that
// a new list fails here until Objects walks it) with two objects and checks that Objects yields
// each once, with its own kind, in the documented order of kinds; and that a walk stopped early
// stops.
func TestObjectsWalksEverySnapshotList(t *testing.T) {
	var snap policies.Snapshot
	v := reflect.ValueOf(&snap).Elem()
	var want []string
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Pointer {
			t.Fatalf("Snapshot.%s is not a list of API objects", v.Type().Field(i).Name)
		}
		elem := f.Type().Elem().Elem()
		for k := 0; k < 2; k++ {
			o := reflect.New(elem)
			name := fmt.Sprintf("%s-%d", elem.Name(), k)
			o.Interface().(metav1.Object).SetName(name)
			f.Set(reflect.Append(f, o))
			want = append(want, elem.Name()+" "+name)
		}
	}
	var got, kinds []string
	for gvk, o := range snap.Objects() {
		if typ := reflect.TypeOf(o).Elem().Name(); typ != gvk.Kind {
			t.Errorf("%s yielded with kind %s", typ, gvk.Kind)
		}
		if gvk.Version != "v1" {
			t.Errorf("%s yielded with version %q, want v1", gvk.Kind, gvk.Version)
		}
		got = append(got, gvk.Kind+" "+o.GetName())
		if len(kinds) == 0 || kinds[len(kinds)-1] != gvk.Kind {
			kinds = append(kinds, gvk.Kind)
		}
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))); diff != "" {
		t.Errorf("objects (-snapshot +Objects):\n%s", diff)
	}
	wantKinds := []string{"Namespace", "Node", "PersistentVolume", "CSINode", "PersistentVolumeClaim", "StatefulSet", "PodDisruptionBudget", "Service", "Pod"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("order of kinds (-want +got):\n%s", diff)
	}
	n := 0
	for range snap.Objects() {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Errorf("a walk stopped after 3 objects yielded %d", n)
	}
}
