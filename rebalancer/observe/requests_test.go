package observe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestRequestOf(t *testing.T) {
	for _, tc := range []struct {
		name, method, path  string
		watch               bool
		wantVerb, wantResrc string
	}{
		{name: "cluster-wide list of pods → list pods", method: "GET", path: "/api/v1/pods", wantVerb: "list", wantResrc: "pods"},
		{name: "list of a namespace's pods → list pods", method: "GET", path: "/api/v1/namespaces/redis/pods", wantVerb: "list", wantResrc: "pods"},
		{name: "one pod → get pods", method: "GET", path: "/api/v1/namespaces/redis/pods/redis-s0-0", wantVerb: "get", wantResrc: "pods"},
		{name: "watch → watch", method: "GET", path: "/api/v1/namespaces/redis/pods", watch: true, wantVerb: "watch", wantResrc: "pods"},
		{name: "eviction → create pods/eviction", method: "POST", path: "/api/v1/namespaces/redis/pods/redis-s0-0/eviction", wantVerb: "create", wantResrc: "pods/eviction"},
		{name: "nodes → list nodes", method: "GET", path: "/api/v1/nodes", wantVerb: "list", wantResrc: "nodes"},
		{name: "a namespace → get namespaces", method: "GET", path: "/api/v1/namespaces/redis", wantVerb: "get", wantResrc: "namespaces"},
		{name: "namespaces → list namespaces", method: "GET", path: "/api/v1/namespaces", wantVerb: "list", wantResrc: "namespaces"},
		{name: "group resource → resource.group", method: "GET", path: "/apis/apps/v1/statefulsets", wantVerb: "list", wantResrc: "statefulsets.apps"},
		{name: "group subresource → resource.group/sub", method: "PUT", path: "/apis/apps/v1/namespaces/r/statefulsets/s/scale", wantVerb: "update", wantResrc: "statefulsets.apps/scale"},
		{name: "event → create events.events.k8s.io", method: "POST", path: "/apis/events.k8s.io/v1/namespaces/redis/events", wantVerb: "create", wantResrc: "events.events.k8s.io"},
		{name: "patch → patch", method: "PATCH", path: "/api/v1/namespaces/r/pods/p", wantVerb: "patch", wantResrc: "pods"},
		{name: "delete one → delete", method: "DELETE", path: "/api/v1/namespaces/r/pods/p", wantVerb: "delete", wantResrc: "pods"},
		{name: "delete all → deletecollection", method: "DELETE", path: "/api/v1/namespaces/r/pods", wantVerb: "deletecollection", wantResrc: "pods"},
		{name: "discovery → get on its path", method: "GET", path: "/apis", wantVerb: "get", wantResrc: "/apis"},
		{name: "group discovery → get on its path", method: "GET", path: "/apis/policy/v1", wantVerb: "get", wantResrc: "/apis/policy/v1"},
		{name: "version → get on its path", method: "GET", path: "/version", wantVerb: "get", wantResrc: "/version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verb, res := RequestOf(tc.method, tc.path, tc.watch)
			if verb != tc.wantVerb || res != tc.wantResrc {
				t.Errorf("RequestOf(%s %s) = %s %s, want %s %s", tc.method, tc.path, verb, res, tc.wantVerb, tc.wantResrc)
			}
		})
	}
}

// TestRequestCounter counts the requests of a real client-go client through an HTTP server.
func TestRequestCounter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			_, _ = w.Write([]byte(`{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`))
		default:
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	c := NewRequestCounter()
	c.Wrap(cfg)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if _, err := client.CoreV1().Pods("redis").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_ = client.PolicyV1().Evictions("redis").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "redis"}})
	want := []APIRequests{{Verb: "list", Resource: "pods", Count: 2}, {Verb: "create", Resource: "pods/eviction", Count: 1}}
	if diff := cmp.Diff(want, c.Counts()); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
}
