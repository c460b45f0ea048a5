package credentialprovider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/klog/v2"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"

	"github.com/nodelet/nodelet/pkg/pullsecrets"
)

// Response is what a plugin answers, decoded (see Runner).
type Response struct {
	CacheKeyType string
	// CacheDuration is nil when the plugin named none.
	CacheDuration *time.Duration
	// Auth maps a registry key (the syntax of matchImages) to a login.
	Auth map[string]Login
}

// Login is one username and password of a response.
type Login struct{ Username, Password string }

// Runner runs one plugin for one image repository. The exec runner is
// Exec; tests pass a fake.
type Runner interface {
	Run(ctx context.Context, repo string) (*Response, error)
}

// Keyring asks the configured plugins for the credentials of an image.
// The zero value (and nil) has no plugins and gives nothing.
type Keyring struct {
	providers []*provider
}

// Load reads and validates the config at configPath and checks that every
// provider's plugin is an executable in binDir. Any error is meant to stop
// nodelet: upstream's kubelet does not start with a broken config either.
func Load(configPath, binDir string) (*Keyring, error) {
	if binDir == "" {
		return nil, errors.New("--image-credential-provider-bin-dir is required with --image-credential-provider-config")
	}
	if fi, err := os.Stat(binDir); err != nil {
		return nil, fmt.Errorf("credential provider bin dir: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("credential provider bin dir %s is not a directory", binDir)
	}
	cfg, err := ReadConfig(configPath)
	if err != nil {
		return nil, err
	}
	if errs := ValidateConfig(cfg); len(errs) > 0 {
		return nil, fmt.Errorf("credential provider config %s: %w", configPath, errs.ToAggregate())
	}
	k := &Keyring{}
	for _, p := range cfg.Providers {
		bin := filepath.Join(binDir, p.Name)
		if _, err := exec.LookPath(bin); err != nil {
			return nil, fmt.Errorf("credential provider %q: plugin %s is not an executable file: %w", p.Name, bin, err)
		}
		k.providers = append(k.providers, newProvider(p, &Exec{Path: bin, Args: p.Args, Env: envOf(p.Env), APIVersion: p.APIVersion}))
	}
	return k, nil
}

func envOf(vars []kubeletconfigv1.ExecEnvVar) []string {
	out := make([]string, 0, len(vars))
	for _, v := range vars {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}

// Names are the configured providers' names, in config order.
func (k *Keyring) Names() []string {
	if k == nil {
		return nil
	}
	var out []string
	for _, p := range k.providers {
		out = append(out, p.name)
	}
	return out
}

// Lookup returns the credentials the plugins give for image, the most
// specific auth key first, as a pull secret's would be ordered. A plugin
// that fails is logged and contributes nothing.
func (k *Keyring) Lookup(ctx context.Context, image string) []pullsecrets.Credential {
	if k == nil || len(k.providers) == 0 {
		return nil
	}
	repo := pullsecrets.Repository(image)
	var ring pullsecrets.Keyring
	for _, p := range k.providers {
		auth, err := p.provide(ctx, repo)
		if err != nil {
			klog.ErrorS(err, "Image credential provider failed", "provider", p.name, "image", repo)
			continue
		}
		ring.Add(entries(p.name, auth))
	}
	return ring.Lookup(repo)
}

func entries(name string, auth map[string]Login) []pullsecrets.Entry {
	out := make([]pullsecrets.Entry, 0, len(auth))
	for key, l := range auth {
		out = append(out, pullsecrets.Entry{Key: key, Credential: pullsecrets.Credential{
			Username: l.Username, Password: l.Password, Source: "image credential provider " + name,
		}})
	}
	return out
}

// provider is one configured plugin and its cache.
type provider struct {
	name        string
	matchImages []string
	defaultTTL  time.Duration
	run         Runner
	now         func() time.Time
	group       singleflight.Group

	mu    sync.Mutex
	cache map[string]cacheEntry
}

type cacheEntry struct {
	auth      map[string]Login
	expiresAt time.Time
}

func newProvider(p kubeletconfigv1.CredentialProvider, run Runner) *provider {
	return &provider{
		name: p.Name, matchImages: slices.Clone(p.MatchImages), defaultTTL: p.DefaultCacheDuration.Duration,
		run: run, now: time.Now, cache: map[string]cacheEntry{},
	}
}

// provide returns the plugin's auth for repo: none when no matchImages
// pattern covers it, from the cache while an answer there is fresh, else
// from one run of the plugin shared by concurrent callers.
func (p *provider) provide(ctx context.Context, repo string) (map[string]Login, error) {
	if !slices.ContainsFunc(p.matchImages, func(m string) bool { return pullsecrets.MatchesRepository(m, repo) }) {
		return nil, nil
	}
	if auth, ok := p.cached(repo); ok {
		return auth, nil
	}
	// The run is shared, so one caller's ending context must not cut it
	// short for the others: it is bounded by the runner's own timeout, and
	// it files its answer in the cache itself, so a caller whose context
	// ends stops waiting without losing the answer for the next.
	ch := p.group.DoChan(repo, func() (any, error) {
		return p.runAndCache(context.WithoutCancel(ctx), repo)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(map[string]Login), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for plugin %s: %w", p.name, context.Cause(ctx))
	}
}

// runAndCache runs the plugin for repo and caches its answer by the
// response's cacheKeyType for its cacheDuration, else the default.
func (p *provider) runAndCache(ctx context.Context, repo string) (map[string]Login, error) {
	resp, err := p.run.Run(ctx, repo)
	if err != nil {
		return nil, err
	}
	key, ok := cacheKey(resp.CacheKeyType, repo)
	if !ok {
		return nil, fmt.Errorf("plugin %s answered cacheKeyType %q, want Image, Registry or Global: response not used", p.name, resp.CacheKeyType)
	}
	ttl := p.defaultTTL
	if resp.CacheDuration != nil {
		ttl = *resp.CacheDuration
	}
	if ttl > 0 {
		p.mu.Lock()
		p.cache[key] = cacheEntry{auth: resp.Auth, expiresAt: p.now().Add(ttl)}
		p.mu.Unlock()
	}
	return resp.Auth, nil
}

// cached returns a fresh cached answer for repo, dropping expired ones
// (the map holds at most one entry per image pulled, so a sweep is cheap).
func (p *provider) cached(repo string) (map[string]Login, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for key, e := range p.cache {
		if now.After(e.expiresAt) {
			delete(p.cache, key)
		}
	}
	for _, key := range cacheCandidates(repo) {
		if e, ok := p.cache[key]; ok {
			return e.auth, true
		}
	}
	return nil, false
}
