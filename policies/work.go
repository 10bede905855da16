package policies

// Work counts what judging and planning a cluster cost in units that do not depend on the
// machine's speed, so that a test can hold the planner's work under a budget (bench's
// TestPlanWorkBudget) where a timed assertion would flake: a change that multiplies the work
// fails there instead of in a benchmark read a turn later.
type Work struct {
	// NodeVisits counts the nodes the counts made before any search visit
	// (Cluster.StaticInfeasibility): every loop over the model's nodes adds their number.
	NodeVisits int
	// FilterChecks counts the nodes the feasibility filter checked for a member under a
	// search's placement (State.CandidatesIn, State.Fits).
	FilterChecks int
	// Searched counts the placements the searches evaluated (plan.Plan.Searched).
	Searched int
}

// Add adds o's counts to w.
func (w *Work) Add(o Work) {
	w.NodeVisits += o.NodeVisits
	w.FilterChecks += o.FilterChecks
	w.Searched += o.Searched
}

// visit counts n node visits; a nil w counts nothing.
func (w *Work) visit(n int) {
	if w != nil {
		w.NodeVisits += n
	}
}
