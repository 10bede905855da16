package execute

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// poll calls cond every interval until it reports done, timeout passes, or ctx ends, and calls
// progress (when not nil) with each status that differs from the one before (same compares them;
// nil: ==). A round that ran while the deadline passed says nothing (its reads were cut short):
// its status is dropped, so the status returned with the error is the last whole round's, the
// real reason (never "client rate limiter Wait returned an error").
func poll[S comparable](ctx context.Context, interval, timeout time.Duration, same func(a, b S) bool, progress func(S), cond func(context.Context) (bool, S)) (S, error) {
	if same == nil {
		same = func(a, b S) bool { return a == b }
	}
	var status S
	seen := false
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		done, s := cond(ctx)
		if done {
			return true, nil
		}
		// A round cut short by the deadline reports the deadline, not the state: the context is
		// done, or the round ended less than one interval before the deadline (client-go's rate
		// limiter refuses a request that would wait past it while the context is still live).
		// Keep the status of the round before.
		if deadline, ok := ctx.Deadline(); seen && (ctx.Err() != nil || ok && time.Until(deadline) < interval) {
			return false, nil
		}
		if (!seen || !same(s, status)) && progress != nil {
			progress(s)
		}
		status, seen = s, true
		return false, nil
	})
	return status, err
}
