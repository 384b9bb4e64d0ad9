package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/notify/slot"
)

// clusterTimeout bounds cluster creation, and each slot migration, from the
// first command until every node agrees on the result.
const clusterTimeout = 20 * time.Second

// Cluster is a Redis Cluster of masters, each a Server on a loopback port,
// without replicas but those AddReplica gives a master. Its topology
// changes only through MigrateSlot and AddReplica, which wait until every
// node agrees, so any node's view of the slots is the truth.
type Cluster struct {
	// Nodes are the masters, in the order of their slot ranges at creation:
	// Nodes[0] serves the lowest slots.
	Nodes []*Node

	tb testing.TB
}

// Node is one master of a Cluster, or a replica AddReplica added.
type Node struct {
	*Server
	// ID is the node's cluster ID, as CLUSTER MYID reports it.
	ID string

	busPort int // its cluster bus port
	admin   *redis.Client
}

// Admin returns a client connected straight to this node (not through the
// cluster), as the default user. It is shared, and closed at test end.
func (n *Node) Admin() *redis.Client { return n.admin }

// StartCluster launches n cluster-enabled redis-servers, joins them with
// redis-cli --cluster create (slots split evenly, no replicas) and waits
// until every node reports cluster_state:ok and all agree on who serves
// every slot. The servers stop when the test ends. Like Start, it skips
// under -short, and fails when redis-server or redis-cli is missing.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	cli := binary(tb, cliBinary)
	if n < 3 {
		tb.Fatalf("redistest: a cluster needs at least 3 masters, got %d", n)
	}
	c := &Cluster{tb: tb}
	create := []string{"--cluster", "create"}
	for range n {
		node := startNode(tb)
		c.Nodes = append(c.Nodes, node)
		create = append(create, node.Addr)
	}
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, create...).CombinedOutput(); err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, node := range c.Nodes {
		id, err := node.admin.ClusterMyID(ctx).Result()
		if err != nil {
			tb.Fatalf("redistest: CLUSTER MYID on %s: %v", node.Addr, err)
		}
		node.ID = id
	}
	c.awaitAgreement(ctx, tb, func(slots []*Node) error {
		if i := slices.Index(slots, nil); i >= 0 {
			return fmt.Errorf("slot %d is not served", i)
		}
		return nil
	})
	return c
}

// AddReplica starts a node, joins it to the cluster as a replica of
// master, and returns once it has synced and every master lists it in
// master's shard: a WAIT on master counts it from then on. It is not one
// of Nodes, which are the masters.
func (c *Cluster) AddReplica(tb testing.TB, master *Node) *Node {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	syncAtOnce(tb, master.Server)
	replica := startNode(tb)
	if err := replica.admin.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", master.Port, master.busPort).Err(); err != nil {
		tb.Fatalf("redistest: CLUSTER MEET: %v", err)
	}
	// CLUSTER REPLICATE needs the master known to the replica: the MEET's
	// handshake has to end first.
	await(tb, func(ctx context.Context) bool {
		return replica.admin.Do(ctx, "CLUSTER", "REPLICATE", master.ID).Err() == nil
	}, "the new node may replicate "+master.Addr)
	awaitSynced(tb, replica.Server)
	await(tb, func(ctx context.Context) bool {
		for _, n := range c.Nodes {
			if !lists(ctx, n, master, replica) {
				return false
			}
		}
		return true
	}, "every master lists the replica")
	id, err := replica.admin.ClusterMyID(ctx).Result()
	if err != nil {
		tb.Fatalf("redistest: CLUSTER MYID on %s: %v", replica.Addr, err)
	}
	replica.ID = id
	return replica
}

// lists reports whether node's CLUSTER SHARDS has replica in master's
// shard.
func lists(ctx context.Context, node, master, replica *Node) bool {
	shards, err := node.admin.ClusterShards(ctx).Result()
	if err != nil {
		return false
	}
	for _, sh := range shards {
		var hasMaster, hasReplica bool
		for _, sn := range sh.Nodes {
			hasMaster = hasMaster || sn.ID == master.ID
			hasReplica = hasReplica || (sn.Port == int64(replica.Port) && sn.Role == "replica")
		}
		if hasMaster && hasReplica {
			return true
		}
	}
	return false
}

func startNode(tb testing.TB) *Node {
	tb.Helper()
	busPort := freePort(tb)
	// The bus port is given explicitly: the default, port+10000, may be
	// taken or beyond 65535.
	srv := Start(tb,
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(tb.TempDir(), "nodes.conf"),
		"--cluster-node-timeout", "2000",
		"--cluster-port", strconv.Itoa(busPort),
	)
	return &Node{Server: srv, busPort: busPort, admin: srv.Admin()}
}

// ClusterClient returns a new cluster client, closed at test end. Options
// may adjust the defaults; Addrs, the seeds it learns the topology from,
// defaults to every node.
func (c *Cluster) ClusterClient(opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	o := &redis.ClusterOptions{}
	for _, f := range opts {
		f(o)
	}
	if len(o.Addrs) == 0 {
		o.Addrs = c.addrs()
	}
	rdb := redis.NewClusterClient(o)
	c.tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// addrs returns the address of every node.
func (c *Cluster) addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Owner returns the node that serves slot.
func (c *Cluster) Owner(tb testing.TB, slot int) *Node {
	tb.Helper()
	return c.owners(tb)[slot]
}

// owners is the node serving each slot, as the first node sees it.
func (c *Cluster) owners(tb testing.TB) []*Node {
	tb.Helper()
	owners, err := c.slotOwners(context.Background(), c.Nodes[0])
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return owners
}

// TagOn returns prefix followed by the first number for which the string,
// used as a hash tag ("{" + tag + "}"), lands in a slot that node serves.
func (c *Cluster) TagOn(tb testing.TB, node *Node, prefix string) string {
	tb.Helper()
	owners := c.owners(tb)
	for i := 0; ; i++ {
		tag := prefix + strconv.Itoa(i)
		if owners[slot.Of(tag)] == node {
			return tag
		}
	}
}

// MigrateSlot moves slot, with its keys, from the node serving it to the
// node to, the way redis-cli --cluster reshard does: mark it importing on
// the target and migrating on the source, MIGRATE its keys, then assign it
// to the target on every node. It returns once every node agrees.
func (c *Cluster) MigrateSlot(tb testing.TB, slot int, to *Node) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	from := c.Owner(tb, slot)
	if from == to {
		tb.Fatalf("redistest: slot %d is already served by %s", slot, to.Addr)
	}
	must := func(node *Node, args ...any) {
		tb.Helper()
		if err := node.admin.Do(ctx, args...).Err(); err != nil {
			tb.Fatalf("redistest: %v on %s: %v", args, node.Addr, err)
		}
	}
	// Importing before migrating: a client redirected by ASK must find the
	// target ready.
	must(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", from.ID)
	must(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", to.ID)
	for {
		keys, err := from.admin.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			tb.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", slot, from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", to.Port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		must(from, args...)
	}
	// The target first, so that once the source redirects, the target
	// accepts; then the source, then the bystanders.
	must(to, "CLUSTER", "SETSLOT", slot, "NODE", to.ID)
	must(from, "CLUSTER", "SETSLOT", slot, "NODE", to.ID)
	for _, node := range c.Nodes {
		if node != to && node != from {
			must(node, "CLUSTER", "SETSLOT", slot, "NODE", to.ID)
		}
	}
	c.awaitAgreement(ctx, tb, func(slots []*Node) error {
		if slots[slot] != to {
			return fmt.Errorf("slot %d is not yet served by %s", slot, to.Addr)
		}
		return nil
	})
}

// awaitAgreement polls until every node reports cluster_state:ok, every
// node maps every slot to the same node, and check accepts that mapping.
func (c *Cluster) awaitAgreement(ctx context.Context, tb testing.TB, check func(slots []*Node) error) {
	tb.Helper()
	var last error
	for {
		if last = c.agreement(ctx, check); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: cluster not settled within %v: %v", clusterTimeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) agreement(ctx context.Context, check func(slots []*Node) error) error {
	var first []*Node
	for _, node := range c.Nodes {
		info, err := node.admin.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER INFO on %s: %w", node.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok", node.Addr)
		}
		owners, err := c.slotOwners(ctx, node)
		if err != nil {
			return err
		}
		if first == nil {
			first = owners
		} else if !slices.Equal(first, owners) {
			return fmt.Errorf("%s and %s disagree on the slots", c.Nodes[0].Addr, node.Addr)
		}
	}
	return check(first)
}

// slotOwners maps each slot to the node that serves it in node's view; nil
// where that view has no master for it.
func (c *Cluster) slotOwners(ctx context.Context, node *Node) ([]*Node, error) {
	shards, err := node.admin.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS on %s: %w", node.Addr, err)
	}
	owners := make([]*Node, slot.Count)
	for _, sh := range shards {
		var master *Node
		for _, sn := range sh.Nodes {
			if sn.Role != "master" {
				continue
			}
			addr := fmt.Sprintf("%s:%d", sn.IP, sn.Port)
			for _, n := range c.Nodes {
				if n.Addr == addr {
					master = n
				}
			}
			if master == nil {
				return nil, fmt.Errorf("%s names an unknown master %s", node.Addr, addr)
			}
		}
		if master == nil {
			continue
		}
		for _, r := range sh.Slots {
			for s := r.Start; s <= r.End && s < slot.Count; s++ {
				owners[s] = master
			}
		}
	}
	return owners, nil
}
