package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// servedCert is the certificate --tls-cert and --tls-key name, read again
// at a handshake once the certificate file has changed: cert-manager
// renews a mounted Secret's files in place (a month before they end, for
// deploy/'s spotter-peer), and a replica that runs longer than that must
// serve the renewal, not the certificate it started with.
type servedCert struct {
	certFile, keyFile string

	mu   sync.Mutex
	mod  time.Time // the certificate file's, when cur was read
	size int64
	cur  *tls.Certificate
}

// loadServedCert reads the pair once, so that a bad one stops the start.
func loadServedCert(certFile, keyFile string) (*servedCert, error) {
	s := &servedCert{certFile: certFile, keyFile: keyFile}
	if err := s.reload(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *servedCert) reload() error {
	st, err := os.Stat(s.certFile)
	if err != nil {
		return err
	}
	if s.cur != nil && st.ModTime().Equal(s.mod) && st.Size() == s.size {
		return nil
	}
	c, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return err
	}
	s.cur, s.mod, s.size = &c, st.ModTime(), st.Size()
	return nil
}

// get is tls.Config.GetCertificate. A pair that cannot be read now (a
// renewal half written) leaves the last good one in use until it can.
func (s *servedCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(); err != nil && s.cur == nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	return s.cur, nil
}
