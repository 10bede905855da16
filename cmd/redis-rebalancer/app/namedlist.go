package app

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
)

// namedLists returns a copy of cfg whose list and watch requests on the collections of names
// (a collection's path, "/api/v1/namespaces/NS/secrets", to the one object's name) carry a
// metadata.name field selector for that name. The API server then authorizes them as requests
// for that object (RBAC resourceNames), and the caller's cache holds that object alone.
//
// open-policy-agent/cert-controller's rotator builds its cache from the manager's configuration
// with no option to narrow it: through this configuration its Secret and webhook configuration
// informers list and watch the guard's own objects only, so that the RBAC of a self-issued
// certificate grants list and watch by name (deploy/README.md), never every Secret of the
// namespace.
func namedLists(cfg *rest.Config, names map[string]string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &nameSelector{next: rt, names: names} })
	return cfg
}

// nameSelector adds the metadata.name field selector to the GETs of its collections.
type nameSelector struct {
	next  http.RoundTripper
	names map[string]string
}

// RoundTrip sends req, with the field selector added when it lists or watches one of the
// collections (a GET of the collection's path itself, not of an object in it).
func (s *nameSelector) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return s.next.RoundTrip(req)
	}
	for collection, name := range s.names {
		if !strings.HasSuffix(req.URL.Path, collection) {
			continue
		}
		req = req.Clone(req.Context())
		q := req.URL.Query()
		sel := fields.OneTermEqualSelector("metadata.name", name).String()
		if prev := q.Get("fieldSelector"); prev != "" {
			sel = prev + "," + sel
		}
		q.Set("fieldSelector", sel)
		req.URL.RawQuery = q.Encode()
		break
	}
	return s.next.RoundTrip(req)
}
