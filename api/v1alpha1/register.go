package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// GroupName is the API group of the policy: the project's own, since the policy is a file and
// not a resource served by the API server.
const GroupName = "rebalancer.redis.io"

// Kind is the policy's kind.
const Kind = "RebalancerPolicy"

// SchemeGroupVersion is the group and version of the types of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var (
	// SchemeBuilder registers the types and their defaulting function.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, addDefaultingFuncs)
	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// scheme and codecs decode policy files: the scheme knows RebalancerPolicy only, and the codecs
// are strict (an unknown or duplicate field is a strict decoding error naming its path).
var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() {
	utilruntime.Must(AddToScheme(scheme))
}

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &RebalancerPolicy{})
	return nil
}

// addDefaultingFuncs registers SetDefaults, as defaulter-gen would.
func addDefaultingFuncs(s *runtime.Scheme) error {
	s.AddTypeDefaultingFunc(&RebalancerPolicy{}, func(obj interface{}) { SetDefaults(obj.(*RebalancerPolicy)) })
	return nil
}
