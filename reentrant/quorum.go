package reentrant

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// raiseScript runs lua/quorum_raise.lua, after the server's role and the
// token's expiry (fenceUntil).
var raiseScript = newScript(luaFiles("master.lua", "token.lua", "quorum_raise.lua")...)

// Raise makes to the token and ID of owner's hold on this node, which its
// acquire or grant made under token from: quorum mode's second round (see
// the package doc's Quorum mode). It returns the hold's ID after the call:
// to (raised, or by a resend); from, where another call of owner has
// re-entered the hold under from, whose ID then stays (see Quorum mode); or
// 0 where owner holds the lock under neither, and nothing changed. to must
// be at least from, and at most MaxToken (else ErrTokenOverflow). Every
// copy of one raise (a resend, a copy late on the network) goes under one
// requestID: the first to run decides, and the others replay its answer
// for RequestTTL, so that none moves an ID after the hold's release.
func (k Keys) Raise(ctx context.Context, rdb redis.Scripter, owner string, from, to uint64, lease time.Duration, requestID string) (uint64, error) {
	ms, err := leaseMillis(lease)
	if err != nil {
		return 0, err
	}
	switch {
	case to < from:
		return 0, fmt.Errorf("reentrant: raise %q: token %d below %d", k.Name, to, from)
	case to > MaxToken:
		return 0, fmt.Errorf("reentrant: raise %q: token %d: %w", k.Name, to, ErrTokenOverflow)
	}
	n, err := raiseScript.Run(ctx, rdb, []string{k.Hash, k.Fence, k.RequestKey(requestID)},
		owner, formatToken(from), formatToken(to), ms, k.requestTTL.Milliseconds()).Int64()
	if err != nil {
		return 0, fmt.Errorf("reentrant: raise %q: %w", k.Name, err)
	}
	switch n {
	case 1:
		return to, nil
	case 2:
		return from, nil
	}
	return 0, nil
}
