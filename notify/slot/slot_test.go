package slot

import "testing"

// Known answers from CLUSTER KEYSLOT (the harness's cluster test also
// compares Of with a live server).
func TestOf(t *testing.T) {
	for name, want := range map[string]int{
		"foo":                  12182,
		"{user1000}.following": 3443,
		"{user1000}.followers": 3443,
		"foo{}{bar}":           8363,
		"foo{{bar}}zap":        4015,
		"foo{bar}{zap}":        5061,
		"":                     0,
	} {
		if got := Of(name); got != want {
			t.Errorf("Of(%q) = %d, want %d", name, got, want)
		}
	}
}
