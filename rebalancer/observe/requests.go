package observe

import (
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// APIRequests is how many requests of one verb a run made on one resource (a run report's
// apiRequests).
type APIRequests struct {
	// Verb is the API verb, as kube-apiserver's audit log and metrics name it: get, list, watch,
	// create, update, patch, delete, deletecollection.
	Verb string `json:"verb"`
	// Resource is the resource as kubectl names it, "resource[.group][/subresource]": "pods",
	// "pods/eviction", "statefulsets.apps", "events.events.k8s.io"; for a request outside the
	// resource API (discovery, /version), its path ("/apis").
	Resource string `json:"resource"`
	// Count is the number of requests, retries included.
	Count int `json:"count"`
}

// RequestCounter counts the requests made through the rest.Config it wraps (Wrap), by verb and
// resource. It is safe for concurrent use.
type RequestCounter struct {
	mu     sync.Mutex
	counts map[[2]string]int
}

// NewRequestCounter returns a counter with no request counted.
func NewRequestCounter() *RequestCounter {
	return &RequestCounter{counts: map[[2]string]int{}}
}

// Wrap makes every client built from cfg afterwards count its requests in c (rest.Config.Wrap).
func (c *RequestCounter) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			verb, resource := RequestOf(r.Method, r.URL.Path, r.URL.Query().Get("watch") == "true")
			c.mu.Lock()
			c.counts[[2]string{verb, resource}]++
			c.mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Count returns the number of requests of verb on resource.
func (c *RequestCounter) Count(verb, resource string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[[2]string{verb, resource}]
}

// Counts returns every count, by resource and then verb.
func (c *RequestCounter) Counts() []APIRequests {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]APIRequests, 0, len(c.counts))
	for k, n := range c.counts {
		out = append(out, APIRequests{Verb: k[0], Resource: k[1], Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Resource != out[j].Resource {
			return out[i].Resource < out[j].Resource
		}
		return out[i].Verb < out[j].Verb
	})
	return out
}

// RequestOf returns the verb and resource of a request to kube-apiserver, read from its method
// and path as the API server's request info resolver reads them
// (k8s.io/apiserver/pkg/endpoints/request.RequestInfoFactory): /api/v1/... and
// /apis/GROUP/VERSION/..., then optionally namespaces/NAMESPACE, then RESOURCE[/NAME[/SUBRESOURCE]].
// A request outside the resource API counts as its method's verb on its path.
func RequestOf(method, path string, watch bool) (verb, resource string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		group, parts = parts[1], parts[3:]
	default:
		return strings.ToLower(method), path
	}
	// namespaces/NAME/RESOURCE... is a namespaced resource; namespaces[/NAME[/SUB]] the
	// namespaces themselves.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	resource = parts[0]
	if group != "" {
		resource += "." + group
	}
	named := len(parts) >= 2
	if len(parts) >= 3 {
		resource = parts[0] + "/" + parts[2]
		if group != "" {
			resource = parts[0] + "." + group + "/" + parts[2]
		}
	}
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch:
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	default:
		verb = strings.ToLower(method)
	}
	return verb, resource
}

// Since returns the counts of now (Counts) minus those of before (an earlier Counts of the same
// counter): the requests made in between, without the verbs and resources that made none.
func Since(now, before []APIRequests) []APIRequests {
	prev := map[[2]string]int{}
	for _, r := range before {
		prev[[2]string{r.Verb, r.Resource}] = r.Count
	}
	out := []APIRequests{}
	for _, r := range now {
		if n := r.Count - prev[[2]string{r.Verb, r.Resource}]; n > 0 {
			out = append(out, APIRequests{Verb: r.Verb, Resource: r.Resource, Count: n})
		}
	}
	return out
}
