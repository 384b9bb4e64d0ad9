package redistest

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/batonlock/baton/bench/redistest/redisproc"
)

// CommandStats maps a lower-case command name ("evalsha", "publish") to the
// number of calls INFO commandstats reports for it.
type CommandStats = redisproc.CommandStats

// ReadCommandStats runs INFO commandstats on rdb and returns the calls per
// command.
func ReadCommandStats(ctx context.Context, rdb redis.Cmdable) (CommandStats, error) {
	c, err := redisproc.ReadCommands(ctx, rdb)
	return c.Calls, err
}
