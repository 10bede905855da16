package soak

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The timeline: one SVG a browser opens. Time runs left to right from the moment the workload
// started; from top to bottom: writes acknowledged per second (and failed ones, red), hard
// violations over time (MasterQuorum broken shaded), one lane per kind of disruption (each event a
// bar from its start to its end, red when unguarded; hover for what it did), and the marks of
// failovers (Redis's view), evictions, held evictions and new serve leaders.

// Layout of the picture, in pixels.
const (
	svgWidth  = 1600
	svgLeft   = 190
	svgRight  = 20
	laneH     = 18
	chartH    = 120
	violH     = 60
	markLaneH = 16
)

// writeTimeline writes timeline.svg into the soak's directory and returns its path.
func (s *Soak) writeTimeline() (string, error) {
	samples, terms, fos, _ := s.mon.snapshot()
	s.mu.Lock()
	rec := s.rec
	holds, marks := append([]hold(nil), rec.holds...), append([]mark(nil), rec.marks...)
	s.mu.Unlock()
	origin := s.begin
	end := time.Now()
	span := end.Sub(origin).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 {
		return svgLeft + (float64(svgWidth-svgLeft-svgRight))*t.Sub(origin).Seconds()/span
	}
	var b strings.Builder
	y := 30.0
	text := func(x, y float64, anchor, class, s string) {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="%s" class="%s">%s</text>`+"\n", x, y, anchor, class, html.EscapeString(s))
	}
	label := func(y float64, s string) { text(svgLeft-8, y, "end", "label", s) }

	// Title.
	text(svgLeft, 18, "start", "title", fmt.Sprintf("redis-rebalancer soak, seed %d: %d events over %s (time from the writer's start; disruptions from +%s)",
		s.cfg.Seed, len(s.events), end.Sub(origin).Round(time.Second), s.start.Sub(origin).Round(time.Second)))

	// Writes per second.
	acked, failed := s.work.perSecond(origin)
	maxRate := float64(s.cfg.WriteRate) * 1.3
	y += 10
	top := y
	label(top+10, "writes/s")
	label(top+chartH-2, "failed (red)")
	fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%d" class="frame"/>`+"\n", svgLeft, top, svgWidth-svgLeft-svgRight, chartH)
	var pts []string
	secs := int(span)
	for i := 0; i <= secs; i++ {
		v := min(float64(acked[i]), maxRate)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(origin.Add(time.Duration(i)*time.Second)), top+chartH-chartH*v/maxRate))
	}
	fmt.Fprintf(&b, `<polyline points="%s" class="rate"/>`+"\n", strings.Join(pts, " "))
	for i, n := range failed {
		h := min(float64(n), maxRate) * chartH / maxRate
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="2" height="%.1f" class="failed"><title>+%ds: %d failed writes</title></rect>`+"\n",
			x(origin.Add(time.Duration(i)*time.Second)), top+chartH-h, max(h, 2), i, n)
	}
	text(svgLeft+4, top+12, "start", "small", fmt.Sprintf("%d/s", s.cfg.WriteRate))
	y = top + chartH + 20

	// Violations.
	label(y+12, "hard violations")
	label(y+violH-2, "MasterQuorum broken")
	fmt.Fprintf(&b, `<rect x="%d" y="%.1f" width="%d" height="%d" class="frame"/>`+"\n", svgLeft, y, svgWidth-svgLeft-svgRight, violH)
	maxV := 1
	for _, sm := range samples {
		n := 0
		for _, c := range sm.broken {
			n += c
		}
		maxV = max(maxV, n)
	}
	pts = nil
	for i, sm := range samples {
		n := 0
		for _, c := range sm.broken {
			n += c
		}
		if sm.err == "" && !sm.quorum && i+1 < len(samples) {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%d" class="quorum"><title>+%s MasterQuorum broken: %s</title></rect>`+"\n",
				x(sm.at), y, max(x(samples[i+1].at)-x(sm.at), 1), violH, sm.at.Sub(origin).Round(time.Second), html.EscapeString(sm.brokenText()))
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(sm.at), y+violH-float64(violH-4)*float64(n)/float64(maxV)))
	}
	if len(pts) > 0 {
		fmt.Fprintf(&b, `<polyline points="%s" class="viol"/>`+"\n", strings.Join(pts, " "))
	}
	text(svgLeft+4, y+12, "start", "small", fmt.Sprintf("max %d", maxV))
	y += violH + 16

	// The disruptions, a lane per kind; events of a kind that overlap take rows of their own.
	for _, k := range kinds {
		var rowEnds []time.Time
		row := map[int]int{}
		for _, e := range s.events {
			if e.Kind != k || e.Started.IsZero() {
				continue
			}
			ended := e.Ended
			if ended.IsZero() {
				ended = end
			}
			r := 0
			for r < len(rowEnds) && !rowEnds[r].Before(e.Started) {
				r++
			}
			if r == len(rowEnds) {
				rowEnds = append(rowEnds, time.Time{})
			}
			rowEnds[r], row[e.Index] = ended.Add(time.Second), r
		}
		rows := max(len(rowEnds), 1)
		lh := float64(max(laneH, rows*9))
		sub := lh / float64(rows)
		label(y+lh-5, string(k))
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="lane"/>`+"\n", svgLeft, svgWidth-svgRight, y+lh, y+lh)
		for _, e := range s.events {
			if e.Kind != k || e.Started.IsZero() {
				continue
			}
			ended := e.Ended
			if ended.IsZero() {
				ended = end
			}
			class := "guarded"
			if k.Unguarded() {
				class = "unguarded"
			} else if !k.placement() {
				class = "control"
			}
			tip := e.String()
			if e.Err != nil {
				tip += "\nerror: " + e.Err.Error()
			}
			tip += "\n" + strings.Join(e.Notes, "\n")
			top := y + 2 + sub*float64(row[e.Index])
			fmt.Fprintf(&b, `<g><title>%s</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="%s"/>`, html.EscapeString(tip), x(e.Started), top, max(x(ended)-x(e.Started), 3), max(sub-2, 2), class)
			if sub >= 9 {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="tiny">%d</text>`, x(e.Started)+2, top+sub-4, e.Index)
			}
			b.WriteString("</g>\n")
		}
		y += lh
	}
	y += 10

	// Marks.
	markLane := func(name string, items []struct {
		at  time.Time
		tip string
	}, class string) {
		label(y+markLaneH-4, name)
		for _, it := range items {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="%s"><title>%s</title></line>`+"\n", x(it.at), x(it.at), y+2, y+markLaneH-1, class, html.EscapeString(it.tip))
		}
		y += markLaneH
	}
	type item = struct {
		at  time.Time
		tip string
	}
	var its []item
	for _, f := range fos {
		its = append(its, item{f.at, fmt.Sprintf("+%s shard %d: %s → %s", f.at.Sub(origin).Round(time.Second), f.shard, f.from, f.to)})
	}
	markLane("failovers", its, "failover")
	its = nil
	for _, t := range terms {
		if t.reason == "EvictionByEvictionAPI" {
			its = append(its, item{t.at, fmt.Sprintf("+%s %s evicted from %s", t.at.Sub(origin).Round(time.Second), t.pod, t.node)})
		}
	}
	markLane("evictions", its, "eviction")
	its = nil
	for _, t := range terms {
		if t.reason != "EvictionByEvictionAPI" {
			its = append(its, item{t.at, fmt.Sprintf("+%s %s terminated on %s: %s", t.at.Sub(origin).Round(time.Second), t.pod, t.node, t.reason)})
		}
	}
	markLane("other terminations", its, "termination")
	its = nil
	for _, h := range holds {
		its = append(its, item{h.at, fmt.Sprintf("+%s serve-%d held the eviction of %s (%s)", h.at.Sub(origin).Round(time.Second), h.by, h.pod, h.reason)})
	}
	markLane("evictions held", its, "hold")
	its = nil
	for _, m := range marks {
		its = append(its, item{m.at, fmt.Sprintf("+%s %s", m.at.Sub(origin).Round(time.Second), m.text)})
	}
	markLane("serve leader", its, "leader")

	// The time axis.
	y += 6
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" class="axis"/>`+"\n", svgLeft, svgWidth-svgRight, y, y)
	step := time.Minute
	for span/step.Seconds() > 30 {
		step *= 2
	}
	for t := time.Duration(0); t.Seconds() <= span; t += step {
		xx := x(origin.Add(t))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" class="axis"/>`+"\n", xx, xx, y, y+4)
		text(xx, y+16, "middle", "small", fmt.Sprintf("%dm", int(t.Minutes())))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="30" y2="%.1f" class="grid"/>`+"\n", xx, xx, y)
	}
	y += 30
	text(svgLeft, y, "start", "small", "bars: red unguarded (failed writes allowed), blue through the Eviction API with the guard up, grey serve/kube-apiserver; hover for details")

	var doc strings.Builder
	fmt.Fprintf(&doc, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%.0f" font-family="sans-serif">`+"\n", svgWidth, y+20)
	doc.WriteString(`<style>
.title{font-size:14px;font-weight:bold}.label{font-size:11px;fill:#333}.small{font-size:10px;fill:#555}.tiny{font-size:9px;fill:#fff}
.frame{fill:none;stroke:#ccc}.rate{fill:none;stroke:#2a7ab0;stroke-width:1}.failed{fill:#d62728}
.viol{fill:none;stroke:#8c564b;stroke-width:1.5}.quorum{fill:#ff7f0e;opacity:0.25}
.lane{stroke:#eee}.guarded{fill:#4a7fc1}.unguarded{fill:#d62728}.control{fill:#999}
.failover{stroke:#9467bd;stroke-width:2}.eviction{stroke:#ff7f0e;stroke-width:1.5}.termination{stroke:#8c564b;stroke-width:1.5}
.hold{stroke:#17becf;stroke-width:1.5}.leader{stroke:#2ca02c;stroke-width:2}.axis{stroke:#333}.grid{stroke:#eee}
</style>
<rect width="100%" height="100%" fill="white"/>
`)
	doc.WriteString(b.String())
	doc.WriteString("</svg>\n")
	path := filepath.Join(s.out, "timeline.svg")
	return path, os.WriteFile(path, []byte(doc.String()), 0o644)
}

// writeReport writes report.txt into the soak's directory: the summary and the failed checks,
// then everything the checks read, in time order per part: the events with what they did, the
// intervals MasterQuorum (or another hard rule) was broken, the failovers, the pods terminated and
// why, the guard's holds, the hand-offs, the passes and the CronJob's runs.
func (s *Soak) writeReport(res *result) (string, error) {
	samples, terms, fos, evs := s.mon.snapshot()
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	rel := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return "+" + t.Sub(s.start).Round(time.Second).String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\nreproduce: %s\ntimeline: %s\n", res.summary, failuresText(res.failures), s.cfg.command(), filepath.Join(s.out, "timeline.svg"))
	b.WriteString("\n== events (times from the first disruption's origin)\n")
	for _, e := range s.events {
		fmt.Fprintf(&b, "%s: started %s, ended %s", e, rel(e.Started), rel(e.Ended))
		if e.Err != nil {
			fmt.Fprintf(&b, ", error: %v", e.Err)
		}
		b.WriteString("\n")
		for _, n := range e.Notes {
			fmt.Fprintf(&b, "    %s\n", n)
		}
	}
	b.WriteString("\n== hard rules broken (intervals)\n")
	var from time.Time
	var what string
	for i, sm := range samples {
		broken := sm.err != "" || len(sm.broken) > 0
		if broken && from.IsZero() {
			from, what = sm.at, sm.brokenText()
		}
		if (!broken || i == len(samples)-1) && !from.IsZero() {
			fmt.Fprintf(&b, "%s – %s: %s\n", rel(from), rel(sm.at), what)
			from = time.Time{}
		}
	}
	b.WriteString("\n== failovers (Redis's view, sampled every 2 s)\n")
	for _, f := range fos {
		fmt.Fprintf(&b, "%s shard at slot %d: %s → %s\n", rel(f.at), f.shard, f.from, f.to)
	}
	b.WriteString("\n== pods terminated\n")
	for _, t := range terms {
		fmt.Fprintf(&b, "%s %s on %s: %s\n", rel(t.at), t.pod, t.node, t.reason)
	}
	b.WriteString("\n== Events of the rebalancer and the guard\n")
	for _, e := range evs {
		if strings.HasPrefix(e.reason, "Redis") {
			fmt.Fprintf(&b, "%s %s %s %s: %s\n", rel(e.at), e.typ, e.reason, e.pod, e.msg)
		}
	}
	b.WriteString("\n== the guard's holds (serve's log)\n")
	for _, h := range rec.holds {
		fmt.Fprintf(&b, "%s serve-%d held %s (%s)\n", rel(h.at), h.by, h.pod, h.reason)
	}
	for _, h := range rec.expired {
		fmt.Fprintf(&b, "%s serve-%d admitted %s after guard.maxHold\n", rel(h.at), h.by, h.pod)
	}
	b.WriteString("\n== hand-offs\n")
	for _, h := range rec.handoffs {
		fmt.Fprintf(&b, "%s %s → %s: %s\n", rel(h.at), h.master, h.to, h.why)
	}
	b.WriteString("\n== passes (serve's, and the CronJob's runs that held the Lease)\n")
	for _, p := range rec.passes {
		fmt.Fprintf(&b, "%s %s: %s (ended %s)\n", rel(p.at), p.who, p.outcome, rel(p.ended))
	}
	b.WriteString("\n== the CronJob's runs\n")
	for _, r := range rec.runs {
		fmt.Fprintf(&b, "%s exit %d, outcome %s\n", rel(r.started), r.exit, r.outcome)
	}
	path := filepath.Join(s.out, "report.txt")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}
