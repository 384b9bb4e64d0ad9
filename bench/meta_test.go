package bench

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMetaFromBuildInfo(t *testing.T) {
	m := Meta{Peers: map[string]string{}}
	m.setBuild(&debug.BuildInfo{
		Main: debug.Module{Path: "github.com/batonlock/baton", Version: "v1.2.3"},
		Deps: []*debug.Module{
			{Path: "github.com/bsm/redislock", Version: "v0.9.4"},
			{Path: "github.com/redis/go-redis/v9", Version: "v9.22.0"},
			{Path: "github.com/redis/rueidis", Version: "v1.0.76"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}},
	})
	require.Equal(t, "v1.2.3", m.ModuleVersion)
	require.Equal(t, "abc+dirty", m.Commit)
	require.Equal(t, map[string]string{"github.com/bsm/redislock": "v0.9.4", "github.com/redis/rueidis": "v1.0.76"}, m.Peers,
		"the peers only")
}

func TestInfoField(t *testing.T) {
	info := "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n"
	require.Equal(t, "7.0.15", infoField(info, "redis_version"))
	require.Empty(t, infoField(info, "redis_mode"))
}
