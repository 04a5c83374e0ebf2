package redis

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// each sends one command per key (fanOut) and sends again those the cluster
// refused or lost, until every key has an answer or the retry time is
// spent. Only for commands that may run twice without harm: reads,
// unconditional deletes, metadata sets, SET NX (whose caller checks).
func (e *Engine) each(ctx context.Context, keys []string, add func(p redis.Pipeliner, i int) redis.Cmder, wait bool) ([]redis.Cmder, error) {
	cmds := make([]redis.Cmder, len(keys))
	todo := make([]int, len(keys))
	for i := range todo {
		todo[i] = i
	}
	r := e.newRetrier()
	for {
		sub := make([]string, len(todo))
		for j, i := range todo {
			sub[j] = keys[i]
		}
		got, errs, _ := e.fanOut(ctx, sub, func(p redis.Pipeliner, j int) redis.Cmder { return add(p, todo[j]) }, wait)
		var next []int
		var cause error
		noScript := false
		for j, i := range todo {
			switch classify(errs[j]) {
			case done:
				cmds[i] = got[j]
			case notRun, uncertain:
				next = append(next, i)
				cause = errs[j]
				noScript = noScript || isNoScript(errs[j])
			default:
				return nil, e.check(errs[j])
			}
		}
		if len(next) == 0 {
			return cmds, nil
		}
		if noScript {
			_ = e.loadScript(ctx) // a failure shows as NOSCRIPT again
		}
		if err := r.wait(ctx, cause); err != nil {
			return nil, e.check(err)
		}
		todo = next
	}
}
