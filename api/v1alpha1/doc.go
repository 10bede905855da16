// Package v1alpha1 is version v1alpha1 of RebalancerPolicy, the file that configures
// redis-rebalancer (group rebalancer.redis.io). Like the descheduler's DeschedulerPolicy
// (sigs.k8s.io/descheduler/pkg/api/v1alpha2) it is read from a file or a ConfigMap and never
// served by the API server.
//
// It owns the types (types.go), their defaults (defaults.go: the one place every default of the
// command line is written), their validation (validation.go), the scheme registration
// (register.go) and the loading of a policy file (load.go): strict decoding (an unknown field is
// an error naming its path), then validation with every error reported at once, then defaults.
// zz_generated.deepcopy.go is written by deepcopy-gen; zz_generated.default.yaml (the commented
// complete policy `redis-rebalancer policy default` prints) and docs/policy.md are written by
// hack/gendocs from the types' doc comments. It imports the packages whose Default… constants it
// uses (policies, rebalancer/plan, rebalancer/execute, rebalancer/window, redisctl) and
// apimachinery; only the command line and hack/gendocs import it.
//
// +k8s:deepcopy-gen=package
// +groupName=rebalancer.redis.io
package v1alpha1

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.36.1 --output-file zz_generated.deepcopy.go --go-header-file /dev/null .
//go:generate go run ../../hack/gendocs
