package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"
	"k8s.io/klog/v2"
)

// ClientConfig says where nodelet's API credential comes from.
type ClientConfig struct {
	// KubeconfigPath is --kubeconfig: used as it is when its credential is
	// usable, written after bootstrapping when it is not.
	KubeconfigPath string
	// BootstrapKubeconfigPath is --bootstrap-kubeconfig ("" = none).
	BootstrapKubeconfigPath string
	// CertDir is --cert-dir, where the certificate pairs are stored.
	CertDir string
	// NodeName is the node the certificate is requested for.
	NodeName string
	// Rotate is rotateCertificates: renew the client certificate before it
	// expires.
	Rotate bool
}

// Plan is what to do about the client credential at start.
type Plan struct {
	// Manage: the credential comes from the certificate manager (bootstrap
	// and/or rotation); otherwise the kubeconfig is used as it is.
	Manage bool
	// Bootstrap: the kubeconfig's credential is unusable and the first
	// certificate is requested with the bootstrap kubeconfig's.
	Bootstrap bool
}

// Decide picks the Plan from the flags and why the kubeconfig's client
// certificate is unusable (nil: usable), as upstream does: a bootstrap
// kubeconfig is only used when the kubeconfig cannot authenticate with a
// certificate; rotation manages whatever certificate there is.
func Decide(bootstrapGiven, rotate bool, kubeconfigUnusable error) Plan {
	bootstrap := bootstrapGiven && kubeconfigUnusable != nil
	return Plan{Manage: rotate || bootstrap, Bootstrap: bootstrap}
}

// Client is nodelet's API credential when nodelet manages it. Every API
// client built from RESTConfig presents the current certificate in each TLS
// handshake, and Run closes their connections when the certificate changes
// so that they reconnect with the new one.
type Client struct {
	cfg     ClientConfig
	manager *manager
	rest    *rest.Config
	dialer  *connrotation.Dialer
}

// NewClient prepares the credential as ClientConfig and the kubeconfig's
// state call for. It returns nil and no error when the kubeconfig is to be
// used as it is. Bootstrapping writes the kubeconfig (pointing at the
// certificate that is yet to be issued, as upstream) before returning; the
// certificate itself is requested by Run.
func NewClient(cfg ClientConfig) (*Client, error) {
	unusable := KubeconfigUsable(cfg.KubeconfigPath, time.Now())
	plan := Decide(cfg.BootstrapKubeconfigPath != "", cfg.Rotate, unusable)
	if !plan.Manage {
		return nil, nil
	}
	store := FileStore{Dir: cfg.CertDir, Prefix: ClientPairPrefix}
	var certConfig, clientConfig *rest.Config
	var err error
	if plan.Bootstrap {
		if !errors.Is(unusable, fs.ErrNotExist) {
			klog.InfoS("Kubeconfig has no usable client certificate: bootstrapping", "kubeconfig", cfg.KubeconfigPath, "reason", unusable)
		}
		if certConfig, err = loadKubeconfig(cfg.BootstrapKubeconfigPath); err != nil {
			return nil, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
		}
		if err := writeKubeconfig(cfg.KubeconfigPath, BootstrappedKubeconfig(certConfig, store.CurrentPath())); err != nil {
			return nil, err
		}
		clientConfig = certConfig
	} else {
		if clientConfig, err = loadKubeconfig(cfg.KubeconfigPath); err != nil {
			return nil, err
		}
		certConfig = clientConfig
	}

	c := &Client{cfg: cfg, dialer: connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)}
	if c.rest, err = c.rotatingConfig(clientConfig); err != nil {
		return nil, err
	}
	c.manager = &manager{
		name:     "client",
		store:    store,
		template: func() *x509.CertificateRequest { return ClientTemplate(cfg.NodeName) },
		signer:   certificatesv1.KubeAPIServerClientKubeletSignerName,
		usages:   clientUsages,
		client: func(current *tls.Certificate) (CSRClient, error) {
			// With a certificate the node renews with its own identity;
			// without one, only the bootstrap (or kubeconfig) credential
			// can ask.
			if current != nil {
				return NewCSRClient(c.rest)
			}
			return NewCSRClient(certConfig)
		},
		rotate: cfg.Rotate,
	}
	c.manager.load(time.Now())
	if c.manager.Current() == nil && !plan.Bootstrap {
		// The kubeconfig's own pair starts the store, so that the layout
		// kubeadm and operators look for exists from the start.
		if err := c.adoptKubeconfigPair(clientConfig); err != nil {
			klog.InfoS("Kubeconfig's client certificate not adopted: requesting one", "reason", err)
		}
	}
	return c, nil
}

// adoptKubeconfigPair stores the kubeconfig's certificate and key as the
// current pair.
func (c *Client) adoptKubeconfigPair(cfg *rest.Config) error {
	certPEM, keyPEM := cfg.CertData, cfg.KeyData
	var err error
	if len(certPEM) == 0 && cfg.CertFile != "" {
		if certPEM, err = os.ReadFile(cfg.CertFile); err != nil {
			return err
		}
	}
	if len(keyPEM) == 0 && cfg.KeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.KeyFile); err != nil {
			return err
		}
	}
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return errNoClientCert
	}
	pair, err := c.manager.store.Update(certPEM, keyPEM, time.Now())
	if err != nil {
		return err
	}
	c.manager.current.Store(pair)
	return nil
}

// rotatingConfig is base without its client credential, with a transport
// whose handshakes present the current certificate and whose connections
// the dialer can close.
func (c *Client) rotatingConfig(base *rest.Config) (*rest.Config, error) {
	// AnonymousClientConfig keeps the server and CA, drops every credential
	// (a bearer token included: the certificate is the identity, as
	// upstream).
	cfg := rest.AnonymousClientConfig(base)
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("TLS for the API client: %w", err)
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if cert := c.manager.Current(); cert != nil {
			return cert, nil
		}
		// No certificate yet: the handshake goes on without one and the
		// request is anonymous, as upstream's while it bootstraps.
		return &tls.Certificate{}, nil
	}
	cfg.Transport = utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         c.dialer.DialContext,
	})
	// The transport does TLS now; rest refuses a transport with TLS options.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	return cfg, nil
}

// RESTConfig is the client configuration for API clients: a copy each
// call, all sharing the rotating transport.
func (c *Client) RESTConfig() *rest.Config { return rest.CopyConfig(c.rest) }

// Current is the current client certificate, nil before the first.
func (c *Client) Current() *tls.Certificate { return c.manager.Current() }

// Check periods of Run: how often the current certificate is compared with
// the one connections were made with (a pointer comparison), and how long
// nodelet goes on without a valid certificate while the API server answers
// before it gives up, as upstream (whose supervisor may then restart it with
// fresh bootstrap credentials).
const (
	rotationCheckPeriod = time.Second
	exitAfter           = 5 * time.Minute
)

// Run requests, stores and (with Rotate) renews the client certificate
// until ctx ends. When the certificate changes it closes every API
// connection, so each client reconnects presenting the new one; watches
// resume from their last resource version. It returns an error when no
// valid certificate was available for exitAfter while the API server
// answered.
func (c *Client) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.manager.run(ctx)
	}()
	defer func() { cancel(); <-done }()

	last := c.manager.Current()
	lastValid := time.Now()
	t := time.NewTicker(rotationCheckPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cur := c.manager.Current()
		now := time.Now()
		if cur != nil && cur.Leaf != nil && now.Before(cur.Leaf.NotAfter) {
			lastValid = now
		} else if now.Sub(lastValid) > exitAfter && c.manager.healthy.Load() {
			return fmt.Errorf("no valid client certificate for %s while the API server answers: %s", exitAfter, credentialHint(c.cfg))
		}
		if cur == nil || cur == last {
			continue
		}
		last = cur
		klog.InfoS("Client certificate changed: reconnecting to the API server with it", "notAfter", cur.Leaf.NotAfter, "file", c.manager.store.CurrentPath())
		c.dialer.CloseAll()
	}
}

func credentialHint(cfg ClientConfig) string {
	if cfg.BootstrapKubeconfigPath == "" {
		return "renew the certificate in " + cfg.KubeconfigPath + " or give a --bootstrap-kubeconfig"
	}
	return "check that the CSRs of node " + cfg.NodeName + " get approved, or that the bootstrap credential in " + cfg.BootstrapKubeconfigPath + " is still valid"
}
