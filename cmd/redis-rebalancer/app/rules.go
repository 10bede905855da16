package app

import (
	"strings"

	"github.com/redis-rebalancer/redis-rebalancer/policies"
)

// helpWidth is the width the help paragraphs built from the rule registry are wrapped to.
const helpWidth = 100

// ruleNames names the registered rules for the help, in the registry's order: the hard rules,
// then, when withSoft, "; soft: " and the soft ones.
func ruleNames(withSoft bool) string {
	var hard, soft []string
	for _, r := range policies.Rules() {
		if r.Soft {
			soft = append(soft, string(r.Name))
		} else {
			hard = append(hard, string(r.Name))
		}
	}
	out := strings.Join(hard, ", ")
	if withSoft && len(soft) > 0 {
		out += "; soft: " + strings.Join(soft, ", ")
	}
	return out
}

// fill wraps s into lines of at most width columns (a longer word stands alone on its line).
func fill(s string, width int) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(s) {
		n := len([]rune(w))
		switch {
		case col == 0:
		case col+1+n > width:
			b.WriteByte('\n')
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(w)
		col += n
	}
	return b.String()
}
