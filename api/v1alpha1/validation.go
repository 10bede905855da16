package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	// Time zones for a schedule's CRON_TZ= prefix even where the system has no zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidateRebalancerPolicy checks p as a file gives it (before defaults) or as flags left it,
// and returns every problem, each with its field path ("limits.maxMovesPerCluster"). A zero value
// means the default and is valid; negative counts and durations, unknown enumeration values
// (selection.layout, failover.mode, windows.stepEstimate, output), a shard source that does not
// parse, owner kinds that are no kind names, cron expressions that do not parse or never fire,
// malformed label keys, selectors and names, and credentials given twice are not. apiVersion and
// kind are the decoder's to check.
func ValidateRebalancerPolicy(p *RebalancerPolicy) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateSelection(&p.Selection, field.NewPath("selection"))...)
	errs = append(errs, validatePlan(&p.Plan, field.NewPath("plan"))...)
	errs = append(errs, validateLimits(&p.Limits, field.NewPath("limits"))...)
	errs = append(errs, validateFailover(&p.Failover, field.NewPath("failover"))...)
	errs = append(errs, validateTimeouts(&p.Timeouts, field.NewPath("timeouts"))...)
	errs = append(errs, validateRedis(&p.Redis, field.NewPath("redis"))...)
	errs = append(errs, validateWindows(&p.Windows, field.NewPath("windows"))...)
	if p.Schedule != "" {
		if _, err := cron.ParseStandard(p.Schedule); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("schedule"), p.Schedule, err.Error()))
		}
	}
	errs = append(errs, validateEnum(field.NewPath("output"), p.Output, OutputText, OutputTable, OutputJSON)...)
	return errs
}

func validateSelection(s *Selection, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	ns := path.Child("namespaces")
	if len(s.Namespaces.Include) > 0 && len(s.Namespaces.Exclude) > 0 {
		errs = append(errs, field.Forbidden(ns, "only one of include and exclude may be set"))
	}
	for _, list := range []struct {
		name  string
		names []string
	}{{"include", s.Namespaces.Include}, {"exclude", s.Namespaces.Exclude}} {
		for i, n := range list.names {
			for _, msg := range validation.IsDNS1123Label(n) {
				errs = append(errs, field.Invalid(ns.Child(list.name).Index(i), n, msg))
			}
		}
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(&s.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, path.Child("labelSelector"))...)
	if s.ClusterLabel != "" {
		errs = append(errs, metav1validation.ValidateLabelName(s.ClusterLabel, path.Child("clusterLabel"))...)
	}
	errs = append(errs, validateEnum(path.Child("layout"), s.Layout, Layouts...)...)
	if s.ShardSource != "" {
		if _, _, err := ParseShardSource(s.ShardSource); err != nil {
			errs = append(errs, field.Invalid(path.Child("shardSource"), s.ShardSource, err.Error()))
		}
	}
	if s.RoleLabel != "" {
		errs = append(errs, metav1validation.ValidateLabelName(s.RoleLabel, path.Child("roleLabel"))...)
	}
	for i, k := range s.RecreatingOwners {
		if !kindName.MatchString(k) {
			errs = append(errs, field.Invalid(path.Child("recreatingOwners").Index(i), k, "must be a kind: a CamelCase name of letters and digits, such as InstanceSet"))
		}
	}
	return errs
}

// ParseShardSource splits selection.shardSource's text form into its source (ShardSourceAuto,
// ShardSourceRedis, ShardSourceOwner or ShardSourceLabel; "" is ShardSourceAuto) and, for
// ShardSourceLabel, the label key. It fails on anything else, naming the choices, and on a KEY
// that is not a label key (a qualified name).
func ParseShardSource(s string) (source, key string, err error) {
	source, key, hasKey := strings.Cut(s, ":")
	switch source {
	case "", ShardSourceAuto, ShardSourceRedis, ShardSourceOwner:
		if hasKey {
			return "", "", fmt.Errorf("shard source %q: only label takes a key", s)
		}
		if source == "" {
			source = ShardSourceAuto
		}
		return source, "", nil
	case ShardSourceLabel:
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			return "", "", fmt.Errorf("shard source %q: label key: %s", s, strings.Join(msgs, "; "))
		}
		return source, key, nil
	}
	return "", "", fmt.Errorf("shard source %q: must be auto, redis, owner or label:KEY", s)
}

// windowScheduleParser is robfig/cron/v3's standard parser (five fields) with descriptors; it
// always accepts the CRON_TZ= and TZ= prefixes.
var windowScheduleParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// windowScheduleReference is the time a window's schedule must fire after (within cron's
// five-year search) to be valid: one that never fires from here never fires at all.
var windowScheduleReference = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseWindowSchedule parses a maintenance window's schedule (windows.windows[].schedule): a
// calendar expression of robfig/cron/v3's standard parser (five fields, or a descriptor such as
// @daily), with an optional CRON_TZ=<IANA zone> prefix (UTC without one). It refuses @every,
// which repeats relative to when a job starts and so opens no window at a fixed time, and an
// expression that never fires. The error does not repeat the expression. rebalancer/window
// compiles the windows with it.
func ParseWindowSchedule(spec string) (*cron.SpecSchedule, error) {
	s, err := windowScheduleParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, errors.New("@every repeats relative to when a job starts, so it opens no window at a fixed time; use a cron expression or @daily, @weekly, ...")
	}
	if ss.Next(windowScheduleReference).IsZero() {
		return nil, errors.New("never fires")
	}
	return ss, nil
}

// kindName is what a Kubernetes kind looks like (InstanceSet, RedisCluster).
var kindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func validatePlan(p *Plan, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.MaxMoves), path.Child("maxMoves"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.MaxStates), path.Child("maxStates"))...)
	return errs
}

func validateLimits(l *Limits, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"maxNoOfPodsToEvictPerNode", l.MaxNoOfPodsToEvictPerNode},
		{"maxNoOfPodsToEvictPerNamespace", l.MaxNoOfPodsToEvictPerNamespace},
		{"maxNoOfPodsToEvictTotal", l.MaxNoOfPodsToEvictTotal},
		{"maxMovesPerCluster", l.MaxMovesPerCluster},
		{"maxParallelClusters", l.MaxParallelClusters},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.v), path.Child(f.name))...)
	}
	return errs
}

func validateFailover(f *Failover, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("mode"), f.Mode, FailoverDefault, FailoverForce, FailoverTakeover)
	errs = append(errs, validateDuration(f.Timeout, path.Child("timeout"))...)
	errs = append(errs, validateDuration(f.DrainQuiet, path.Child("drainQuiet"))...)
	errs = append(errs, validateDuration(f.DrainTimeout, path.Child("drainTimeout"))...)
	return errs
}

func validateTimeouts(t *Timeouts, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateDuration(t.HealthGate, path.Child("healthGate"))...)
	errs = append(errs, validateDuration(t.Recreate, path.Child("recreate"))...)
	errs = append(errs, validateDuration(t.Rejoin, path.Child("rejoin"))...)
	errs = append(errs, validateDuration(t.Request, path.Child("request"))...)
	return errs
}

func validateRedis(r *Redis, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Port != 0 {
		for _, msg := range validation.IsValidPortNum(int(r.Port)) {
			errs = append(errs, field.Invalid(path.Child("port"), r.Port, msg))
		}
	}
	errs = append(errs, validateSecretKeyRef(&r.UsernameSecretRef, path.Child("usernameSecretRef"))...)
	errs = append(errs, validateSecretKeyRef(&r.PasswordSecretRef, path.Child("passwordSecretRef"))...)
	errs = append(errs, validateOneSource(path, "username", r.UsernameSecretRef.Name, r.UsernameFile, r.UsernameEnv)...)
	errs = append(errs, validateOneSource(path, "password", r.PasswordSecretRef.Name, r.PasswordFile, r.PasswordEnv)...)
	tls := path.Child("tls")
	switch {
	case r.TLS.CertFile != "" && r.TLS.KeyFile == "":
		errs = append(errs, field.Required(tls.Child("keyFile"), "certFile needs its key"))
	case r.TLS.KeyFile != "" && r.TLS.CertFile == "":
		errs = append(errs, field.Required(tls.Child("certFile"), "keyFile needs its certificate"))
	}
	errs = append(errs, validateDuration(r.DialTimeout, path.Child("dialTimeout"))...)
	errs = append(errs, validateDuration(r.ReadTimeout, path.Child("readTimeout"))...)
	errs = append(errs, validateDuration(r.WriteTimeout, path.Child("writeTimeout"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(r.MaxLagBytes, path.Child("maxLagBytes"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(r.MaxLastIOSeconds), path.Child("maxLastIOSeconds"))...)
	return errs
}

// validateSecretKeyRef checks a reference that names a Secret: its namespace is required (the
// Secret is read with a GET in that namespace), and the names are Kubernetes names. A reference
// without a name is not used (its key may carry the default).
func validateSecretKeyRef(ref *SecretKeyRef, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ref.Name == "" {
		if ref.Namespace != "" {
			errs = append(errs, field.Required(path.Child("name"), "a Secret reference with a namespace needs a name"))
		}
		return errs
	}
	if ref.Namespace == "" {
		errs = append(errs, field.Required(path.Child("namespace"), "the Secret's namespace"))
	} else {
		for _, msg := range validation.IsDNS1123Label(ref.Namespace) {
			errs = append(errs, field.Invalid(path.Child("namespace"), ref.Namespace, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
		errs = append(errs, field.Invalid(path.Child("name"), ref.Name, msg))
	}
	if ref.Key != "" {
		for _, msg := range validation.IsConfigMapKey(ref.Key) {
			errs = append(errs, field.Invalid(path.Child("key"), ref.Key, msg))
		}
	}
	return errs
}

// validateOneSource refuses a credential given in more than one place.
func validateOneSource(path *field.Path, what, secretName, file, env string) field.ErrorList {
	n := 0
	for _, v := range []string{secretName, file, env} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		return field.ErrorList{field.Forbidden(path.Child(what+"File"), "only one of "+what+"SecretRef, "+what+"File and "+what+"Env may be set")}
	}
	return nil
}

func validateWindows(w *Windows, path *field.Path) field.ErrorList {
	errs := validateEnum(path.Child("stepEstimate"), w.StepEstimate, StepEstimateBound, StepEstimateP95)
	if w.HistoryConfigMap != "" {
		for _, msg := range validation.IsDNS1123Subdomain(w.HistoryConfigMap) {
			errs = append(errs, field.Invalid(path.Child("historyConfigMap"), w.HistoryConfigMap, msg))
		}
	}
	for i, win := range w.Windows {
		p := path.Child("windows").Index(i)
		if win.Schedule == "" {
			errs = append(errs, field.Required(p.Child("schedule"), "a cron expression"))
		} else if _, err := ParseWindowSchedule(win.Schedule); err != nil {
			errs = append(errs, field.Invalid(p.Child("schedule"), win.Schedule, err.Error()))
		}
		errs = append(errs, validateDuration(win.Duration, p.Child("duration"))...)
	}
	return errs
}

// validateDuration refuses a negative duration (0 is the default).
func validateDuration(d metav1.Duration, path *field.Path) field.ErrorList {
	if d.Duration < 0 {
		return field.ErrorList{field.Invalid(path, d.Duration.String(), "must not be negative")}
	}
	return nil
}

// validateEnum refuses a value that is neither "" (the default) nor one of valid.
func validateEnum[T ~string](path *field.Path, v T, valid ...T) field.ErrorList {
	if v == "" {
		return nil
	}
	names := make([]string, len(valid))
	for i, s := range valid {
		if v == s {
			return nil
		}
		names[i] = string(s)
	}
	return field.ErrorList{field.NotSupported(path, v, names)}
}
