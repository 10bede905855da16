package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
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

// PositiveFields are the paths of the fields whose zero value stands for their default: left out
// of a file they take it, but given as 0 in a file (Decode) or by a flag they are refused, since
// 0 itself would mean nothing sensible (no move, no time, no port, no lag at all). "[]" stands
// for every element of a list. The other numeric fields say what their 0 means (plan.maxMoves,
// the limits.maxNoOfPodsToEvict… fields: no limit).
var PositiveFields = []string{
	"plan.maxStates",
	"limits.maxMovesPerCluster", "limits.maxParallelClusters",
	"failover.timeout", "failover.drainQuiet", "failover.drainTimeout",
	"timeouts.healthGate", "timeouts.recreate", "timeouts.rejoin", "timeouts.fullSync", "timeouts.request",
	"redis.port", "redis.dialTimeout", "redis.readTimeout", "redis.writeTimeout", "redis.maxLagBytes", "redis.maxLastIOSeconds",
	"windows.windows[].duration",
	"watch.rolesInterval", "watch.quorumPassInterval",
	"guard.maxHold", "guard.timeoutSeconds",
}

// PositiveMessage is the validation message of a field of PositiveFields given as 0; what
// restores the default follows it.
const PositiveMessage = "must be positive: 0 has no meaning here"

// IsPositiveField reports whether the field at path (windows.windows[2].duration: indexes are
// ignored) is one of PositiveFields.
func IsPositiveField(path string) bool {
	return slices.Contains(PositiveFields, indexes.ReplaceAllString(path, "[]"))
}

// indexes matches a list index in a field path ("[2]").
var indexes = regexp.MustCompile(`\[[0-9]+\]`)

// givenZeros refuses each field of PositiveFields that doc (a policy file's JSON object) gives as
// 0 ("0s" for a duration).
func givenZeros(doc map[string]any) field.ErrorList {
	var errs field.ErrorList
	var walk func(v any, segs []string, path *field.Path)
	walk = func(v any, segs []string, path *field.Path) {
		if len(segs) == 0 {
			if isZero(v) {
				errs = append(errs, field.Invalid(path, v, PositiveMessage+" (leave the field out for its default)"))
			}
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		name, list := strings.CutSuffix(segs[0], "[]")
		child, ok := m[name]
		if !ok {
			return
		}
		p := fieldPath(path, name)
		if !list {
			walk(child, segs[1:], p)
			return
		}
		items, _ := child.([]any)
		for i, item := range items {
			walk(item, segs[1:], p.Index(i))
		}
	}
	for _, f := range PositiveFields {
		walk(doc, strings.Split(f, "."), nil)
	}
	return errs
}

// givenEmpty refuses a schedule that doc (a policy file's JSON object) gives as an empty string:
// left out, the field takes its default; given empty, it would never fire.
func givenEmpty(doc map[string]any) field.ErrorList {
	if v, ok := doc["schedule"].(string); ok && strings.TrimSpace(v) == "" {
		return field.ErrorList{field.Invalid(field.NewPath("schedule"), v, "empty: a schedule that never fires (leave the field out for its default, "+DefaultSchedule+")")}
	}
	return nil
}

// isZero reports whether a decoded JSON value is a zero number or a zero duration.
func isZero(v any) bool {
	switch x := v.(type) {
	case int64:
		return x == 0
	case float64:
		return x == 0
	case string:
		d, err := time.ParseDuration(x)
		return err == nil && d == 0
	}
	return false
}

// ValidateRebalancerPolicy checks p as a file gives it (before defaults) or as flags left it,
// and returns every problem, each with its field path ("limits.maxMovesPerCluster"). A zero value
// means the default and is valid (a file or a flag that gives one of PositiveFields as 0 is
// refused by Decode and by the command line, which see what was given); negative counts and
// durations, unknown enumeration values (selection.layout, failover.mode, windows.stepEstimate,
// output, the rule names of rules), a shard source that does not
// parse, owner kinds that are no kind names, cron expressions that do not parse or never fire,
// malformed label keys, selectors and names, and credentials given twice are not. apiVersion and
// kind are the decoder's to check.
func ValidateRebalancerPolicy(p *RebalancerPolicy) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateSelection(&p.Selection, field.NewPath("selection"))...)
	errs = append(errs, validateRules(&p.Rules, field.NewPath("rules"))...)
	errs = append(errs, validatePlan(&p.Plan, field.NewPath("plan"))...)
	errs = append(errs, validateLimits(&p.Limits, field.NewPath("limits"))...)
	errs = append(errs, validateFailover(&p.Failover, field.NewPath("failover"))...)
	errs = append(errs, validateTimeouts(&p.Timeouts, field.NewPath("timeouts"))...)
	errs = append(errs, validateRedis(&p.Redis, field.NewPath("redis"))...)
	errs = append(errs, validateWindows(&p.Windows, field.NewPath("windows"))...)
	if p.Schedule != "" {
		if _, err := ParseSchedule(p.Schedule); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("schedule"), p.Schedule, err.Error()))
		}
	}
	errs = append(errs, validateEnum(field.NewPath("output"), p.Output, OutputText, OutputTable, OutputJSON)...)
	errs = append(errs, validateDuration(p.Watch.RolesInterval, field.NewPath("watch", "rolesInterval"))...)
	errs = append(errs, validateDuration(p.Watch.QuorumPassInterval, field.NewPath("watch", "quorumPassInterval"))...)
	errs = append(errs, validateGuard(&p.Guard, field.NewPath("guard"))...)
	return errs
}

// validateGuard checks the eviction guard's fields: a known failure policy, a timeout of 0 (the
// default) or 1 to MaxGuardTimeoutSeconds, a Kubernetes name for the webhook configuration, and
// qualified names for the taint keys.
func validateGuard(g *Guard, path *field.Path) field.ErrorList {
	errs := validateDuration(g.MaxHold, path.Child("maxHold"))
	errs = append(errs, validateEnum(path.Child("failurePolicy"), g.FailurePolicy, FailurePolicyIgnore, FailurePolicyFail)...)
	if g.TimeoutSeconds != 0 && (g.TimeoutSeconds < 1 || g.TimeoutSeconds > MaxGuardTimeoutSeconds) {
		errs = append(errs, field.Invalid(path.Child("timeoutSeconds"), g.TimeoutSeconds, fmt.Sprintf("must be between 1 and %d", MaxGuardTimeoutSeconds)))
	}
	if g.WebhookConfigurationName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(g.WebhookConfigurationName) {
			errs = append(errs, field.Invalid(path.Child("webhookConfigurationName"), g.WebhookConfigurationName, msg))
		}
	}
	for i, k := range g.DrainTaints {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(path.Child("drainTaints").Index(i), k, msg))
		}
	}
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
	errs = append(errs, metav1validation.ValidateLabelSelector(&s.WorkloadSelector, metav1validation.LabelSelectorValidationOptions{}, path.Child("workloadSelector"))...)
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

// Schedules must fire: a schedule (serve's schedule, a maintenance window's) is refused as never
// firing when no activation falls within ScheduleHorizon of scheduleReference, a fixed time so
// that the answer does not depend on the day it is asked. Every calendar expression that fires
// at all fires within 4 years of 2000-01-01 (a leap year: "0 0 29 2 *" fires on 2000-02-29), and
// one that matches no day ("0 0 30 2 *", February 30) never does; an @every longer than the
// horizon is refused too.
const ScheduleHorizon = (4*365 + 1) * 24 * time.Hour

// scheduleReference is the time ScheduleHorizon is counted from.
var scheduleReference = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// MinEvery is the shortest @every a schedule accepts: robfig/cron/v3 runs @every in whole
// seconds, at least one (it turns "@every 0s", a negative or a sub-second duration into 1s, and
// "@every 1.5s" into 1s), so anything it would not run as written is refused.
const MinEvery = time.Second

// ParseSchedule parses serve's schedule (the policy's schedule, --schedule): a cron expression of
// robfig/cron/v3's standard parser (five fields, or a descriptor such as @hourly or @every 30m),
// with an optional CRON_TZ=<IANA zone> prefix (UTC without one). It refuses an empty schedule, a
// time zone prefix that names no zone, an @every under MinEvery or not a whole number of seconds,
// and a schedule that never fires (ScheduleHorizon). The error does not repeat the expression.
// rebalancer/serve runs its passes on what it returns.
func ParseSchedule(spec string) (cron.Schedule, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, errors.New("empty: a schedule that never fires; give a cron expression such as " + DefaultSchedule)
	}
	s, err := parseCron(cron.ParseStandard, spec)
	if err != nil {
		return nil, err
	}
	if err := checkEvery(spec); err != nil {
		return nil, err
	}
	if err := checkFires(s); err != nil {
		return nil, err
	}
	return s, nil
}

// checkEvery refuses an @every duration that robfig/cron/v3 would not run as written (MinEvery).
func checkEvery(spec string) error {
	_, rest := cutZone(spec)
	d, ok := strings.CutPrefix(strings.TrimSpace(rest), "@every ")
	if !ok {
		return nil
	}
	every, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return nil // the parser said so already
	}
	switch {
	case every <= 0:
		return fmt.Errorf("@every %s never fires: the duration must be positive, at least %s", every, MinEvery)
	case every < MinEvery:
		return fmt.Errorf("@every %s fires too often: at least @every %s", every, MinEvery)
	case every%time.Second != 0:
		return fmt.Errorf("@every %s is not a whole number of seconds: robfig/cron would run it every %s", every, every.Truncate(time.Second))
	}
	return nil
}

// checkFires refuses a schedule without an activation within ScheduleHorizon of
// scheduleReference.
func checkFires(s cron.Schedule) error {
	next := s.Next(scheduleReference)
	if next.IsZero() || next.Sub(scheduleReference) > ScheduleHorizon {
		return errors.New("never fires: no time within 4 years matches it")
	}
	return nil
}

// ParseWindowSchedule parses a maintenance window's schedule (windows.windows[].schedule): a
// calendar expression of robfig/cron/v3's standard parser (five fields, or a descriptor such as
// @daily), with an optional CRON_TZ=<IANA zone> prefix (UTC without one). It refuses @every,
// which repeats relative to when a job starts and so opens no window at a fixed time, a time
// zone prefix that names no zone, and an expression that never fires (ScheduleHorizon). The
// error does not repeat the expression. rebalancer/window compiles the windows with it.
func ParseWindowSchedule(spec string) (*cron.SpecSchedule, error) {
	s, err := parseCron(windowScheduleParser.Parse, spec)
	if err != nil {
		return nil, err
	}
	ss, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, errors.New("@every repeats relative to when a job starts, so it opens no window at a fixed time; use a cron expression or @daily, @weekly, ...")
	}
	if err := checkFires(ss); err != nil {
		return nil, err
	}
	return ss, nil
}

// cutZone splits a schedule into its CRON_TZ= or TZ= prefix's zone ("" without a prefix) and
// the rest.
func cutZone(spec string) (zone, rest string) {
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		if after, ok := strings.CutPrefix(spec, prefix); ok {
			zone, rest, _ = strings.Cut(after, " ")
			return zone, rest
		}
	}
	return "", spec
}

// parseCron parses spec with parse (robfig/cron/v3), refusing first what makes that parser
// panic (a CRON_TZ= or TZ= prefix with nothing after the zone: it slices up to the first space)
// and what it takes silently for UTC (a prefix that names no zone: time.LoadLocation("") is UTC).
func parseCron(parse func(string) (cron.Schedule, error), spec string) (cron.Schedule, error) {
	if strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=") {
		if !strings.Contains(spec, " ") {
			return nil, errors.New("a time zone prefix (CRON_TZ=<zone>) must be followed by a space and the schedule")
		}
		if zone, _ := cutZone(spec); zone == "" {
			return nil, errors.New("the time zone prefix names no zone: write CRON_TZ=<IANA zone> (CRON_TZ=UTC for UTC), or leave the prefix out (UTC)")
		}
	}
	return parse(spec)
}

// kindName is what a Kubernetes kind looks like (InstanceSet, RedisCluster).
var kindName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

func validatePlan(p *Plan, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.MaxMoves), path.Child("maxMoves"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.MaxStates), path.Child("maxStates"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(p.SoftEvictions), path.Child("softEvictions"))...)
	return errs
}

// validateRules checks that rules.enabled, rules.disabled and rules.soft name rules (RuleNames;
// "*" in disabled only), each once, and that no rule is both enabled and disabled, nor both soft
// and disabled (by name, or by "*" without being enabled).
func validateRules(r *Rules, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name  string
		names []string
		all   bool
	}{{"enabled", r.Enabled, false}, {"disabled", r.Disabled, true}, {"soft", r.Soft, false}} {
		seen := map[string]bool{}
		for i, n := range list.names {
			p := path.Child(list.name).Index(i)
			switch {
			case seen[n]:
				errs = append(errs, field.Duplicate(p, n))
			case n == AllRules && !list.all:
				errs = append(errs, field.Invalid(p, n, `"*" is accepted in rules.disabled only`))
			case n != AllRules && !slices.Contains(RuleNames, n):
				errs = append(errs, field.NotSupported(p, n, RuleNames))
			}
			seen[n] = true
		}
	}
	for i, n := range r.Enabled {
		if slices.Contains(r.Disabled, n) {
			errs = append(errs, field.Invalid(path.Child("enabled").Index(i), n, "also listed in rules.disabled"))
		}
	}
	for i, n := range r.Soft {
		switch {
		case slices.Contains(r.Disabled, n):
			errs = append(errs, field.Invalid(path.Child("soft").Index(i), n, "also listed in rules.disabled: a disabled rule is not judged, soft or hard; list it in one of them"))
		case slices.Contains(r.Disabled, AllRules) && !slices.Contains(r.Enabled, n):
			errs = append(errs, field.Invalid(path.Child("soft").Index(i), n, `rules.disabled "*" disables it: list it in rules.enabled too to judge it as soft`))
		}
	}
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
	errs = append(errs, validateDuration(t.FullSync, path.Child("fullSync"))...)
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
