package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TLSMaterial is a throwaway certificate authority and a server certificate
// it signed for 127.0.0.1, written as PEM files for redis-server.
type TLSMaterial struct {
	CAFile, CertFile, KeyFile string
	// RootCAs trusts the CA, for the client's tls.Config.
	RootCAs *x509.CertPool
}

// generateTLS makes a fresh ECDSA CA and server certificate in a temporary
// directory. They are valid for an hour, for IP 127.0.0.1 only.
func generateTLS(tb testing.TB) TLSMaterial {
	tb.Helper()
	dir := tb.TempDir()
	now := time.Now()
	caKey := newKey(tb)
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatalf("redistest: CA certificate: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatalf("redistest: CA certificate: %v", err)
	}
	srvKey := newKey(tb)
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		tb.Fatalf("redistest: server certificate: %v", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		tb.Fatalf("redistest: server key: %v", err)
	}
	m := TLSMaterial{
		CAFile:   writePEM(tb, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER),
		CertFile: writePEM(tb, filepath.Join(dir, "server.crt"), "CERTIFICATE", srvDER),
		KeyFile:  writePEM(tb, filepath.Join(dir, "server.key"), "EC PRIVATE KEY", keyDER),
		RootCAs:  x509.NewCertPool(),
	}
	m.RootCAs.AddCert(caCert)
	return m
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatalf("redistest: key: %v", err)
	}
	return k
}

func writePEM(tb testing.TB, path, kind string, der []byte) string {
	tb.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		tb.Fatalf("redistest: write %s: %v", path, err)
	}
	return path
}

// TLSServer is a Server that also serves TLS, on TLSAddr. Its plain port
// stays open for Admin and the start-up check; clients under test use
// TLSClient.
type TLSServer struct {
	*Server
	TLSAddr string
	TLS     TLSMaterial
}

// StartTLS starts a server like Start that also listens for TLS on a second
// loopback port, with fresh material from generateTLS and client
// certificates not required.
func StartTLS(tb testing.TB, args ...string) *TLSServer {
	tb.Helper()
	m := generateTLS(tb)
	port := freePort(tb)
	tlsArgs := []string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", m.CertFile,
		"--tls-key-file", m.KeyFile,
		"--tls-ca-cert-file", m.CAFile,
		"--tls-auth-clients", "no",
	}
	s := Start(tb, append(tlsArgs, args...)...)
	return &TLSServer{Server: s, TLSAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), TLS: m}
}

// TLSClient returns a go-redis client that reaches the server over TLS,
// trusting only the generated CA, closed at test end. Options may adjust the
// defaults; Addr and TLSConfig are always the server's TLS ones.
func (s *TLSServer) TLSClient(opts ...func(*redis.Options)) *redis.Client {
	return s.client(Options(""), opts, func(o *redis.Options) {
		o.Addr = s.TLSAddr
		o.TLSConfig = &tls.Config{RootCAs: s.TLS.RootCAs, MinVersion: tls.VersionTLS12}
	})
}
