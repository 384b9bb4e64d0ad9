package rlock

// Least-privilege Redis ACLs for a client in Redisson's format
// (WithRedissonWire). Its lock keys are the raw lock names (after
// WithKeyPrefix's prefix, if any), which only the deployment knows: these
// rules carry the commands, the unlock latches' keys
// (~redisson_unlock_latch:*), the locks' channels
// (&redisson_lock__channel:*) and the same names as keys
// (~redisson_lock__channel:*: Redisson's unlock scripts take the channel
// among their keys, so that a cluster routes them to its slot, and Redis
// checks every key of a script against the caller's ACL), and the
// deployment adds a key pattern that covers its lock names. For example, with every lock name starting
// "orders/", or with WithKeyPrefix("app:") (a Java NameMapper adding
// "app:"):
//
//	ACL SETUSER app on >secret resetkeys resetchannels -@all <rules> ~orders/*
//	ACL SETUSER app on >secret resetkeys resetchannels -@all <rules> ~app:*
//
// "~*" covers every name, and every other key. The latch and channel
// patterns can be narrowed the same way, as a name N's are
// redisson_unlock_latch:{N}:<request> and redisson_lock__channel:{N}
// (no braces added when N has one), e.g. ~redisson_unlock_latch:{app:*
// ~redisson_lock__channel:{app:* &redisson_lock__channel:{app:*.
//
// The commands are those of Redisson's scripts (the hash and expiry
// commands, GET and SET of the latch), DEL of the latch after an unlock,
// HGETALL and PTTL for Inspect, EVALSHA, EVAL and INFO replication (the
// acquire's and the renewal's check of the server's role) as for ACLRules, PUBLISH
// of the unlock message, and SUBSCRIBE and UNSUBSCRIBE: a waiter
// subscribes to its lock's channel, and the last waiter of a lock in the
// process unsubscribes. PING is the pub/sub connection's health check.
const (
	// ACLRedissonRules is what a wire-mode client on a single Redis node
	// needs, plus a key pattern for its lock names.
	ACLRedissonRules = "+evalsha +eval +subscribe +unsubscribe +ping +info|replication +wait " +
		"+get +set +del +exists +hexists +hgetall +hincrby +pexpire +pttl +publish " +
		"~redisson_unlock_latch:* ~redisson_lock__channel:* &redisson_lock__channel:*"

	// ACLRedissonClusterRules is what a wire-mode client on a
	// *redis.ClusterClient needs with sharded pub/sub (the default), plus
	// a key pattern for its lock names: SSUBSCRIBE, SUNSUBSCRIBE and
	// SPUBLISH instead, and the cluster commands of ACLClusterRules. With
	// WithClassicPubSub, use ACLRedissonRules plus +cluster|slots +command
	// +asking.
	ACLRedissonClusterRules = "+evalsha +eval +ssubscribe +sunsubscribe +ping +info|replication +wait +cluster|slots +command +asking " +
		"+get +set +del +exists +hexists +hgetall +hincrby +pexpire +pttl +spublish " +
		"~redisson_unlock_latch:* ~redisson_lock__channel:* &redisson_lock__channel:*"
)
