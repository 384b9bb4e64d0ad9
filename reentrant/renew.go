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
// RenewAll; or, made by Share.Renewal, a hold of a multi-holder resource
// (Keys is then unused).
type Renewal struct {
	Keys  Keys
	Owner string
	Token uint64

	share *Share // the hold's share, for a multi-holder resource's hold
}

// script is the script that renews r.
func (r Renewal) script() *script {
	if r.share != nil {
		return sharedRenewScript
	}
	return renewScript
}

// call is the keys and arguments of r's script, for a lease of ms.
func (r Renewal) call(ms int64) ([]string, []any) {
	if s := r.share; s != nil {
		return []string{s.keys.Hash, s.keys.Leases}, []any{r.Owner, formatToken(r.Token), string(s.mode), ms}
	}
	return []string{r.Keys.Hash, r.Keys.Fence}, []any{r.Owner, formatToken(r.Token), ms}
}

// name names r's lock or resource in errors.
func (r Renewal) name() string {
	if s := r.share; s != nil {
		return fmt.Sprintf("%s %q", s.keys.Kind, s.keys.Name)
	}
	return fmt.Sprintf("%q", r.Keys.Name)
}

// RenewAll renews each of renewals as Renew (or Share.Renew) does, all in
// one pipeline, whatever the kinds of their holds: one round trip on a
// single node, one per node on a cluster (go-redis splits cluster
// pipelines by node). renewed[i] reports whether renewals[i]'s owner still
// held its hold under its token, and so has at least lease left; false, with errs[i] nil, means it no longer did, and nothing
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
	cmds := renewPipeline(ctx, rdb, renewals, ms, (*script).EvalSha)
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
		for j, cmd := range renewPipeline(ctx, rdb, retry, ms, (*script).Eval) {
			cmds[missing[j]] = cmd
		}
	}
	for i, cmd := range cmds {
		n, err := cmd.Int64()
		if err != nil {
			errs[i] = fmt.Errorf("reentrant: renew %s: %w", renewals[i].name(), renewals[i].script().locate(err))
		}
		renewed[i] = err == nil && n == 1
	}
	return renewed, errs
}

// evalFunc is how renewPipeline runs a script: EVALSHA or EVAL.
type evalFunc func(s *script, ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd

// renewPipeline runs each of renewals' script in one pipeline, and returns
// its commands, each with its own reply or error.
func renewPipeline(ctx context.Context, rdb redis.Cmdable, renewals []Renewal, ms int64, eval evalFunc) []*redis.Cmd {
	pipe := rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(renewals))
	for i, r := range renewals {
		keys, args := r.call(ms)
		cmds[i] = eval(r.script(), ctx, pipe, keys, args...)
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
	keys, args := Renewal{Keys: k, Owner: owner, Token: token}.call(ms)
	n, err := renewScript.Run(ctx, rdb, keys, args...).Int64()
	if err != nil {
		return false, fmt.Errorf("reentrant: renew %q: %w", k.Name, err)
	}
	return n == 1, nil
}
