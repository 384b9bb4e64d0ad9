package rlock

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/reentrant"
)

// clientKind reports whether rdb is a cluster client, or why it cannot be
// used: a typed nil is as nil as an untyped one.
func clientKind(rdb redis.UniversalClient) (cluster bool, err error) {
	switch c := rdb.(type) {
	case nil:
		return false, ErrNilClient
	case *redis.Client:
		if c == nil {
			return false, ErrNilClient
		}
		return false, nil
	case *redis.ClusterClient:
		if c == nil {
			return false, ErrNilClient
		}
		return true, nil
	case *redis.Ring:
		if c == nil {
			return false, ErrNilClient
		}
	}
	return false, fmt.Errorf("%w: %T", ErrUnsupportedClient, rdb)
}

// countsExact reports whether the receiver count of a grant's PUBLISH (on
// one server) or SPUBLISH (on a cluster shard's master) can tell whether
// the waiter's client is alive: whether every connection that can receive
// the grant is on the server that runs it. It cannot where a waiter's
// subscription may be on a replica or a demoted master, which get the
// master's messages by replication without being counted: a Sentinel
// client, and a ClusterClient whose slots are not Redis Cluster's but a
// map it is given (ClusterSlots; redis.NewFailoverClusterClient's is a
// Sentinel master and its replicas, and may subscribe on a replica).
func countsExact(rdb redis.UniversalClient) bool {
	switch c := rdb.(type) {
	case *redis.Client:
		return !isFailover(c.Options())
	case *redis.ClusterClient:
		return c.Options().ClusterSlots == nil
	}
	return false
}

// failoverAddr is the Addr go-redis gives the options of a Sentinel client
// (redis.NewFailoverClient, or redis.NewUniversalClient with MasterName),
// whose dialer asks the sentinels for the master.
const failoverAddr = "FailoverClient"

// isFailover reports whether o are a Sentinel client's options. go-redis
// marks them only by their Addr; since that marker is not its API, any
// Addr a TCP client could not dial counts too, so that a renamed marker
// makes the client judge liveness by key (slower) rather than by count.
func isFailover(o *redis.Options) bool {
	if o.Addr == failoverAddr {
		return true
	}
	if o.Network == "unix" {
		return false
	}
	_, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return true
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err != nil
}

// requestTTL is how long a request's result must be remembered: longer than
// the window in which go-redis may resend the call after timeouts.
func requestTTL(rdb redis.UniversalClient) time.Duration {
	var retries int
	var read, write, backoff time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		retries, read, write, backoff = o.MaxRetries, o.ReadTimeout, o.WriteTimeout, o.MaxRetryBackoff
	case *redis.ClusterClient:
		o := c.Options()
		retries, read, write, backoff = o.MaxRedirects+o.MaxRetries, o.ReadTimeout, o.WriteTimeout, o.MaxRetryBackoff
	default:
		return reentrant.DefaultRequestTTL
	}
	perTry := max(read, 0) + max(write, 0) + max(backoff, 0)
	if perTry == 0 {
		perTry = 5 * time.Second // timeouts disabled: assume a generous network stall
	}
	return time.Duration(max(retries, 0))*perTry + time.Second
}
