package rlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest"
	"github.com/batonlock/baton/rlock"
)

// One redis-server reached as 127.0.0.1:p and as localhost:p is one node
// given twice, by address: with it, that one server is a majority of 3.
// NewQuorum must refuse it with ErrInvalidQuorum.
func TestAtkQuorumSameServerTwoAddresses(t *testing.T) {
	srvs := aqNodes(t, 2)
	alias := redis.NewClient(redistest.Options(strings.Replace(srvs[0].Addr, "127.0.0.1", "localhost", 1)))
	t.Cleanup(func() { alias.Close() })
	c, err := rlock.NewQuorum([]redis.UniversalClient{srvs[0].Client(), alias, srvs[1].Client()})
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, rlock.ErrInvalidQuorum) {
		t.Fatalf("NewQuorum(%s, %s, %s) = %v, want ErrInvalidQuorum", srvs[0].Addr, alias.Options().Addr, srvs[1].Addr, err)
	}
}
