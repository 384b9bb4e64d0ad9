package rlock

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/batonlock/baton/notify/slot"
	"github.com/batonlock/baton/reentrant"
)

// renewGroups makes one group per slot, in the order the slots first
// appear, cut into chunks of at most renewChunk holds; without bySlot
// (Redisson's single node) it cuts the whole batch only.
func TestRenewGroupsBySlotInChunks(t *testing.T) {
	of := func(name string) *hold {
		k, err := reentrant.Namespace{}.Keys(name)
		require.NoError(t, err)
		return &hold{res: &plainLock{keys: k}}
	}
	require.NotEqual(t, slot.Of("a"), slot.Of("b"))
	var batch []*hold
	var a, b []int
	for i := range 2*renewChunk + 10 {
		if i%3 == 1 {
			b = append(b, len(batch))
			batch = append(batch, of("b"))
			continue
		}
		a = append(a, len(batch))
		batch = append(batch, of("a"))
	}
	require.Equal(t, [][]int{a[:renewChunk], a[renewChunk:], b}, renewGroups(batch, true))
	all := make([]int, len(batch))
	for i := range all {
		all[i] = i
	}
	require.Equal(t, [][]int{all[:renewChunk], all[renewChunk : 2*renewChunk], all[2*renewChunk:]}, renewGroups(batch, false))
}
