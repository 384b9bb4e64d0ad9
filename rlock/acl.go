package rlock

// Least-privilege Redis ACLs for a baton client, for the default key prefix
// "baton:"; with WithKeyPrefix(p), write p instead of "baton:" in the key (~)
// and channel (&) patterns. Grant them to a fresh user, for example:
//
//	ACL SETUSER app on >secret resetkeys resetchannels -@all <rules>
//
// EVALSHA runs the scripts and EVAL reloads them after the server lost its
// script cache (a restart, SCRIPT FLUSH). Redis checks the commands a script
// runs against the caller's ACL too, hence the hash, string and expiry
// commands, the list commands of the waiters' queue, and PUBLISH (SPUBLISH)
// for the grant message. The last line is the RW lock's and the
// semaphore's (whose size is one more string key, and SetSize needs nothing
// more): their holds' lease deadlines are a sorted set (the ZSCORE is
// their renewal's), their grants read and trim runs of the queue, and
// their Inspect counts the queue (LLEN). GETEX is the write that changes nothing a grant
// runs before it publishes, so that a node refusing writes (a replica)
// fails the script before any waiter hears of the grant; INFO replication
// is how a script that takes, renews or grants a hold asks the server's
// role first, since a replica that takes writes (replica-read-only no)
// refuses nothing. WAIT, after a SET of a key in the hold's slot, is how a
// grant or renewal is acknowledged by replicas (see WithReplicaAcks), sent
// wherever the master has replicas; a client without it turns its default
// acknowledgements off (and says so once). SUBSCRIBE is for
// waiters: a client subscribes its grant channel once and keeps it; with
// sharded pub/sub each lock has its own, so SSUBSCRIBE and SUNSUBSCRIBE. PING is the health check of the
// pub/sub connection. Connection set-up needs nothing more: HELLO and AUTH
// are allowed to every user. A release publishes a grant before it writes,
// so a user missing the channel permission gets an error from Unlock and
// the lock stays held, never a silent hand-off to a waiter that is never
// told.
const (
	// ACLRules is what a client on a single Redis node needs.
	ACLRules = "+evalsha +eval +subscribe +ping +info|replication +wait " +
		"+get +getex +mget +set +del +exists +hexists +hget +hgetall +hset +hincrby +pexpire +pttl +time " +
		"+rpush +lpop +lindex +lpos +lrem +publish " +
		"+hmget +hdel +lrange +ltrim +llen +pexpireat +zadd +zrem +zscore +zcard +zrange +zrangebyscore ~baton:* &baton:*"

	// ACLClusterRules is what a client on a *redis.ClusterClient needs with
	// sharded pub/sub (the default). go-redis learns the topology with
	// CLUSTER SLOTS and the key positions of commands with COMMAND (without
	// it, it logs an error on every call), and follows an -ASK redirect
	// during a slot migration with ASKING (without it, renewals fail until
	// the migration ends). With WithClassicPubSub, use ACLRules plus
	// +cluster|slots +command +asking.
	ACLClusterRules = "+evalsha +eval +ssubscribe +sunsubscribe +ping +info|replication +wait +cluster|slots +command +asking " +
		"+get +getex +mget +set +del +exists +hexists +hget +hgetall +hset +hincrby +pexpire +pttl +time " +
		"+rpush +lpop +lindex +lpos +lrem +spublish " +
		"+hmget +hdel +lrange +ltrim +llen +pexpireat +zadd +zrem +zscore +zcard +zrange +zrangebyscore ~baton:* &baton:*"
)
