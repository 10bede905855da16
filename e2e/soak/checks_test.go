package soak

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/rebalancer/guard"
)

// What the soak checks, continuously (from what it recorded as it went) and at the end. Failed
// writes are judged as Jepsen's checkers judge a history against the intervals in which a
// nemesis was active: each event is an interval from its start to its end, extended by
// recoveryTail for what it leaves behind (a master evicted blindly at the last moment fails
// writes until Redis promotes its replica: cluster-node-timeout and an election); a failed write
// is attributed to every event whose interval holds it, and passes only when one of them is
// unguarded (Kind.Unguarded).

// Bounds of the checks.
const (
	// recoveryTail extends an event's interval for the failed writes it causes after it ends.
	recoveryTail = time.Minute
	// quorumWithin is how soon after the last of a run of placement disruptions MasterQuorum
	// must hold again (placementRuns).
	quorumWithin = 60 * time.Second
	// maxPasses is how many passes after the last disruption may run before every hard rule
	// holds.
	maxPasses = 3
	// rssGrowth is the most serve's resident set may grow from its baseline to its end.
	rssGrowth = 1.2
	// rssBaselineAge is when a replica's baseline is taken, from its start (5 minutes; a third
	// of a shorter soak).
	rssBaselineAge = 5 * time.Minute
)

// failure is a check that failed.
type failure struct {
	check, text string
}

// result is what a soak found.
type result struct {
	summary  string
	failures []failure
	timeline string
	// firstFailure is when the first failed check's first fault happened (zero when none or
	// unknown); culprits the events active then (the shrinking starts from them).
	firstFailure time.Time
	culprits     []int
	events       []*Event
}

// quietPhase is what happened after the last disruption ended.
type quietPhase struct {
	from        time.Time // the last disruption's end
	compliantAt time.Time // zero: never
	passes      int       // passes started from `from` until compliantAt
	lastBroken  string
}

// finish waits until the cluster complies after the last disruption (every hard rule, Redis
// healthy, for two samples in a row), watches a quiet minute, stops the workload and reads every
// write back, stops the processes, and judges.
func (s *Soak) finish(ctx context.Context) (*result, error) {
	s.quiet.from = s.lastEnd()
	s.logf("every disruption has ended (the last at +%s); waiting for compliance", s.quiet.from.Sub(s.start).Round(time.Second))
	deadline := time.Now().Add(4*time.Minute + time.Duration(maxPasses+1)*max(s.cfg.CronInterval, 3*time.Minute))
	for time.Now().Before(deadline) {
		samples, _, _, _ := s.mon.snapshot()
		n := len(samples)
		if n >= 2 && samples[n-1].at.After(s.quiet.from) && samples[n-2].at.After(s.quiet.from) && samples[n-1].compliant() && samples[n-2].compliant() {
			s.quiet.compliantAt = samples[n-2].at
			break
		}
		if n > 0 {
			s.quiet.lastBroken = fmt.Sprintf("%s; health %s", samples[n-1].brokenText(), samples[n-1].health)
		}
		if s.passesSince(s.quiet.from, time.Now()) > maxPasses+1 {
			break
		}
		if !sleep(ctx, sampleEvery) {
			return nil, ctx.Err()
		}
	}
	if !s.quiet.compliantAt.IsZero() {
		s.quiet.passes = s.passesSince(s.quiet.from, s.quiet.compliantAt)
		s.logf("compliant %s after the last disruption, after %d passes; a quiet minute", s.quiet.compliantAt.Sub(s.quiet.from).Round(time.Second), s.quiet.passes)
		sleep(ctx, time.Minute)
	} else {
		s.logf("not compliant %s after the last disruption: %s", time.Since(s.quiet.from).Round(time.Second), s.quiet.lastBroken)
	}
	acked, _, _, _, _ := s.work.snapshot()
	_ = waitFor(ctx, time.Minute, func() bool { a, _, _, _, _ := s.work.snapshot(); return a >= acked+200 })
	s.work.stop()
	verifyErr := s.work.verifyAll(ctx)
	s.bgStop()
	s.bgStop = nil
	s.mu.Lock()
	s.stopping = true
	serves := slices.Clone(s.serves)
	s.mu.Unlock()
	for _, r := range serves {
		if !r.exited() {
			if code := r.stop(2 * time.Minute); code != 0 {
				s.mu.Lock()
				s.rec.serveExits = append(s.rec.serveExits, fmt.Sprintf("%s exited %d after SIGTERM", r.name, code))
				s.mu.Unlock()
			}
		}
	}
	res := s.judge(verifyErr)
	path, err := s.writeTimeline()
	if err != nil {
		return res, err
	}
	res.timeline = path
	if _, err := s.writeReport(res); err != nil {
		return res, err
	}
	return res, nil
}

func failuresText(fs []failure) string {
	if len(fs) == 0 {
		return "every check passed\n"
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "FAILED %s: %s\n", f.check, f.text)
	}
	return b.String()
}

// passesSince counts the passes (serve's, and the CronJob's runs that held the Lease) started
// in [from, to).
func (s *Soak) passesSince(from, to time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.rec.passes {
		if !p.at.Before(from) && p.at.Before(to) {
			n++
		}
	}
	return n
}

// interval is an event's window for the checks.
type interval struct {
	e          *Event
	start, end time.Time
}

// windows returns every event's interval, extended by recoveryTail.
func (s *Soak) windows() []interval {
	var out []interval
	for _, e := range s.events {
		if e.Started.IsZero() {
			continue
		}
		end := e.Ended
		if end.IsZero() {
			end = time.Now()
		}
		out = append(out, interval{e: e, start: e.Started, end: end.Add(recoveryTail)})
	}
	return out
}

// covering returns the events whose window holds t.
func covering(ws []interval, t time.Time) []*Event {
	var out []*Event
	for _, w := range ws {
		if !t.Before(w.start) && !t.After(w.end) {
			out = append(out, w.e)
		}
	}
	return out
}

func indexes(es []*Event) []int {
	var out []int
	for _, e := range es {
		out = append(out, e.Index)
	}
	return out
}

func describeEvents(es []*Event) string {
	if len(es) == 0 {
		return "no event"
	}
	var parts []string
	for _, e := range es {
		parts = append(parts, fmt.Sprintf("#%d %s", e.Index, e.Kind))
	}
	return strings.Join(parts, ", ")
}

// judge runs every check and writes the summary.
func (s *Soak) judge(verifyErr error) *result {
	res := &result{events: s.events}
	fail := func(check string, at time.Time, culprits []*Event, format string, args ...any) {
		res.failures = append(res.failures, failure{check: check, text: fmt.Sprintf(format, args...)})
		if res.firstFailure.IsZero() || (!at.IsZero() && at.Before(res.firstFailure)) {
			res.firstFailure, res.culprits = at, indexes(culprits)
		}
	}
	rel := func(t time.Time) string { return "+" + t.Sub(s.start).Round(time.Second).String() }
	ws := s.windows()
	acked, failures, lost, retried, read := s.work.snapshot()
	samples, terms, fos, evs := s.mon.snapshot()

	// No acknowledged write lost, ever.
	if verifyErr != nil {
		fail("writes read back", time.Time{}, nil, "%v", verifyErr)
	}
	if len(lost) > 0 {
		var ex []string
		for _, l := range lost[:min(len(lost), 10)] {
			ex = append(ex, fmt.Sprintf("%s=%s (acknowledged %s, found %s, during %s)", key(l.seq), l.got, rel(l.when), rel(l.at), describeEvents(covering(ws, l.when))))
		}
		fail("no acknowledged write lost", lost[0].when, covering(ws, lost[0].when), "%d acknowledged writes lost: %s", len(lost), strings.Join(ex, "; "))
	}

	// Failed writes only in unguarded windows, each attributed.
	attributed := map[Kind]int{}
	var bad []writeFailure
	var badEvents [][]*Event
	for _, f := range failures {
		cov := covering(ws, f.at)
		ok := false
		for _, e := range cov {
			if e.Kind.Unguarded() {
				attributed[e.Kind]++
				ok = true
				break
			}
		}
		if !ok {
			bad = append(bad, f)
			badEvents = append(badEvents, cov)
		}
	}
	if len(bad) > 0 {
		var ex []string
		for i, f := range bad[:min(len(bad), 8)] {
			ex = append(ex, fmt.Sprintf("%s at %s during %s: %s", key(f.seq), rel(f.at), describeEvents(badEvents[i]), f.err))
		}
		fail("no failed write but in an unguarded event's window", bad[0].at, badEvents[0], "%d of %d failed writes in no unguarded event's window: %s", len(bad), len(failures), strings.Join(ex, "; "))
	}

	// No master stopped as a master by an eviction while the guard was up.
	termOf := map[string]termination{}
	for _, t := range terms {
		termOf[t.uid] = t
	}
	expiredUID := map[string]bool{}
	for _, e := range evs {
		if e.reason == guard.EventHoldExpired {
			expiredUID[e.uid] = true
		}
	}
	mastersStopped := 0
	for _, st := range s.env.Stops() {
		if policies.ParseRole(st.Role) != policies.RoleMaster {
			continue
		}
		mastersStopped++
		t, ok := termOf[st.UID]
		if !ok || t.reason != "EvictionByEvictionAPI" {
			continue
		}
		cov := covering(ws, st.At)
		guardDown := slices.ContainsFunc(cov, func(e *Event) bool { return e.Kind == KindGuardDown })
		nodeLost := slices.ContainsFunc(cov, func(e *Event) bool { return e.Kind == KindNodeLost && slices.Contains(e.Nodes, t.node) })
		switch {
		case guardDown, nodeLost: // unguarded: the guard was down, or lets a NotReady node's pods go
		case expiredUID[st.UID]:
			s.logf("master %s evicted after guard.maxHold (its Warning Event says so)", st.Pod)
		default:
			fail("no master stopped as a master by an eviction while the guard is up", st.At, cov,
				"pod %s was a master (ROLE) when its server stopped at %s, evicted (%s) while the guard was up, during %s", st.Pod, rel(st.At), t.reason, describeEvents(cov))
		}
	}

	// MasterQuorum restored within quorumWithin after each run of overlapping placement
	// disruptions; the time to restore after each disruption for the summary.
	var restore []time.Duration
	for _, e := range s.events {
		if !e.Kind.placement() || e.Ended.IsZero() {
			continue
		}
		if at, ok := firstQuorum(samples, e.Ended); ok {
			restore = append(restore, at.Sub(e.Ended))
		}
	}
	for _, run := range placementRuns(s.events) {
		at, ok := firstQuorum(samples, run.end)
		if !ok || at.Sub(run.end) > quorumWithin {
			took := "never"
			if ok {
				took = at.Sub(run.end).Round(time.Second).String()
			}
			fail("MasterQuorum restored within 60 s after each disruption", run.end, run.events,
				"after %s ended at %s, MasterQuorum held again after %s", describeEvents(run.events), rel(run.end), took)
		}
	}

	// Every hard rule within maxPasses passes after the last disruption.
	if s.quiet.compliantAt.IsZero() {
		fail("every hard rule compliant within 3 passes after the last disruption", s.quiet.from, nil,
			"not compliant after %d passes since the last disruption ended at %s: %s", s.passesSince(s.quiet.from, time.Now()), rel(s.quiet.from), s.quiet.lastBroken)
	} else if s.quiet.passes > maxPasses {
		fail("every hard rule compliant within 3 passes after the last disruption", s.quiet.from, nil,
			"compliant only after %d passes since the last disruption", s.quiet.passes)
	}

	// No hold left behind: nothing held, handed off or retried in the quiet minute.
	s.mu.Lock()
	rec := s.rec
	rec.holds, rec.expired, rec.handoffs, rec.handoffRetries = slices.Clone(rec.holds), slices.Clone(rec.expired), slices.Clone(rec.handoffs), slices.Clone(rec.handoffRetries)
	s.mu.Unlock()
	if !s.quiet.compliantAt.IsZero() {
		quietFrom := s.quiet.compliantAt
		for _, h := range rec.holds {
			if h.at.After(quietFrom) {
				fail("no hold left behind", h.at, nil, "the guard held the eviction of %s at %s, after every disruption had ended and the cluster complied", h.pod, rel(h.at))
			}
		}
		for _, h := range rec.handoffs {
			if h.at.After(quietFrom) {
				fail("no hold left behind", h.at, nil, "the leader handed %s off to %s at %s (%s), after every disruption had ended and the cluster complied", h.master, h.to, rel(h.at), h.why)
			}
		}
		for _, at := range rec.handoffRetries {
			if at.After(quietFrom) {
				fail("no hold left behind", at, nil, "the hand-off was still retrying at %s, after every disruption had ended and the cluster complied", rel(at))
				break
			}
		}
	}
	// No eviction held past maxHold without its Event. A hold is of the pod that ran under its
	// name when it was made: one made before an earlier termination of that name (the
	// StatefulSet re-creates the pod under the same name, with a new UID) held another pod.
	for _, t := range terms {
		if t.reason != "EvictionByEvictionAPI" {
			continue
		}
		latest := latestHold(rec.holds, terms, fos, t)
		if latest == nil || t.at.Sub(latest.at) <= s.cfg.MaxHold+15*time.Second {
			continue
		}
		expired := expiredUID[t.uid] || slices.ContainsFunc(rec.expired, func(h hold) bool {
			return strings.HasSuffix(h.pod, "/"+t.pod) && !h.at.Before(latest.at) && !h.at.After(t.at.Add(5*time.Second))
		})
		if !expired {
			fail("no eviction held past guard.maxHold without its Event", t.at, covering(ws, t.at),
				"%s was held from %s and evicted at %s (%s later) without a RedisEvictionHoldExpired Event", t.pod, rel(latest.at), rel(t.at), t.at.Sub(latest.at).Round(time.Second))
		}
	}

	// No serve crash.
	for _, x := range rec.serveExits {
		fail("no serve crash", time.Time{}, nil, "%s", x)
	}
	for _, p := range rec.panics {
		fail("no serve crash", time.Time{}, nil, "%s", p)
	}

	// Every line serve and run print on stderr is one JSON object (--logging-format json, as the
	// manifests run them): log collectors parse them.
	if rec.notJSON > 0 {
		fail("serve and run log JSON lines only", time.Time{}, nil, "%d stderr lines are not JSON objects under --logging-format json, such as: %s", rec.notJSON, strings.Join(rec.notJSONLines, " | "))
	}

	// serve's memory flat.
	rssLines, rssFailures := s.rssCheck()
	for _, f := range rssFailures {
		fail("serve's memory flat", time.Time{}, nil, "%s", f)
	}

	// The summary.
	var b strings.Builder
	byKind := map[Kind]int{}
	var errored []string
	for _, e := range s.events {
		byKind[e.Kind]++
		if e.Err != nil {
			errored = append(errored, fmt.Sprintf("#%d %s: %v", e.Index, e.Kind, e.Err))
		}
	}
	fmt.Fprintf(&b, "seed %d, %s of disruptions, %d events (the last ended at +%s):", s.cfg.Seed, s.cfg.Duration, len(s.events), s.quiet.from.Sub(s.start).Round(time.Second))
	for _, k := range kinds {
		if byKind[k] > 0 {
			fmt.Fprintf(&b, " %s %d,", k, byKind[k])
		}
	}
	b.WriteString("\n")
	if len(errored) > 0 {
		fmt.Fprintf(&b, "events that could not do all they meant to: %s\n", strings.Join(errored, "; "))
	}
	var attr []string
	for _, k := range kinds {
		if attributed[k] > 0 {
			attr = append(attr, fmt.Sprintf("%s %d", k, attributed[k]))
		}
	}
	fmt.Fprintf(&b, "writes: %d acknowledged, %d failed (attributed: %s; unattributed %d), %d lost; %d retried after CLUSTERDOWN/TRYAGAIN; %d read back as they went\n",
		acked, len(failures), strings.Join(attr, ", "), len(bad), len(lost), retried, read)
	evictions, byReason := 0, map[string]int{}
	for _, t := range terms {
		byReason[t.reason]++
		if t.reason == "EvictionByEvictionAPI" {
			evictions++
		}
	}
	productFailovers, handoffs := 0, 0
	for _, e := range evs {
		switch e.reason {
		case "RedisFailover":
			productFailovers++
		case "RedisHandOff":
			handoffs++
		}
	}
	fmt.Fprintf(&b, "failovers: %d masters changed (Redis's view; the rebalancer's RedisFailover Events %d, RedisHandOff %d); pods stopped as masters %d\n", len(fos), productFailovers, handoffs, mastersStopped)
	fmt.Fprintf(&b, "pods terminated: %d (%s); evictions %d\n", len(terms), reasonsText(byReason), evictions)
	fmt.Fprintf(&b, "holds: %d evictions held by the guard, %d admitted after guard.maxHold; hand-offs %d\n", len(rec.holds), len(rec.expired), len(rec.handoffs))
	fmt.Fprintf(&b, "MasterQuorum restored after a disruption ended: %s\n", quantiles(restore))
	outcomes := map[string]int{}
	for _, r := range rec.runs {
		outcomes[string(r.outcome)]++
	}
	servePasses := 0
	for _, p := range rec.passes {
		if p.who != "run" {
			servePasses++
		}
	}
	fmt.Fprintf(&b, "passes: serve %d; the CronJob's runs %d (%s)\n", servePasses, len(rec.runs), reasonsText(outcomes))
	if s.quiet.compliantAt.IsZero() {
		fmt.Fprintf(&b, "after the last disruption: not compliant (%s)\n", s.quiet.lastBroken)
	} else {
		fmt.Fprintf(&b, "after the last disruption: compliant in %s, %d passes\n", s.quiet.compliantAt.Sub(s.quiet.from).Round(time.Second), s.quiet.passes)
	}
	fmt.Fprintf(&b, "serve's memory: %s\n", strings.Join(rssLines, "; "))
	if len(res.failures) == 0 {
		b.WriteString("every check passed")
	} else {
		fmt.Fprintf(&b, "%d checks failed", len(res.failures))
	}
	res.summary = b.String()
	return res
}

// reasonsText formats counts by reason, sorted ("EvictionByEvictionAPI 12, Deleted 3").
func reasonsText(m map[string]int) string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return m[keys[a]] > m[keys[b]] || m[keys[a]] == m[keys[b]] && keys[a] < keys[b] })
	var parts []string
	for _, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, m[k]))
	}
	return strings.Join(parts, ", ")
}

// quantiles formats p50, p99 and max of ds.
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no disruption measured"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))].Round(time.Second) }
	return fmt.Sprintf("p50 %s, p99 %s, max %s (%d disruptions)", q(0.5), q(0.99), s[len(s)-1].Round(time.Second), len(s))
}

// firstQuorum returns the time of the first sample at or after t in which MasterQuorum holds.
func firstQuorum(samples []sample, t time.Time) (time.Time, bool) {
	for _, sm := range samples {
		if !sm.at.Before(t) && sm.err == "" && sm.quorum {
			return sm.at, true
		}
	}
	return time.Time{}, false
}

// latestHold returns the latest hold of the pod t terminated, made before t, after the previous
// termination of a pod of the same name and after the last failover from that pod (nil if none):
// the StatefulSet re-creates a pod under its name, and the guard's "Eviction held" line names the
// pod, not its UID; and a master's hold ends when it is failed over (seed 3's 30-minute soak: a
// drain held redis-cluster-5 at +6m38s and gave up at +7m34s, the hand-off failed it over at
// +11m20s, and a later drain evicted the replica at +13m1s unheld — not a hold of 6m23s). A hold
// made within the monitor's sampling delay after the failover is taken as ended too.
func latestHold(holds []hold, terms []termination, fos []failover, t termination) *hold {
	var since time.Time
	for _, o := range terms {
		if o.pod == t.pod && o.uid != t.uid && o.at.Before(t.at) && o.at.After(since) {
			since = o.at
		}
	}
	for _, f := range fos {
		if f.from == t.pod && f.at.Before(t.at) && f.at.After(since) {
			since = f.at
		}
	}
	var latest *hold
	for i := range holds {
		h := &holds[i]
		if strings.HasSuffix(h.pod, "/"+t.pod) && h.at.Before(t.at) && h.at.After(since) && (latest == nil || h.at.After(latest.at)) {
			latest = h
		}
	}
	return latest
}

// placementRun is a run of placement disruptions, each starting before the run's end or within
// quorumWithin of it.
type placementRun struct {
	events []*Event
	end    time.Time
}

// placementRuns returns the runs of placement disruptions (Kind.placement), in order:
// MasterQuorum is judged quorumWithin after each run's end. A disruption that starts within
// quorumWithin of a run's end joins the run, and the run's clock starts again at its end: the
// rebalancer has those seconds to restore MasterQuorum only if nothing disrupts it meanwhile
// (seed 1's 30-minute soak: #42 ended at +13m6s and a pool scale-down started at +13m30s, whose
// drains the hand-off then served; the check judged #42 alone at +14m6s).
func placementRuns(events []*Event) []placementRun {
	var es []*Event
	for _, e := range events {
		if e.Kind.placement() && !e.Started.IsZero() && !e.Ended.IsZero() {
			es = append(es, e)
		}
	}
	sort.Slice(es, func(a, b int) bool { return es[a].Started.Before(es[b].Started) })
	var runs []placementRun
	for _, e := range es {
		if n := len(runs); n > 0 && !e.Started.After(runs[n-1].end.Add(quorumWithin)) {
			runs[n-1].events = append(runs[n-1].events, e)
			if e.Ended.After(runs[n-1].end) {
				runs[n-1].end = e.Ended
			}
			continue
		}
		runs = append(runs, placementRun{events: []*Event{e}, end: e.Ended})
	}
	return runs
}

// rssCheck compares each serve replica's resident set at its end with its baseline (at
// rssBaselineAge, or a third of a shorter soak), for the replicas that ran at least as long
// again after it.
func (s *Soak) rssCheck() (lines, failures []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	age := min(rssBaselineAge, s.cfg.Duration/3)
	for _, r := range s.serves {
		var base, end *rssSample
		for i := range r.rssSamples {
			sm := &r.rssSamples[i]
			if base == nil && sm.at.Sub(r.started) >= age {
				base = sm
			}
			end = sm
		}
		if base == nil || end.at.Sub(base.at) < age {
			lines = append(lines, fmt.Sprintf("%s ran %s: not measured", r.name, r.lifetime().Round(time.Second)))
			continue
		}
		ratio := float64(end.bytes) / float64(base.bytes)
		lines = append(lines, fmt.Sprintf("%s %d MiB at %s of age, %d MiB %s later (×%.2f)", r.name, base.bytes>>20, base.at.Sub(r.started).Round(time.Second), end.bytes>>20, end.at.Sub(base.at).Round(time.Second), ratio))
		if ratio > rssGrowth {
			failures = append(failures, fmt.Sprintf("%s's resident set grew from %d MiB to %d MiB (×%.2f, at most ×%.1f)", r.name, base.bytes>>20, end.bytes>>20, ratio, rssGrowth))
		}
	}
	return lines, failures
}

// lifetime is how long the replica ran (so far).
func (r *serveReplica) lifetime() time.Duration {
	if len(r.rssSamples) == 0 {
		return 0
	}
	return r.rssSamples[len(r.rssSamples)-1].at.Sub(r.started)
}
