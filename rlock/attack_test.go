package rlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// Holds churn under every attack at once: owners on two clients contend
// for one lock and hand it off; each hold is re-entered from forked
// goroutines; any Lock may have its ctx cancelled at a random moment, any
// Unlock may get a cancelled ctx, and the clients' connections, pub/sub
// ones included, are killed over and over. Owners never overlap, no hold
// is lost, every handle's Context has ended once its Unlock returned, and
// in the end neither client's table has a hold, nor its watchdog a lease,
// and the lock is free.
func TestHoldChurnUnderAttack(t *testing.T) {
	ctx, srv := serve(t)
	rdb := admin(t, srv)
	clients, endAttacks := underAttack(ctx, t, srv, rdb)
	var inside, most atomic.Int32
	until := time.Now().Add(2 * time.Second)
	var workers sync.WaitGroup
	for i := range 8 {
		c := clients[i%2]
		rng := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		workers.Go(func() {
			for time.Now().Before(until) && !t.Failed() {
				churn(ctx, t, c, rng, &inside, &most)
			}
		})
	}
	workers.Wait()
	endAttacks()
	require.EqualValues(t, 1, most.Load(), "two owners held the lock at once")
	require.Eventually(t, func() bool {
		return len(clients[0].table.holdsOf(everyHold))+len(clients[1].table.holdsOf(everyHold)) == 0 &&
			clients[0].wd.Len()+clients[1].wd.Len() == 0 &&
			rdb.Exists(ctx, lockKey("churn")).Val() == 0
	}, 5*time.Second, 10*time.Millisecond, "a hold, or its renewal, outlived its last Unlock")
}

func everyHold(*hold) bool { return true }

// churn is one owner's turn: a Lock that may be cancelled at any moment,
// then either re-entries from up to two forked goroutines (which may be
// cancelled too) and the Unlocks, or a nested re-entry that outlives the
// outer handle's Unlock.
func churn(ctx context.Context, t *testing.T, c *Client, rng *rand.Rand, inside, most *atomic.Int32) {
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if rng.IntN(3) == 0 {
		defer time.AfterFunc(randomStep(rng), cancel).Stop()
	}
	l, err := c.Lock(lctx, "churn")
	if err != nil {
		return // cancelled, or its connection was killed: it must leave nothing held
	}
	if n := inside.Add(1); n > most.Load() {
		most.Store(n)
	}
	time.Sleep(randomStep(rng) / 4) // held a while: the others queue
	if rng.IntN(4) == 0 {
		// The outer handle unlocks first, while a nested one holds on.
		nested, err := c.Lock(l.Context(), "churn")
		inside.Add(-1)
		unlockFully(ctx, t, l, false)
		if err == nil {
			unlockFully(ctx, t, nested, false)
		}
		return
	}
	var forks sync.WaitGroup
	for range rng.IntN(3) {
		fctx, fcancel := context.WithCancel(l.Context())
		if rng.IntN(2) == 0 {
			defer time.AfterFunc(randomStep(rng), fcancel).Stop()
		}
		cancelledUnlock := rng.IntN(4) == 0 // rng is not shared with the fork
		forks.Go(func() {
			defer fcancel()
			if r, err := c.Lock(fctx, "churn"); err == nil {
				unlockFully(ctx, t, r, cancelledUnlock)
			}
		})
	}
	forks.Wait()
	inside.Add(-1)
	unlockFully(ctx, t, l, rng.IntN(4) == 0)
}

// randomStep is a moment within a Lock or two, to cancel at.
func randomStep(rng *rand.Rand) time.Duration {
	return time.Duration(rng.IntN(5000)) * time.Microsecond
}

// unlockFully unlocks l, with a cancelled ctx if asked, retrying while
// the release's reply is lost, and checks that l's Context has ended.
func unlockFully(ctx context.Context, t *testing.T, l *Lock, cancelledCtx bool) {
	uctx := ctx
	if cancelledCtx {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		uctx = cancelled
	}
	for {
		err := l.Unlock(uctx)
		if err == nil {
			break
		}
		if errors.Is(err, ErrLockLost) || errors.Is(err, ErrNotHeld) || ctx.Err() != nil {
			t.Errorf("Unlock: %v", err)
			return
		}
		time.Sleep(time.Millisecond) // a killed connection: the retry replays
	}
	select {
	case <-l.Context().Done():
	default:
		t.Error("a handle's Context outlived its Unlock")
	}
}

// underAttack returns two clients of srv whose connections, command and
// pub/sub ones, killConnections kills over and over until endAttacks,
// which returns once the attacker has stopped. One client's go-redis
// retries a command on a killed connection; the other's does not, so its
// calls see the failures.
func underAttack(ctx context.Context, t *testing.T, srv *redistest.Server, rdb *redis.Client, opts ...Option) (clients []*Client, endAttacks func()) {
	t.Helper()
	noRetries, err := New(srv.Client(func(o *redis.Options) { o.MaxRetries = -1 }), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = noRetries.Close() })
	attackCtx, cancel := context.WithCancel(ctx)
	var attacker sync.WaitGroup
	attacker.Go(func() { killConnections(attackCtx, rdb) })
	return []*Client{newClient(t, srv, opts...), noRetries}, func() {
		cancel()
		attacker.Wait()
	}
}

// killConnections kills the clients' connections, command and pub/sub
// ones in turn, every few milliseconds until ctx ends.
func killConnections(ctx context.Context, rdb *redis.Client) {
	for i := 0; ctx.Err() == nil; i++ {
		kind := "normal"
		if i%3 == 2 {
			kind = "pubsub"
		}
		_ = rdb.ClientKillByFilter(ctx, "TYPE", kind).Err()
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(5+i%20) * time.Millisecond):
		}
	}
}
