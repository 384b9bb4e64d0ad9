package relay

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Each connection is paired with one to the target and served; Close ends
// both and waits for the serve function. A client whose dial to the
// target fails is hung up on.
func TestRelayPairsAndCloses(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer target.Close()
	served := make(chan struct{})
	r, err := Start(target.Addr().String(), func(client, server net.Conn) {
		defer close(served)
		_, _ = io.Copy(server, client) // until Close ends the connections
	})
	require.NoError(t, err)

	client, err := net.Dial("tcp", r.Addr)
	require.NoError(t, err)
	defer client.Close()
	server, err := target.Accept()
	require.NoError(t, err)
	defer server.Close()
	_, err = client.Write([]byte("ping"))
	require.NoError(t, err)
	got := make([]byte, 4)
	require.NoError(t, server.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadFull(server, got)
	require.NoError(t, err)
	require.Equal(t, "ping", string(got))

	require.NoError(t, r.Close())
	<-served
	require.NoError(t, client.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = client.Read(got)
	require.ErrorIs(t, err, io.EOF, "the relay hung up")
}

func TestRelayHangsUpWhenTheTargetIsDown(t *testing.T) {
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := gone.Addr().String()
	require.NoError(t, gone.Close())
	r, err := Start(addr, func(net.Conn, net.Conn) { t.Error("served without a target") })
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	client, err := net.Dial("tcp", r.Addr)
	require.NoError(t, err)
	defer client.Close()
	require.NoError(t, client.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = client.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
}
