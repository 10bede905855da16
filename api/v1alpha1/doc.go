// Package v1alpha1 is version v1alpha1 of RebalancerPolicy, the file that configures
// redis-rebalancer (group rebalancer.redis.io). Like the descheduler's DeschedulerPolicy
// (sigs.k8s.io/descheduler/pkg/api/v1alpha2) it is read from a file or a ConfigMap and never
// served by the API server.
//
// It owns the types (types.go), their defaults (defaults.go: the one place every default value is
// written), their validation (validation.go, with the text forms the engine reads the same way:
// ParseShardSource, ParseWindowSchedule), the layouts (layouts.go), the scheme registration
// (register.go) and the loading of a policy file (load.go): strict decoding (an unknown field is
// an error naming its path), then validation with every error reported at once, then defaults.
// zz_generated.deepcopy.go is written by deepcopy-gen; zz_generated.default.yaml (the commented
// complete policy `redis-rebalancer policy default` prints) and docs/policy.md are written by
// hack/gendocs from the types' doc comments.
//
// It is the ground floor: it imports Kubernetes API machinery (k8s.io/apimachinery,
// sigs.k8s.io/yaml), robfig/cron/v3 and the standard library, and no package of this module. The
// engine packages import it, never the reverse, as the descheduler's plugins import its pkg/api:
// policies, rebalancer/plan, rebalancer/execute, rebalancer/window and redisctl take the
// defaults of their own zero values from it; the command line converts a policy into each
// engine package's config.
//
// +k8s:deepcopy-gen=package
// +groupName=rebalancer.redis.io
package v1alpha1

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.36.1 --output-file zz_generated.deepcopy.go --go-header-file /dev/null .
//go:generate go run ../../hack/gendocs
