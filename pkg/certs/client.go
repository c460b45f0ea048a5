package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
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

// Client is nodelet's API credential when the certificate manager provides
// it. Every API client built from RESTConfig presents the manager's current
// certificate in each TLS handshake, and Run closes their connections when
// the certificate changes so that they reconnect with the new one.
type Client struct {
	cfg     ClientConfig
	manager certificate.Manager
	rest    *rest.Config
	dialer  *connrotation.Dialer
}

// NewClient prepares the credential as ClientConfig and the kubeconfig's
// state call for. It returns nil and no error when the kubeconfig is to be
// used as it is. Bootstrapping writes the kubeconfig (pointing at the
// certificate that is yet to be issued, as upstream) before returning; the
// certificate itself is requested by Run.
func NewClient(ctx context.Context, cfg ClientConfig) (*Client, error) {
	unusable := KubeconfigUsable(cfg.KubeconfigPath, time.Now())
	plan := Decide(cfg.BootstrapKubeconfigPath != "", cfg.Rotate, unusable)
	if !plan.Manage {
		return nil, nil
	}
	store, err := certificate.NewFileStoreWithLogger(klog.FromContext(ctx), ClientPairPrefix, cfg.CertDir, cfg.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("client certificate store in %s: %w", cfg.CertDir, err)
	}
	var certConfig, clientConfig *rest.Config
	if plan.Bootstrap {
		if !errors.Is(unusable, fs.ErrNotExist) {
			klog.InfoS("Kubeconfig has no usable client certificate: bootstrapping", "kubeconfig", cfg.KubeconfigPath, "reason", unusable)
		}
		if certConfig, err = loadKubeconfig(cfg.BootstrapKubeconfigPath); err != nil {
			return nil, fmt.Errorf("--bootstrap-kubeconfig: %w", err)
		}
		pemPath := store.CurrentPath()
		if err := writeKubeconfig(cfg.KubeconfigPath, BootstrappedKubeconfig(certConfig, pemPath)); err != nil {
			return nil, err
		}
		clientConfig = rest.AnonymousClientConfig(certConfig)
		clientConfig.CertFile, clientConfig.KeyFile = pemPath, pemPath
	} else {
		if clientConfig, err = loadKubeconfig(cfg.KubeconfigPath); err != nil {
			return nil, err
		}
		certConfig = clientConfig
		// The kubeconfig's pair, when in files, is where the store starts.
		if store, err = certificate.NewFileStoreWithLogger(klog.FromContext(ctx), ClientPairPrefix, cfg.CertDir, cfg.CertDir, clientConfig.CertFile, clientConfig.KeyFile); err != nil {
			return nil, fmt.Errorf("client certificate store in %s: %w", cfg.CertDir, err)
		}
	}

	c := &Client{cfg: cfg, dialer: connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)}
	if c.rest, err = c.rotatingConfig(clientConfig); err != nil {
		return nil, err
	}
	c.manager, err = certificate.NewManager(&certificate.Config{
		ClientsetFn: func(current *tls.Certificate) (clientset.Interface, error) {
			// With a certificate the node renews with its own identity;
			// without one, only the bootstrap credential can ask.
			if current != nil {
				return csrClientFor(c.rest)
			}
			return csrClientFor(certConfig)
		},
		Template:                ClientTemplate(cfg.NodeName),
		SignerName:              certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:               certificate.DefaultKubeletClientGetUsages,
		CertificateStore:        store,
		BootstrapCertificatePEM: clientConfig.CertData,
		BootstrapKeyPEM:         clientConfig.KeyData,
		Name:                    "client",
		Ctx:                     &ctx,
	})
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	return c, nil
}

// rotatingConfig is base without its client credential, with a transport
// whose handshakes present the manager's current certificate and whose
// connections the dialer can close.
func (c *Client) rotatingConfig(base *rest.Config) (*rest.Config, error) {
	// AnonymousClientConfig keeps the server and CA, drops every credential
	// (a bearer token included: the certificate is the identity).
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

// Manager is the client certificate manager.
func (c *Client) Manager() certificate.Manager { return c.manager }

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
// resume from their last resource version. Without Rotate it stops the
// manager once the first certificate was issued. It returns an error when
// no valid certificate was available for exitAfter while the API server
// was reachable.
func (c *Client) Run(ctx context.Context) error {
	c.manager.Start()
	defer c.manager.Stop()
	last := c.manager.Current()
	lastValid := time.Now()
	rotating := true
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
		} else if now.Sub(lastValid) > exitAfter && c.manager.ServerHealthy() {
			return fmt.Errorf("no valid client certificate for %s while the API server answers: %s", exitAfter, credentialHint(c.cfg))
		}
		if cur == nil || cur == last {
			continue
		}
		last = cur
		klog.InfoS("Client certificate changed: reconnecting to the API server with it", "expires", cur.Leaf.NotAfter, "file", c.cfg.CertDir)
		c.dialer.CloseAll()
		if !c.cfg.Rotate && rotating {
			klog.InfoS("Client certificate bootstrapped; it will not be rotated (rotateCertificates is false)", "expires", cur.Leaf.NotAfter)
			c.manager.Stop()
			rotating = false
		}
	}
}

func credentialHint(cfg ClientConfig) string {
	if cfg.BootstrapKubeconfigPath == "" {
		return "renew the certificate in " + cfg.KubeconfigPath + " or give a --bootstrap-kubeconfig"
	}
	return "check that the CSRs of node " + cfg.NodeName + " get approved, or that the bootstrap credential in " + cfg.BootstrapKubeconfigPath + " is still valid"
}
