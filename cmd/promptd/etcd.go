package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EtcdConfig is the etcd cluster that holds every lease when Endpoints is
// set (api/openapi.yaml, Lock backend on etcd): PROMPTD_ETCD_ENDPOINTS and the TLS
// and auth options etcd's client takes.
type EtcdConfig struct {
	Endpoints          []string
	Username, Password string
	CAFile             string // verify the members' certificates with this CA (https endpoints)
	CertFile, KeyFile  string // client certificate, for clusters that require one
	Timeout            time.Duration
}

func (c EtcdConfig) enabled() bool { return len(c.Endpoints) > 0 }

// readEtcdConfig reads the PROMPTD_ETCD_* variables and checks them.
func readEtcdConfig(e *envReader) EtcdConfig {
	c := EtcdConfig{
		Username: e.str("PROMPTD_ETCD_USERNAME", "", "etcd auth user (with PROMPTD_ETCD_PASSWORD)", "empty"),
		Password: e.str("PROMPTD_ETCD_PASSWORD", "", "etcd auth password", "empty"),
		CAFile:   e.str("PROMPTD_ETCD_CA_FILE", "", "PEM CA of the etcd members' certificates", "empty: system roots"),
		CertFile: e.str("PROMPTD_ETCD_CERT_FILE", "", "etcd client certificate (with PROMPTD_ETCD_KEY_FILE)", "empty"),
		KeyFile:  e.str("PROMPTD_ETCD_KEY_FILE", "", "etcd client key", "empty"),
		Timeout:  e.duration("PROMPTD_ETCD_TIMEOUT", time.Second, "bound on one etcd call"),
	}
	for _, ep := range strings.Split(e.str("PROMPTD_ETCD_ENDPOINTS", "", "comma-separated etcd v3 client URLs: every lease on etcd", "empty: leases on Redis, else in memory"), ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			c.Endpoints = append(c.Endpoints, ep)
		}
	}
	for _, ep := range c.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			e.check("PROMPTD_ETCD_ENDPOINTS", fmt.Errorf("%q is not an http:// or https:// URL of an etcd member", ep))
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		e.check("PROMPTD_ETCD_CERT_FILE", errors.New("set together with PROMPTD_ETCD_KEY_FILE"))
	}
	if (c.Username == "") != (c.Password == "") {
		e.check("PROMPTD_ETCD_USERNAME", errors.New("set together with PROMPTD_ETCD_PASSWORD"))
	}
	if !c.enabled() && (c.Username != "" || c.CAFile != "" || c.CertFile != "") {
		e.check("PROMPTD_ETCD_ENDPOINTS", errors.New("etcd options are set without PROMPTD_ETCD_ENDPOINTS"))
	}
	if c.Timeout <= 0 {
		e.check("PROMPTD_ETCD_TIMEOUT", errors.New("must be positive"))
	}
	return c
}

// etcdClient builds the client. Dialing is lazy: an unreachable cluster
// makes lease calls fail (ErrUnavailable) rather than the start.
func (c EtcdConfig) client() (*clientv3.Client, error) {
	cfg := clientv3.Config{
		Endpoints:            c.Endpoints,
		Username:             c.Username,
		Password:             c.Password,
		DialTimeout:          max(c.Timeout, time.Second),
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		AutoSyncInterval:     time.Minute,
		Logger:               zap.NewNop(),
	}
	if c.CAFile != "" || c.CertFile != "" || strings.HasPrefix(c.Endpoints[0], "https://") {
		t := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.CAFile != "" {
			pem, err := os.ReadFile(c.CAFile)
			if err != nil {
				return nil, fmt.Errorf("PROMPTD_ETCD_CA_FILE: %w", err)
			}
			t.RootCAs = x509.NewCertPool()
			if !t.RootCAs.AppendCertsFromPEM(pem) {
				return nil, errors.New("PROMPTD_ETCD_CA_FILE: no PEM certificate in it")
			}
		}
		if c.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("PROMPTD_ETCD_CERT_FILE/PROMPTD_ETCD_KEY_FILE: %w", err)
			}
			t.Certificates = []tls.Certificate{cert}
		}
		cfg.TLS = t
	}
	return clientv3.New(cfg)
}
