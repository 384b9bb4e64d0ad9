package redisproc

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandStats maps a lower-case command name ("evalsha", "publish") to a
// count from INFO commandstats: calls, or microseconds.
type CommandStats map[string]int64

// Commands is INFO commandstats: per command, how often the server ran it
// and the microseconds of server time it took. Commands run inside scripts
// count as well, as the server executes them.
type Commands struct {
	Calls CommandStats
	Usec  CommandStats
}

// ReadCommands runs INFO commandstats on rdb and parses it.
func ReadCommands(ctx context.Context, rdb redis.Cmdable) (Commands, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return Commands{}, err
	}
	return ParseCommands(info)
}

// ParseCommands parses the text of INFO commandstats, whose lines look like
// "cmdstat_evalsha:calls=12,usec=340,usec_per_call=28.33,...". Subcommands
// ("cmdstat_client|list") keep their "|" form.
func ParseCommands(info string) (Commands, error) {
	c := Commands{Calls: CommandStats{}, Usec: CommandStats{}}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		name, fields, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.ToLower(strings.TrimPrefix(name, "cmdstat_"))
		for key, into := range map[string]CommandStats{"calls": c.Calls, "usec": c.Usec} {
			n, err := field(fields, key)
			if err != nil {
				return Commands{}, fmt.Errorf("redisproc: commandstats line %q: %w", line, err)
			}
			into[name] = n
		}
	}
	return c, sc.Err()
}

// field returns the integer value of key in "k1=v1,k2=v2,...".
func field(fields, key string) (int64, error) {
	for _, kv := range strings.Split(fields, ",") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s", key)
}

// Sub returns what happened between before and c, per command.
func (c Commands) Sub(before Commands) Commands {
	return Commands{Calls: c.Calls.Sub(before.Calls), Usec: c.Usec.Sub(before.Usec)}
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

// Total is the sum over all commands.
func (s CommandStats) Total() int64 {
	var n int64
	for _, v := range s {
		n += v
	}
	return n
}
