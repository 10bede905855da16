package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/redis-rebalancer/redis-rebalancer/e2e/harness"
	"github.com/redis-rebalancer/redis-rebalancer/e2e/localcluster"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/report"
	"github.com/redis-rebalancer/redis-rebalancer/test/doctable"
	"github.com/redis-rebalancer/redis-rebalancer/test/fixture"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// outcomeRow is a row of docs/operations.md's outcome table: an outcome, run's exit status for
// it, and the Job status a Job of deploy/ gets from that exit status.
type outcomeRow struct {
	outcome report.Outcome
	exit    int
	// jobCondition is the Job's terminal condition (Complete or Failed) and jobReason the
	// condition's reason ("" for Complete).
	jobCondition batchv1.JobConditionType
	jobReason    string
}

// outcomeTable reads docs/operations.md's outcome table.
func outcomeTable(t *testing.T) []outcomeRow {
	t.Helper()
	rows, err := doctable.Read(repoPath("docs/operations.md"), "outcomes")
	if err != nil {
		t.Fatal(err)
	}
	var out []outcomeRow
	for _, r := range rows {
		exit, err := strconv.Atoi(r["exit status"])
		if err != nil {
			t.Fatalf("outcome %s: exit status %q: %v", r["outcome"], r["exit status"], err)
		}
		cond, reason, _ := strings.Cut(r["Job status"], " ")
		out = append(out, outcomeRow{
			outcome: report.Outcome(r["outcome"]), exit: exit,
			jobCondition: batchv1.JobConditionType(cond), jobReason: strings.Trim(reason, "(`)"),
		})
	}
	return out
}

// TestJobOutcomes checks docs/operations.md's outcome table on the local control plane, row by
// row: a real `run` on the post-scale-down scenario ends with the row's outcome and exit status,
// then a Job of deploy/overlays/job (its podFailurePolicy and backoffLimit as rendered) whose pod
// exits with that status ends with the row's Job status, applied by the Job controller; and a
// CronJob of deploy/overlays/cronjob does the same for 0 and 3. The runs, in order: a dry run; a
// run outside the only window; a run while another holder keeps the Lease; a run pointed at a
// Redis port nothing listens on (error); a run that every PodDisruptionBudget refuses
// (needsAttention); then, budgets restored, the run that fixes the cluster (compliant). The
// progressing row (a budget spent, a graceful stop) is TestRunGracefulStop's run; its Job is
// checked here with the table's exit status.
func TestJobOutcomes(t *testing.T) {
	b := bed(t)
	t.Parallel()
	env := b.SetupForTest(t, scenario.PostScaleDown(), harness.Options{})
	ctx := t.Context()
	client := env.Client()
	rows := outcomeTable(t)

	now := time.Now().UTC()
	closedWindow := fmt.Sprintf("0 %d * * *|1h", (now.Hour()+12)%24)
	exits := map[report.Outcome]int{}
	realRun := func(want report.Outcome, extra ...string) {
		t.Helper()
		run := startCLI(t, nil, runArgs(env, extra...)...)
		code := run.wait(4 * time.Minute)
		rep := run.report()
		if rep.Outcome != want {
			t.Errorf("run %v: outcome %s (%s), want %s", extra, rep.Outcome, rep.Error, want)
		}
		if want == report.OutcomeError && rep.Error == "" {
			t.Errorf("run %v: a failed run's report has no error", extra)
		}
		exits[want] = code
	}

	realRun(report.OutcomeDryRun, "--dry-run")
	realRun(report.OutcomeOutsideWindow, "--window", closedWindow)

	// Another process holds the Lease of env's namespace (runArgs; the run outside the window
	// created it and released it) for an hour.
	leases := client.CoordinationV1().Leases(env.Namespace)
	l, err := leases.Get(ctx, "redis-rebalancer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	renewed := metav1.NewMicroTime(time.Now())
	l.Spec = coordinationv1.LeaseSpec{
		HolderIdentity: ptr.To("another-rebalancer"), LeaseDurationSeconds: ptr.To(int32(3600)),
		AcquireTime: &renewed, RenewTime: &renewed,
	}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	realRun(report.OutcomeLeaseHeld, "--lease-wait", "1s")
	if err := client.CoordinationV1().Leases(env.Namespace).Delete(ctx, "redis-rebalancer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	realRun(report.OutcomeError, "--redis-port", strconv.Itoa(env.Port+1000))

	pdbs, err := client.PolicyV1().PodDisruptionBudgets(env.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setBudgets := func(maxUnavailable int32) {
		t.Helper()
		for _, p := range pdbs.Items {
			cur, err := client.PolicyV1().PodDisruptionBudgets(env.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(maxUnavailable))
			if _, err := client.PolicyV1().PodDisruptionBudgets(env.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitPDBs(t, env, len(pdbs.Items), func(p *policyv1.PodDisruptionBudget) bool {
			return p.Status.ObservedGeneration == p.Generation && (p.Status.DisruptionsAllowed == 0) == (maxUnavailable == 0)
		})
	}
	setBudgets(0)
	realRun(report.OutcomeNeedsAttention)
	setBudgets(1)
	realRun(report.OutcomeCompliant)

	for _, r := range rows {
		if code, ok := exits[r.outcome]; ok && code != r.exit {
			t.Errorf("outcome %s: run exited %d, the table says %d", r.outcome, code, r.exit)
		}
	}

	// Jobs and CronJobs of the manifests, whose pods exit with those statuses.
	kustomize := tool(t, "kustomize", "KUSTOMIZE_BIN_DIR", kustomizeVersion)
	job := convert[batchv1.Job](t, workload(t, render(t, kustomize, "build", repoPath("deploy/overlays/job")), "Job"))
	cron := convert[batchv1.CronJob](t, workload(t, render(t, kustomize, "build", repoPath("deploy/overlays/cronjob")), "CronJob"))
	if _, err := client.CoreV1().ServiceAccounts(env.Namespace).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: job.Spec.Template.Spec.ServiceAccountName},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	asKwokPod := func(tpl *corev1.PodTemplateSpec, exit int) {
		tpl.Spec.Tolerations = append(tpl.Spec.Tolerations, fixture.KwokToleration())
		if tpl.Annotations == nil {
			tpl.Annotations = map[string]string{}
		}
		tpl.Annotations[localcluster.PodExitCodeAnnotation] = strconv.Itoa(exit)
	}
	names := map[string]outcomeRow{}
	for _, r := range rows {
		j := job.DeepCopy()
		j.ObjectMeta = metav1.ObjectMeta{Namespace: env.Namespace, Name: "outcome-" + strings.ToLower(string(r.outcome)), Labels: job.Labels}
		exit, real := exits[r.outcome]
		if !real {
			exit = r.exit
		}
		asKwokPod(&j.Spec.Template, exit)
		if _, err := client.BatchV1().Jobs(env.Namespace).Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("Job for %s: %v", r.outcome, err)
		}
		names[j.Name] = r
	}
	cronNames := map[string]outcomeRow{}
	for _, r := range rows {
		if r.outcome != report.OutcomeCompliant && r.outcome != report.OutcomeNeedsAttention {
			continue
		}
		cj := cron.DeepCopy()
		cj.ObjectMeta = metav1.ObjectMeta{Namespace: env.Namespace, Name: "cron-" + strings.ToLower(string(r.outcome)), Labels: cron.Labels}
		cj.Spec.Schedule = "* * * * *" // the next minute
		asKwokPod(&cj.Spec.JobTemplate.Spec.Template, exits[r.outcome])
		if _, err := client.BatchV1().CronJobs(env.Namespace).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("CronJob for %s: %v", r.outcome, err)
		}
		cronNames[cj.Name] = r
	}

	for name, r := range names {
		cond := waitJobFinished(t, env, name, 2*time.Minute)
		t.Logf("Job %s (exit %d): %s %s: %s", name, r.exit, cond.Type, cond.Reason, cond.Message)
		if cond.Type != r.jobCondition || (r.jobReason != "" && cond.Reason != r.jobReason) {
			t.Errorf("outcome %s, exit %d: Job %s ended %s (%s), the table says %s (%s)", r.outcome, r.exit, name, cond.Type, cond.Reason, r.jobCondition, r.jobReason)
		}
	}
	for name, r := range cronNames {
		var jobName string
		err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			cj, err := client.BatchV1().CronJobs(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			jobs, err := client.BatchV1().Jobs(env.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, nil
			}
			for _, j := range jobs.Items {
				if owner := metav1.GetControllerOf(&j); owner != nil && owner.UID == cj.UID {
					jobName = j.Name
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CronJob %s started no Job: %v", name, err)
		}
		cond := waitJobFinished(t, env, jobName, 2*time.Minute)
		t.Logf("CronJob %s's Job %s (exit %d): %s %s", name, jobName, exits[r.outcome], cond.Type, cond.Reason)
		if cond.Type != r.jobCondition || (r.jobReason != "" && cond.Reason != r.jobReason) {
			t.Errorf("outcome %s: CronJob %s's Job ended %s (%s), the table says %s (%s)", r.outcome, name, cond.Type, cond.Reason, r.jobCondition, r.jobReason)
		}
		var cj *batchv1.CronJob
		err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			cj, err = client.BatchV1().CronJobs(env.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			return len(cj.Status.Active) == 0, nil
		})
		if err != nil {
			t.Fatalf("CronJob %s: its Job still active: %v", name, err)
		}
		if succeeded := cj.Status.LastSuccessfulTime != nil; succeeded != (r.jobCondition == batchv1.JobComplete) {
			t.Errorf("CronJob %s: lastSuccessfulTime %v after a Job that ended %s", name, cj.Status.LastSuccessfulTime, cond.Type)
		}
	}
	if missing := slices.DeleteFunc(slices.Collect(maps.Keys(exits)), func(o report.Outcome) bool {
		return slices.ContainsFunc(rows, func(r outcomeRow) bool { return r.outcome == o })
	}); len(missing) > 0 {
		t.Errorf("outcomes run but missing from the table: %v", missing)
	}
}

// workload returns the object of kind among objs.
func workload(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("no %s rendered", kind)
	return nil
}

// waitJobFinished waits until the Job has a terminal condition (Complete or Failed, True) and
// returns it.
func waitJobFinished(t *testing.T, env *harness.Env, name string, timeout time.Duration) batchv1.JobCondition {
	t.Helper()
	var (
		found batchv1.JobCondition
		last  string
	)
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		j, err := env.Client().BatchV1().Jobs(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("%+v", j.Status)
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				found = c
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Job %s did not finish in %s: %v; last status %s", name, timeout, err, last)
	}
	return found
}
