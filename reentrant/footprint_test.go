package reentrant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// footprintLease is the lease of the footprint test's holds: every key
// they leave expires within two of them (see the package doc's Keys).
const footprintLease = 200 * time.Millisecond

// footprintNS keeps request results no longer than the keys they belong to.
var footprintNS = Namespace{RequestTTL: footprintLease}

// No key baton writes lives forever: after 10,000 names of each kind are
// held and released, a waiter is left queued behind a hold nobody
// releases, an idle semaphore's size is set, and two leases have passed,
// nothing is left.
func TestNothingLeftAfterExpiry(t *testing.T) {
	_, rdb, _ := setup(t, "footprint")
	// Its 80,000 script calls take 12 s under -race on a 2-core machine at
	// a load of 4, and went past setup's 20 s bound at a load of 9: the
	// bound is for a hang, so it is 5 times the run, not a speed limit.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	const names, workers = 10000, 8
	var wg sync.WaitGroup
	errs := make([]error, workers) // each worker's first error
	for w := range workers {
		wg.Go(func() {
			for i := w; i < names && errs[w] == nil; i += workers {
				errs[w] = holdEach(ctx, rdb, fmt.Sprint("n", i))
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	leaveQueued(t, ctx, rdb)
	time.Sleep(2*footprintLease + 10*time.Millisecond)

	// SCAN skips (and deletes) every key whose expiry has passed.
	left, _, err := rdb.Scan(ctx, 0, "*", 1<<20).Result()
	require.NoError(t, err)
	require.Empty(t, left[:min(len(left), 10)], "keys left after their expiry (the first 10 of %d)", len(left))
	require.Zero(t, rdb.DBSize(ctx).Val())
}

// holdEach takes and releases a hold of the lock and of each shared resource on name:
// a lock, an RW write and read, and a semaphore's permit.
func holdEach(ctx context.Context, rdb *redis.Client, name string) error {
	l, err := footprintNS.Keys(name)
	if err != nil {
		return err
	}
	r, err := l.AcquireNew(ctx, rdb, "o", footprintLease, Waiter{})
	if err == nil {
		_, err = l.Release(ctx, rdb, "o", r.Token, "rel")
	}
	if err != nil {
		return err
	}
	k, err := footprintNS.SharedKeys(KindRW, name)
	if err != nil {
		return err
	}
	s, err := footprintNS.SharedKeys(KindSemaphore, name)
	if err == nil {
		s, err = s.WithSize(2)
	}
	if err != nil {
		return err
	}
	write, _ := k.Write()
	read, _ := k.Read()
	p, _ := s.Permits(1)
	for _, sh := range []SharedMode{write, read, p} {
		g, err := sh.AcquireNew(ctx, rdb, "o", footprintLease, Waiter{})
		if err == nil {
			_, err = sh.Release(ctx, rdb, "o", g.Token, "rel")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// leaveQueued leaves a waiter queued behind a hold of each kind that
// nobody releases: the hold expires, and the queue must too. It also sets
// the size of a semaphore nobody uses, which must expire as well.
func leaveQueued(t *testing.T, ctx context.Context, rdb *redis.Client) {
	t.Helper()
	l, err := footprintNS.Keys("queued")
	require.NoError(t, err)
	_, err = l.AcquireNew(ctx, rdb, "holder", footprintLease, Waiter{})
	require.NoError(t, err)
	r, err := l.AcquireNew(ctx, rdb, "waiter", footprintLease, Waiter{ID: "w", Channel: l.GrantChannel("c")})
	require.NoError(t, err)
	require.False(t, r.Acquired)

	k := sharedKeys(t, footprintNS, KindRW, "queued", 0)
	read, write := rw(t, k)
	_, err = write.AcquireNew(ctx, rdb, "holder", footprintLease, Waiter{})
	require.NoError(t, err)
	g, err := read.AcquireNew(ctx, rdb, "waiter", footprintLease, k.Waiter("w", "c"))
	require.NoError(t, err)
	require.False(t, g.Acquired)

	s := sharedKeys(t, footprintNS, KindSemaphore, "queued", 1)
	p, err := s.Permits(1)
	require.NoError(t, err)
	_, err = p.AcquireNew(ctx, rdb, "holder", footprintLease, Waiter{})
	require.NoError(t, err)
	g, err = p.AcquireNew(ctx, rdb, "waiter", footprintLease, s.Waiter("w", "c"))
	require.NoError(t, err)
	require.False(t, g.Acquired)
	require.NoError(t, sharedKeys(t, footprintNS, KindSemaphore, "idle", 1).SetSize(ctx, rdb, 3, footprintLease))
}

// The counter names the hold's token, so it must outlive the hold however
// long a renewal or a re-entry extends it: each hold here is taken with a
// short lease, extended at once to a long one, and used again once the
// counter would have expired by the short lease.
func TestCounterOutlivesExtendedHold(t *testing.T) {
	ctx, rdb, _ := setup(t, "outlive")
	const short, long = 300 * time.Millisecond, 5 * time.Second
	extend := map[string]func(l Keys, token uint64) error{
		"renewal": func(l Keys, token uint64) error {
			_, err := l.Renew(ctx, rdb, "o", token, long)
			return err
		},
		"re-entry": func(l Keys, token uint64) error {
			_, err := l.Acquire(ctx, rdb, "o", "again", long, token, Waiter{})
			return err
		},
	}
	tokens := map[string]uint64{}
	for name, ext := range extend {
		l, err := footprintNS.Keys(name)
		require.NoError(t, err)
		r, err := l.AcquireNew(ctx, rdb, "o", short, Waiter{})
		require.NoError(t, err)
		require.NoError(t, ext(l, r.Token))
		tokens[name] = r.Token
	}
	time.Sleep(2*short + 200*time.Millisecond)
	l, err := footprintNS.Keys("renewal")
	require.NoError(t, err)
	renewed, err := l.Renew(ctx, rdb, "o", tokens["renewal"], long)
	require.NoError(t, err)
	require.True(t, renewed, "the hold is renewed under its token")
	l, err = footprintNS.Keys("re-entry")
	require.NoError(t, err)
	for i, want := range []ReleaseStatus{StillHeld, Released} {
		rel, err := l.Release(ctx, rdb, "o", tokens["re-entry"], fmt.Sprint("rel-", i))
		require.NoError(t, err)
		require.Equal(t, want, rel.Status, "released under the token")
	}
}
