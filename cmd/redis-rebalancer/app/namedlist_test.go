package app

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"
)

// recorder is a RoundTripper that records the URLs it is sent.
type recorder struct{ urls []string }

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.Method+" "+req.URL.RequestURI())
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// TestNamedLists: the lists and watches of the named collections carry a metadata.name field
// selector (joined to one already there); a GET of one object, another collection and writes go
// as they were.
func TestNamedLists(t *testing.T) {
	rec := &recorder{}
	cfg := namedLists(&rest.Config{Host: "https://api.example:6443"}, map[string]string{
		"/api/v1/namespaces/rr/secrets":                                         "guard-tls",
		"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations": "guard",
	})
	rt := cfg.WrapTransport(rec)
	for _, c := range []struct{ method, url string }{
		{http.MethodGet, "/api/v1/namespaces/rr/secrets?limit=500&resourceVersion=0"},
		{http.MethodGet, "/api/v1/namespaces/rr/secrets?watch=true&fieldSelector=type%3DOpaque"},
		{http.MethodGet, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?watch=true"},
		{http.MethodGet, "/api/v1/namespaces/rr/secrets/guard-tls"},
		{http.MethodGet, "/api/v1/namespaces/other/secrets"},
		{http.MethodPut, "/api/v1/namespaces/rr/secrets/guard-tls"},
	} {
		req, err := http.NewRequest(c.method, "https://api.example:6443"+c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"GET /api/v1/namespaces/rr/secrets?fieldSelector=metadata.name%3Dguard-tls&limit=500&resourceVersion=0",
		"GET /api/v1/namespaces/rr/secrets?fieldSelector=type%3DOpaque%2Cmetadata.name%3Dguard-tls&watch=true",
		"GET /apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?fieldSelector=metadata.name%3Dguard&watch=true",
		"GET /api/v1/namespaces/rr/secrets/guard-tls",
		"GET /api/v1/namespaces/other/secrets",
		"PUT /api/v1/namespaces/rr/secrets/guard-tls",
	}
	if diff := cmp.Diff(want, rec.urls); diff != "" {
		t.Errorf("requests sent (-want +got):\n%s", diff)
	}
}
