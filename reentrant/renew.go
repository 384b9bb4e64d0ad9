package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// renewScript runs lua/renew.lua.
var renewScript = plainScript("renew.lua")

// Renewal names one owner's hold on one lock under its token, for
// RenewAll.
type Renewal struct {
	Keys  Keys
	Owner string
	Token uint64
}

// RenewAll renews each of renewals as Renew does, all in one pipeline: one
// round trip on a single node, one per node on a cluster (go-redis splits
// cluster pipelines by node). renewed[i] reports whether renewals[i]'s
// owner still held its lock under its token, and so has at least lease
// left; false, with errs[i] nil, means it no longer did, and nothing
// changed. errs[i] is what kept renewals[i] from being judged: the lease
// (ErrInvalidLease), the transport, or an error reply to the script.
func RenewAll(ctx context.Context, rdb redis.Cmdable, renewals []Renewal, lease time.Duration) (renewed []bool, errs []error) {
	renewed, errs = make([]bool, len(renewals)), make([]error, len(renewals))
	ms, err := leaseMillis(lease)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return renewed, errs
	}
	cmds := renewPipeline(ctx, rdb, renewals, ms, renewScript.EvalSha)
	var missing []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		// The server lost its script cache (restart, SCRIPT FLUSH, a new
		// node): EVAL the affected renewals, which also reloads the script.
		retry := make([]Renewal, len(missing))
		for j, i := range missing {
			retry[j] = renewals[i]
		}
		for j, cmd := range renewPipeline(ctx, rdb, retry, ms, renewScript.Eval) {
			cmds[missing[j]] = cmd
		}
	}
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil {
			errs[i] = fmt.Errorf("reentrant: renew %q: %w", renewals[i].Keys.Name, renewScript.locate(err))
		}
		renewed[i] = err == nil && n == 1
	}
	return renewed, errs
}

// evalFunc is how renewPipeline runs the script: EVALSHA or EVAL.
type evalFunc func(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd

// renewPipeline runs renew.lua for each of renewals in one pipeline, and
// returns its commands, each with its own reply or error.
func renewPipeline(ctx context.Context, rdb redis.Cmdable, renewals []Renewal, ms int64, eval evalFunc) []*redis.Cmd {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(renewals))
	for i, r := range renewals {
		cmds[i] = eval(ctx, pipe, []string{r.Keys.Hash, r.Keys.Fence}, r.Owner, formatToken(r.Token), ms)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read by the caller
	return cmds
}

// Renew makes sure the lock has at least lease left when owner still holds
// it under token (it never shortens a lease), and reports whether owner did.
func (k Keys) Renew(ctx context.Context, rdb redis.Scripter, owner string, token uint64, lease time.Duration) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	n, err := renewScript.Run(ctx, rdb, []string{k.Hash, k.Fence}, owner, formatToken(token), ms).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: renew %q: %w", k.Name, err)
	}
	return n == 1, nil
}
