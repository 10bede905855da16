package policies_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"
	"github.com/redis-rebalancer/redis-rebalancer/policies"
	"github.com/redis-rebalancer/redis-rebalancer/test/scenario"
)

// declaredRules returns the string constants of type Rule declared in the package's non-test
// files, in file order.
func declaredRules(t *testing.T) []policies.Rule {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []policies.Rule
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Rule" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: a Rule constant that is not a string literal: %#v", e.Name(), v)
					}
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, policies.Rule(s))
				}
			}
		}
	}
	return out
}

// TestRegistryNamesEveryRule checks that the registry holds every Rule constant the package
// declares, once, and nothing else; that every entry says when it applies, what it asks for (on
// one line) and what fixes it; and that hard rules come before soft ones.
func TestRegistryNamesEveryRule(t *testing.T) {
	declared := declaredRules(t)
	var registered []policies.Rule
	for _, r := range policies.Rules() {
		registered = append(registered, r.Name)
	}
	want, got := slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(registered))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registered rules (-declared +registered):\n%s", diff)
	}
	var api []policies.Rule
	for _, n := range v1alpha1.RuleNames {
		api = append(api, policies.Rule(n))
	}
	if diff := cmp.Diff(registered, api); diff != "" {
		t.Errorf("the policy's rule names, v1alpha1.RuleNames (-registry +api):\n%s", diff)
	}
	if len(declared) < 10 {
		t.Errorf("found %d Rule constants, want at least 10: %v", len(declared), declared)
	}
	soft := false
	for _, r := range policies.Rules() {
		if r.AppliesWhen == "" || r.Description == "" || r.Fix == "" {
			t.Errorf("%s: AppliesWhen, Description and Fix must all be set: %+v", r.Name, r)
		}
		for _, s := range []string{r.AppliesWhen, r.Description, r.Fix} {
			if strings.ContainsAny(s, "\n|`") {
				t.Errorf("%s: %q spans lines or holds Markdown (| or `): help and tables print it as is", r.Name, s)
			}
		}
		if soft && !r.Soft {
			t.Errorf("hard rule %s listed after a soft rule", r.Name)
		}
		soft = r.Soft
		if got, ok := policies.LookupRule(r.Name); !ok || got.Name != r.Name {
			t.Errorf("LookupRule(%s) = %v, %v", r.Name, got.Name, ok)
		}
	}
	if _, ok := policies.LookupRule("NoSuchRule"); ok {
		t.Error("LookupRule found an unregistered rule")
	}
}

// TestEvaluatedRulesAreRegistered evaluates the scenario suite and random small Redis clusters
// (with roles, so that MasterQuorum is checked, and every optional rule enabled) on random
// placements: every violation's rule is
// registered and carries its Soft mark, every registered rule is broken somewhere (so none is
// registered without being evaluated), and every rule that sets a State's lower bound has the
// words the planner gives for it.
func TestEvaluatedRulesAreRegistered(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	seen := map[policies.Rule]int{}
	opts := policies.Options{RoleLabel: scenario.RoleLabel, Rules: map[policies.Rule]policies.RuleSetting{}}
	for _, info := range policies.Rules() {
		if info.Optional {
			opts.Rules[info.Name] = policies.RuleSetting{Enabled: true, Soft: info.Soft}
		}
	}
	check := func(c *policies.Cluster, what string) {
		p := c.Current()
		for k := 0; k < 20; k++ {
			for _, v := range c.Evaluate(p) {
				info, ok := policies.LookupRule(v.Rule)
				if !ok {
					t.Fatalf("%s: rule %s is evaluated but not registered: %+v", what, v.Rule, v)
				}
				if v.Soft != info.Soft {
					t.Errorf("%s: %s violation has Soft=%v, the registry says %v", what, v.Rule, v.Soft, info.Soft)
				}
				seen[v.Rule]++
			}
			if s := c.NewState(p).Summary(); s.Rule != "" {
				if info, _ := policies.LookupRule(s.Rule); info.LowerBoundReason(s.LowerBound) == "" {
					t.Errorf("%s: Summary's lower bound comes from %s, which has no LowerBoundReason", what, s.Rule)
				}
			}
			p = p.Clone()
			p[r.IntN(len(p))] = r.IntN(len(c.Model().Nodes)+1) - 1
		}
	}
	for _, cs := range scenario.Suite() {
		snap, err := cs.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		m, err := policies.Build(snap, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range m.Clusters {
			check(c, cs.Name)
		}
	}
	for it := 0; it < 100; it++ {
		sc, tweak := randomRedis(r)
		snap := sc.MustSnapshot()
		tweak(snap)
		m, err := policies.Build(snap, opts)
		if err != nil {
			t.Fatal(err)
		}
		check(m.Clusters[0], fmt.Sprintf("redis case %d", it))
	}
	for _, info := range policies.Rules() {
		if seen[info.Name] == 0 {
			t.Errorf("no placement broke %s: a registered rule that is never evaluated, or inputs too tame", info.Name)
		}
	}
	t.Logf("violations by rule: %v", seen)
}

// TestPluralAgree checks the counts and the words that agree with them.
func TestPluralAgree(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want string
	}{
		{"0 → the plural", 0, "0 pods run"},
		{"1 → the singular", 1, "1 pod runs"},
		{"2 → the plural", 2, "2 pods run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policies.Plural(tc.n, "pod") + " " + policies.Agree(tc.n, "runs", "run"); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
