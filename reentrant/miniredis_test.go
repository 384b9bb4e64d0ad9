package reentrant

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/require"
)

// The bench command runs on an embedded miniredis by default, so the scripts
// must run on its Lua interpreter too.
func TestScriptsRunOnMiniredis(t *testing.T) {
	l, err := Namespace{}.Keys("mini")
	require.NoError(t, err)
	runEveryScript(t, miniredisClient(t, miniredis.RunT(t)), l)
}
