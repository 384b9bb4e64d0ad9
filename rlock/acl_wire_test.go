package rlock

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/bench/redistest"
)

// aclWireNames is the key pattern a deployment adds to the wire-mode rules:
// aclWorkload's lock names all start "acl/".
const aclWireNames = " ~acl/*"

// The wire-mode rules, with the deployment's key pattern, are exactly
// enough for aclWorkload in Redisson's format, on both topologies.
func TestACLRedissonRulesAreSufficientAndMinimal(t *testing.T) {
	clusterSrv, clusterReady := oneNodeCluster(t, "--acllog-max-len", "1024")
	wire := WithRedissonWire("")
	t.Run("single", func(t *testing.T) {
		srv := redistest.Start(t, "--acllog-max-len", "1024")
		checkACLRules(t, srv.Admin(), ACLRedissonRules+aclWireNames, func(user string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: aclPassword})
		}, wire)
	})
	t.Run("cluster", func(t *testing.T) {
		clusterReady()
		checkACLRules(t, clusterSrv.Admin(), ACLRedissonClusterRules+aclWireNames, func(user string) redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{clusterSrv.Addr}, Username: user, Password: aclPassword})
		}, wire)
	})
}

// The README shows the single-node wire-mode rules as they are.
func TestREADMEShowsTheACLRedissonRules(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	require.Contains(t, string(readme), "-@all "+ACLRedissonRules+" ~orders/*\n")
}
