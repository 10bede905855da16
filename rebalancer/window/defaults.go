package window

import "github.com/redis-rebalancer/redis-rebalancer/api/v1alpha1"

// DefaultDuration is a window's duration when its Duration is 0 (the policy's,
// v1alpha1.DefaultWindowDuration).
const DefaultDuration = v1alpha1.DefaultWindowDuration

// SetDefaults fills the zero fields of c: StepEstimate v1alpha1.DefaultStepEstimate, each
// window's Duration DefaultDuration.
func SetDefaults(c *Config) {
	if c.StepEstimate == "" {
		c.StepEstimate = v1alpha1.DefaultStepEstimate
	}
	for i := range c.Windows {
		if c.Windows[i].Duration == 0 {
			c.Windows[i].Duration = DefaultDuration
		}
	}
}
