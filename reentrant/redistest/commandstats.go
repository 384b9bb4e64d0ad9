package redistest

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandStats maps a lower-case command name ("evalsha", "publish") to the
// number of calls INFO commandstats reports for it.
type CommandStats map[string]int64

// ReadCommandStats runs INFO commandstats on rdb and parses it.
func ReadCommandStats(ctx context.Context, rdb redis.Cmdable) (CommandStats, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	return ParseCommandStats(info)
}

// ParseCommandStats parses the text of INFO commandstats, whose lines look like
// "cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,...". Subcommands
// ("cmdstat_client|list") keep their "|" form.
func ParseCommandStats(info string) (CommandStats, error) {
	stats := CommandStats{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		calls, found := "", false
		for _, kv := range strings.Split(fields, ",") {
			if v, isCalls := strings.CutPrefix(kv, "calls="); isCalls {
				calls, found = v, true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("redistest: commandstats line without calls: %q", line)
		}
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redistest: commandstats line %q: %w", line, err)
		}
		stats[strings.ToLower(strings.TrimPrefix(name, "cmdstat_"))] = n
	}
	return stats, sc.Err()
}

// Sub returns the per-command difference s - before, dropping zero entries.
func (s CommandStats) Sub(before CommandStats) CommandStats {
	d := CommandStats{}
	for k, v := range s {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// Total is the sum of calls over all commands.
func (s CommandStats) Total() int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}
