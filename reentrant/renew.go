package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// renewScript runs lua/renew_batch.lua: it renews any list of holds, of
// plain locks and of shared resources, with the renewal of each
// kind written once (renew.lua, shared_renew.lua).
var renewScript = newScript(luaFiles("master.lua", "token.lua", "shared.lua", "renew.lua", "shared_renew.lua", "renew_batch.lua")...)

// HoldRef names one owner's hold on one lock under its token, for
// RenewAll; or, made by SharedMode.HoldRef, a hold of a shared resource
// under its hold ID, in Token (Keys is then unused).
type HoldRef struct {
	Keys  Keys
	Owner string
	Token uint64

	mode *SharedMode // the hold's mode, for a shared resource's hold
}

// appendTo adds r's keys and arguments to those of a renewal script call
// (see renew_batch.lua).
func (r HoldRef) appendTo(keys []string, args []any) ([]string, []any) {
	if s := r.mode; s != nil {
		keys = append(keys, s.keys.Hash, s.keys.Leases)
		if s.keys.Size != "" {
			keys = append(keys, s.keys.Size)
		}
		return keys, append(args, r.Owner, formatToken(r.Token), string(s.mode))
	}
	return append(keys, r.Keys.Hash, r.Keys.Fence), append(args, r.Owner, formatToken(r.Token), "")
}

// name names r's lock or resource in errors.
func (r HoldRef) name() string {
	if s := r.mode; s != nil {
		return fmt.Sprintf("%s %q", s.keys.Kind, s.keys.Name)
	}
	return fmt.Sprintf("%q", r.Keys.Name)
}

// renewCall is the keys and arguments of one renewal script call that
// renews group for a lease of ms.
func renewCall(group []HoldRef, ms int64) ([]string, []any) {
	keys, args := make([]string, 0, 3*len(group)), make([]any, 0, 3*len(group)+1)
	for _, r := range group {
		keys, args = r.appendTo(keys, args)
	}
	return keys, append(args, ms)
}

// RenewAll renews each hold of groups as Renew (or SharedMode.Renew) does,
// whatever their kinds: one script call for each group, all in one
// pipeline, so one round trip on a single node and one per node on a
// cluster (go-redis splits cluster pipelines by node).
//
// A group's script call must touch one cluster slot: the caller groups
// holds by the slot of their keys' hash tag (reentrant does not compute
// slots). Do so on a single node too, where any grouping would run: it
// keeps the calls valid if the deployment becomes a cluster, and a
// group's call is then one slot's share of the server's time.
//
// renewed[g][i] reports whether groups[g][i]'s owner still held its hold
// under its token, and so has at least lease left; false, with errs[g]
// nil, means it no longer did, and nothing of it changed. errs[g] is what
// kept group g from being judged: the lease (ErrInvalidLease), the
// transport, or an error reply to its script call, which judges none of
// the group's holds (what the script renewed before the error stays).
func RenewAll(ctx context.Context, rdb redis.Cmdable, groups [][]HoldRef, lease time.Duration) (renewed [][]bool, errs []error) {
	renewed, errs = make([][]bool, len(groups)), make([]error, len(groups))
	ms, err := leaseMillis(lease)
	if err != nil {
		for g := range errs {
			errs[g] = err
		}
		return renewed, errs
	}
	cmds := renewPipeline(ctx, rdb, groups, ms, (*script).EvalSha)
	var missing []int
	for g, cmd := range cmds {
		if cmd != nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, g)
		}
	}
	if len(missing) > 0 {
		// The server lost its script cache (restart, SCRIPT FLUSH, a new
		// node): EVAL the affected groups, which also reloads the script.
		retry := make([][]HoldRef, len(missing))
		for j, g := range missing {
			retry[j] = groups[g]
		}
		for j, cmd := range renewPipeline(ctx, rdb, retry, ms, (*script).Eval) {
			cmds[missing[j]] = cmd
		}
	}
	for g, cmd := range cmds {
		if cmd != nil {
			renewed[g], errs[g] = renewReply(cmd, groups[g])
		}
	}
	return renewed, errs
}

// evalFunc is how renewPipeline runs a script: EVALSHA or EVAL.
type evalFunc func(s *script, ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd

// renewPipeline runs the renewal script once for each of groups, in one
// pipeline, and returns its commands, each with its own reply or error
// (nil for an empty group, which needs no call).
func renewPipeline(ctx context.Context, rdb redis.Cmdable, groups [][]HoldRef, ms int64, eval evalFunc) []*redis.Cmd {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(groups))
	for g, group := range groups {
		if len(group) > 0 {
			keys, args := renewCall(group, ms)
			cmds[g] = eval(renewScript, ctx, pipe, keys, args...)
		}
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read by the caller
	return cmds
}

// renewReply reads the reply of the renewal script call cmd for group:
// whether each hold was renewed.
func renewReply(cmd *redis.Cmd, group []HoldRef) ([]bool, error) {
	what := group[0].name()
	if len(group) > 1 {
		what = fmt.Sprintf("%s and %d other holds", what, len(group)-1)
	}
	reply, err := cmd.Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("reentrant: renew %s: %w", what, renewScript.locate(err))
	}
	if len(reply) != len(group) {
		return nil, fmt.Errorf("reentrant: renew %s: %d results for %d holds", what, len(reply), len(group))
	}
	renewed := make([]bool, len(group))
	for i, n := range reply {
		renewed[i] = n == 1
	}
	return renewed, nil
}

// renew runs the renewal script for r alone, for Keys.Renew and
// SharedMode.Renew.
func (r HoldRef) renew(ctx context.Context, rdb redis.Scripter, lease time.Duration) (bool, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return false, err
	}
	group := []HoldRef{r}
	keys, args := renewCall(group, ms)
	renewed, err := renewReply(renewScript.Run(ctx, rdb, keys, args...), group)
	if err != nil {
		return false, err
	}
	return renewed[0], nil
}

// Renew makes sure the lock has at least lease left when owner still holds
// it under token (it never shortens a lease), and reports whether owner did.
func (k Keys) Renew(ctx context.Context, rdb redis.Scripter, owner string, token uint64, lease time.Duration) (bool, error) {
	return HoldRef{Keys: k, Owner: owner, Token: token}.renew(ctx, rdb, lease)
}
