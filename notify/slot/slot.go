// Package slot computes the Redis Cluster hash slot of a key or a shard
// channel. It is the one copy of that function in baton: the pub/sub hub
// routes shard channels with it, and the test harness finds slot owners.
// It owns nothing else and imports nothing from baton.
package slot

import "strings"

// Count is the number of hash slots of a Redis Cluster.
const Count = 16384

// Of is the cluster slot of a key or shard channel: CRC16 (XMODEM) of its
// hash tag, the part between the first '{' and the next '}' when that is
// not empty, or else of the whole name, modulo Count. It is what CLUSTER
// KEYSLOT returns, and where SPUBLISH on a channel of that name is served.
func Of(name string) int {
	if s := strings.IndexByte(name, '{'); s >= 0 {
		if e := strings.IndexByte(name[s+1:], '}'); e > 0 {
			name = name[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(name); i++ {
		crc ^= uint16(name[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Count
}
