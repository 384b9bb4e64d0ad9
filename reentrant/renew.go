package reentrant

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// renewScript runs lua/renew.lua.
var renewScript = plainScript("renew.lua")

// Hold names one owner's hold on one lock, for batched renewal.
type Hold struct {
	Keys  Keys
	Owner string
	Token uint64
}

// RenewAll renews every hold in one pipeline: one round trip on a single
// node, one per node on a cluster (go-redis splits cluster pipelines by
// node). The result has one entry per hold: nil when renewed, an error
// wrapping ErrNotHeld when the owner no longer holds the lock, or the
// transport error.
func RenewAll(ctx context.Context, rdb redis.Cmdable, holds []Hold, lease time.Duration) []error {
	errs := make([]error, len(holds))
	ms, err := leaseMillis(lease)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	cmds := renewPipeline(ctx, rdb, holds, ms, renewScript.EvalSha)
	var missing []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		// The server lost its script cache (restart, SCRIPT FLUSH, a new
		// node): EVAL the affected holds, which also reloads the script.
		retry := make([]Hold, len(missing))
		for j, i := range missing {
			retry[j] = holds[i]
		}
		for j, cmd := range renewPipeline(ctx, rdb, retry, ms, renewScript.Eval) {
			cmds[missing[j]] = cmd
		}
	}
	for i, cmd := range cmds {
		errs[i] = renewError(holds[i], cmd)
	}
	return errs
}

type evalFunc func(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd

func renewPipeline(ctx context.Context, rdb redis.Cmdable, holds []Hold, ms int64, eval evalFunc) []*redis.Cmd {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(holds))
	for i, h := range holds {
		cmds[i] = eval(ctx, pipe, []string{h.Keys.Hash, h.Keys.Fence}, h.Owner, formatToken(h.Token), ms)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read below
	return cmds
}

func renewError(h Hold, cmd *redis.Cmd) error {
	n, err := cmd.Int64()
	switch {
	case err != nil:
		return fmt.Errorf("reentrant: renew %q: %w", h.Keys.Name, renewScript.locate(err))
	case n != 1:
		return fmt.Errorf("reentrant: renew %q: %w", h.Keys.Name, ErrNotHeld)
	}
	return nil
}

// ErrNotHeld is what RenewAll reports for a hold whose owner no longer holds
// the lock.
var ErrNotHeld = errors.New("reentrant: lock not held by this owner")

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
