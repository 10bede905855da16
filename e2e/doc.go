// Package e2e holds the end-to-end tests: redis-rebalancer's commands run against a real
// control plane with kwok nodes and real redis-servers, set up by e2e/harness from
// test/scenario's scenarios: the success paths (rebalance_test.go; Bitnami's and OT's layouts in
// layouts_test.go), MasterQuorum against lost nodes (masterquorum_test.go), leader election and
// graceful stops (serve_test.go), the deploy/ manifests applied and run under their own
// ServiceAccount (deploy_test.go), the descheduler built with the RedisClusterBalance plugin
// (descheduler_plugin_test.go, hack/descheduler-plugin: the Lease, its --dry-run), nodes being
// emptied never failover targets (cordoned_test.go), the fault matrix (faults_test.go,
// maintenance windows in windows_test.go) and the test bed's own check (testbed_test.go).
//
// main_test.go describes the structure: one shared test bed, a namespace per test, the CLI as a
// child process. The package owns no support code (it is all in e2e/harness); its tests may
// import e2e/harness, the product packages they drive (cmd/redis-rebalancer/app, policies,
// rebalancer, redisctl) and the test-support layer (test/scenario, test/redistest).
package e2e
