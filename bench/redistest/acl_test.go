package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Under ACLEnv=1, Client is the restricted user and Admin is not, also after
// a Restart; CI relies on it to run the lock tests as that user.
func TestACLModeRestrictsClient(t *testing.T) {
	t.Setenv(ACLEnv, "1")
	UseACLRules("+set ~baton:*")
	t.Cleanup(func() { UseACLRules("") })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := Start(t)
	for round := 0; round < 2; round++ {
		rdb, admin := s.Client(), s.Admin()
		require.ErrorContains(t, rdb.Info(ctx).Err(), "NOPERM")
		require.ErrorContains(t, rdb.Set(ctx, "outside", 1, 0).Err(), "NOPERM")
		require.NoError(t, rdb.Set(ctx, "baton:{x}", 1, 0).Err())
		require.Equal(t, "default", admin.ACLWhoAmI(ctx).Val())
		require.NoError(t, admin.Info(ctx).Err())
		s.Restart()
	}
}
