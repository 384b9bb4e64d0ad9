module github.com/batonlock/baton

go 1.25.0

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.17.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/redis/rueidis v1.0.76
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.43.0 // indirect
)
