package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench"
	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// connect returns the target the flags name, through a delay proxy with
// -rtt, and how to let it go. A throwaway redis-server comes with a
// replicated master of its own (Target.Replicated) when replicated asks
// for one.
func connect(o options, replicated bool) (bench.Target, func(), error) {
	given := 0
	for _, s := range []string{o.addr, o.url, o.cluster} {
		if s != "" {
			given++
		}
	}
	switch {
	case given > 1 || (given > 0 && o.miniredis):
		return bench.Target{}, nil, errors.New("give at most one of -addr, -url, -cluster and -miniredis")
	case o.rtt < 0:
		return bench.Target{}, nil, errors.New("-rtt must not be negative")
	case o.rtt > 0 && (o.cluster != "" || o.miniredis):
		return bench.Target{}, nil, errors.New("-rtt needs one server (-addr, -url or the throwaway redis-server)")
	case o.quorum && (given > 0 || o.miniredis):
		return bench.Target{}, nil, errors.New("-quorum runs on throwaway redis-servers of its own: give none of -addr, -url, -cluster and -miniredis")
	case o.quorum:
		return quorumTarget(o.rtt)
	case o.cluster != "":
		addrs := strings.Split(o.cluster, ",")
		return bench.Target{Name: "Redis Cluster " + o.cluster, NewClient: func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		}}, func() {}, nil
	case o.url != "":
		return delayed(o.rtt, func(via string) (bench.Target, error) { return urlTarget("", o.url, via) })
	case o.addr != "":
		return delayed(o.rtt, func(via string) (bench.Target, error) {
			return addrTarget("Redis at "+o.addr, o.addr, via), nil
		})
	}
	if _, err := redisproc.LookPath(); err != nil || o.miniredis {
		if o.rtt > 0 {
			return bench.Target{}, nil, errors.New("-rtt needs a redis-server: none on PATH")
		}
		return bench.Embedded()
	}
	t, stop, err := throwaway(o.rtt, "throwaway redis-server on ")
	if err != nil || !replicated {
		return t, stop, err
	}
	r, stopReplicated, err := throwaway(o.rtt, "throwaway redis-server with a replica on ")
	if err != nil {
		stop()
		return t, nil, err
	}
	replica, err := startReplica(serverAddr(r))
	if err != nil {
		stopReplicated()
		stop()
		return t, nil, err
	}
	t.Replicated = &r
	return t, func() { stop(); replica.Stop(); stopReplicated() }, nil
}

// throwaway starts a redis-server, reached through a delay proxy of rtt
// each way (delayed), as the target named name and its address.
func throwaway(rtt time.Duration, name string) (bench.Target, func(), error) {
	srv, err := redisproc.Start(redisproc.Config{Args: []string{"--repl-diskless-sync-delay", "0"}})
	if err != nil {
		return bench.Target{}, nil, err
	}
	t, stopProxy, err := delayed(rtt, func(via string) (bench.Target, error) {
		t := addrTarget(name+srv.Addr, srv.Addr, via)
		t.Reset = func(ctx context.Context) error { return flushAll(ctx, srv.Addr) }
		return t, nil
	})
	if err != nil {
		srv.Stop()
		return t, nil, err
	}
	return t, func() { stopProxy(); srv.Stop() }, nil
}

// startReplica starts a redis-server that replicates the master at addr
// (through the delay proxy, if addr is one: its replication link then
// crosses the network the clients do), and returns once it has synced.
func startReplica(addr string) (*redisproc.Server, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	replica, err := redisproc.Start(redisproc.Config{Args: []string{"--replicaof", host, port}})
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), replicaSync)
	defer cancel()
	for {
		if redisproc.Synced(ctx, rdb) {
			return replica, nil
		}
		select {
		case <-ctx.Done():
			replica.Stop()
			return nil, fmt.Errorf("the replica of %s did not sync within %v", addr, replicaSync)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// replicaSync bounds how long a new replica of an empty master may take
// to sync.
const replicaSync = 10 * time.Second

// delayed makes the target of target(via), where via is the address its
// clients dial instead of the server's: a delay proxy's of rtt each way,
// or "" (the server's own) when rtt is 0. Its stop closes the proxy.
func delayed(rtt time.Duration, target func(via string) (bench.Target, error)) (bench.Target, func(), error) {
	if rtt == 0 {
		t, err := target("")
		return t, func() {}, err
	}
	t, err := target("") // the server's own address, for the proxy
	if err != nil {
		return t, nil, err
	}
	p, err := bench.StartDelayProxy(serverAddr(t), rtt)
	if err != nil {
		return t, nil, err
	}
	if t, err = target(p.Addr); err != nil {
		_ = p.Close()
		return t, nil, err
	}
	t.RTT = rtt
	return t, func() { _ = p.Close() }, nil
}

// serverAddr is the address t's clients dial.
func serverAddr(t bench.Target) string {
	rdb := t.NewClient()
	defer rdb.Close()
	return rdb.(*redis.Client).Options().Addr
}

// urlTarget is the server at a redis:// or rediss:// URL, named name, or
// by its address when name is empty; its clients dial via instead, when
// set (a TLS client still checks the server's own name), and the leak
// measure's process the server itself, whose timing does not matter.
func urlTarget(name, url, via string) (bench.Target, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return bench.Target{}, err
	}
	if name == "" {
		name = "Redis at " + opts.Addr
	}
	if via != "" {
		opts.Addr = via
	}
	return bench.Target{Name: name, URL: url, NewClient: func() redis.UniversalClient {
		c := *opts
		return redis.NewClient(&c)
	}}, nil
}

// addrTarget is the server at addr, named name; its clients dial via
// instead, when set.
func addrTarget(name, addr, via string) bench.Target {
	if via != "" {
		addr = via
	}
	return bench.Target{Name: name, URL: "redis://" + addr, NewClient: func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr})
	}}
}

// flushAll empties the server the command started, so that no run pays
// for the keys of the runs before it.
func flushAll(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	return rdb.FlushAll(ctx).Err()
}

// quorumTarget starts bench.MaxQuorumNodes throwaway redis-servers, each
// behind a delay proxy of rtt each way when rtt is set, and returns them
// as one target whose NewClient reaches the first, and how to stop them.
func quorumTarget(rtt time.Duration) (bench.Target, func(), error) {
	t := bench.Target{RTT: rtt}
	var resets []func(context.Context) error
	var stops []func()
	stopAll := func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}
	for range bench.MaxQuorumNodes {
		node, stop, err := throwaway(rtt, "")
		if err != nil {
			stopAll()
			return t, nil, err
		}
		stops, resets = append(stops, stop), append(resets, node.Reset)
		t.Nodes = append(t.Nodes, node.NewClient)
	}
	t.Name = fmt.Sprintf("%d throwaway redis-servers on 127.0.0.1", bench.MaxQuorumNodes)
	t.NewClient = t.Nodes[0]
	t.Reset = func(ctx context.Context) error {
		for _, reset := range resets {
			if err := reset(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	return t, stopAll, nil
}
