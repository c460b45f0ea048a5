package credentialprovider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"

	"github.com/nodelet/nodelet/pkg/pullsecrets"
)

// fakeRunner answers resp (a copy per call) and counts calls per repo.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	resp  Response
	err   error
}

func (f *fakeRunner) Run(_ context.Context, repo string) (*Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, repo)
	if f.err != nil {
		return nil, f.err
	}
	r := f.resp
	return &r, nil
}

func dur(d time.Duration) *time.Duration { return &d }

func testProvider(name string, match []string, ttl time.Duration, run Runner, now *time.Time) *provider {
	p := newProvider(kubeletconfigv1.CredentialProvider{Name: name, MatchImages: match, DefaultCacheDuration: &metav1.Duration{Duration: ttl}}, run)
	p.now = func() time.Time { return *now }
	return p
}

func TestProviderCache(t *testing.T) {
	auth := map[string]Login{"reg.io": {Username: "u", Password: "p"}}
	for _, tt := range []struct {
		name     string
		keyType  string
		duration *time.Duration
		// pulls are repos looked up in order, with the clock advanced by
		// step before each; wantRuns are the plugin runs they cause.
		step     time.Duration
		pulls    []string
		wantRuns []string
	}{
		{"image key reused for the same repository", "Image", nil, time.Minute,
			[]string{"reg.io/a", "reg.io/a", "reg.io/b"}, []string{"reg.io/a", "reg.io/b"}},
		{"registry key covers the registry", "Registry", nil, time.Minute,
			[]string{"reg.io/a", "reg.io/b", "reg.io:5000/c"}, []string{"reg.io/a", "reg.io:5000/c"}},
		{"global key covers every match", "Global", nil, time.Minute,
			[]string{"reg.io/a", "reg.io:5000/c"}, []string{"reg.io/a"}},
		{"default duration expires", "Image", nil, 6 * time.Minute,
			[]string{"reg.io/a", "reg.io/a", "reg.io/a"}, []string{"reg.io/a", "reg.io/a"}},
		{"response duration wins", "Image", dur(time.Hour), 6 * time.Minute,
			[]string{"reg.io/a", "reg.io/a", "reg.io/a"}, []string{"reg.io/a"}},
		{"zero duration caches nothing", "Global", dur(0), 0,
			[]string{"reg.io/a", "reg.io/a"}, []string{"reg.io/a", "reg.io/a"}},
		{"unknown cacheKeyType is not used", "Forever", nil, 0,
			[]string{"reg.io/a", "reg.io/a"}, []string{"reg.io/a", "reg.io/a"}},
		{"no match, no run", "Global", nil, 0,
			[]string{"other.io/a", "docker.io/library/busybox"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			run := &fakeRunner{resp: Response{CacheKeyType: tt.keyType, CacheDuration: tt.duration, Auth: auth}}
			p := testProvider("p", []string{"reg.io", "reg.io:5000"}, 10*time.Minute, run, &now)
			for _, repo := range tt.pulls {
				now = now.Add(tt.step)
				got, err := p.provide(context.Background(), repo)
				valid := tt.keyType == "Image" || tt.keyType == "Registry" || tt.keyType == "Global"
				switch {
				case !pullsecrets.MatchesRepository("reg.io", repo) && !pullsecrets.MatchesRepository("reg.io:5000", repo):
					if got != nil || err != nil {
						t.Fatalf("%s: got %v %v for an image the plugin does not match", repo, got, err)
					}
				case valid && (err != nil || got["reg.io"] != auth["reg.io"]):
					t.Fatalf("%s: got %v %v", repo, got, err)
				case !valid && err == nil:
					t.Fatalf("%s: no error for cacheKeyType %q", repo, tt.keyType)
				}
			}
			if fmt.Sprint(run.calls) != fmt.Sprint(tt.wantRuns) {
				t.Errorf("runs %v, want %v", run.calls, tt.wantRuns)
			}
		})
	}
}

func TestKeyringLookupOrder(t *testing.T) {
	now := time.Unix(0, 0)
	first := &fakeRunner{resp: Response{CacheKeyType: "Global", Auth: map[string]Login{
		"reg.io":      {Username: "first-host"},
		"reg.io/team": {Username: "first-team"},
		"other.io":    {Username: "unrelated"},
	}}}
	broken := &fakeRunner{err: errors.New("boom")}
	second := &fakeRunner{resp: Response{CacheKeyType: "Global", Auth: map[string]Login{"https://reg.io/v2/": {Username: "second-host"}}}}
	k := &Keyring{providers: []*provider{
		testProvider("first", []string{"reg.io"}, time.Hour, first, &now),
		testProvider("broken", []string{"*.io"}, time.Hour, broken, &now),
		testProvider("second", []string{"reg.io/team"}, time.Hour, second, &now),
	}}
	var got []string
	for _, c := range k.Lookup(context.Background(), "reg.io/team/app:v1") {
		got = append(got, c.Username+"@"+strings.TrimPrefix(c.Source, "image credential provider "))
	}
	want := "[first-team@first first-host@first second-host@second]"
	if fmt.Sprint(got) != want {
		t.Errorf("credentials %v, want %s", got, want)
	}
	if fmt.Sprint(first.calls) != "[reg.io/team/app]" {
		t.Errorf("plugin asked for %v, want the repository without tag", first.calls)
	}
	var nilKeyring *Keyring
	if c := nilKeyring.Lookup(context.Background(), "reg.io/a"); c != nil {
		t.Errorf("nil keyring gave %v", c)
	}
	var _ []pullsecrets.Credential = k.Lookup(context.Background(), "docker.io/x")
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	script := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("plugin%d", time.Now().UnixNano()))
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const v1 = "credentialprovider.kubelet.k8s.io/v1"
	// The plugin saves its stdin and echoes its args and env into the
	// username.
	reqFile := filepath.Join(dir, "request")
	echo := script(`cat > "$REQ"; printf '{"apiVersion":"` + v1 + `","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"5m","auth":{"reg.io":{"username":"%s %s","password":"pw"}}}' "$1" "$EXTRA"`)
	e := &Exec{Path: echo, Args: []string{"arg1"}, Env: []string{"EXTRA=env1", "REQ=" + reqFile}, APIVersion: v1}
	r, err := e.Run(context.Background(), "reg.io/a")
	if err != nil {
		t.Fatal(err)
	}
	wantUser := "arg1 env1"
	req, err := os.ReadFile(reqFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"apiVersion":"` + v1 + `","image":"reg.io/a","kind":"CredentialProviderRequest"}`; string(req) != want {
		t.Errorf("request %s, want %s", req, want)
	}
	if r.CacheKeyType != "Registry" || *r.CacheDuration != 5*time.Minute || r.Auth["reg.io"].Username != wantUser || r.Auth["reg.io"].Password != "pw" {
		t.Fatalf("response %+v", r)
	}

	for name, tt := range map[string]struct {
		body, want string
		timeout    time.Duration
	}{
		"fails":         {body: "echo denied >&2; exit 3", want: "denied"},
		"wrong version": {body: `echo '{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image"}'`, want: "apiVersion"},
		"wrong kind":    {body: `echo '{"apiVersion":"` + v1 + `","kind":"Other","cacheKeyType":"Image"}'`, want: "kind"},
		"unknown field": {body: `echo '{"apiVersion":"` + v1 + `","kind":"CredentialProviderResponse","cacheKeyType":"Image","extra":1}'`, want: "unknown field"},
		"not json":      {body: `echo 'secret-password'`, want: "invalid JSON"},
		"hangs":         {body: "exec sleep 60", want: "deadline exceeded", timeout: 100 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			e := &Exec{Path: script(tt.body), APIVersion: v1, Timeout: tt.timeout}
			_, err := e.Run(context.Background(), "reg.io/a")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret-password") {
				t.Fatalf("error quotes the output: %v", err)
			}
		})
	}
}

// blockingRunner answers once release is closed.
type blockingRunner struct {
	release chan struct{}
	done    chan struct{}
}

func (b *blockingRunner) Run(context.Context, string) (*Response, error) {
	defer close(b.done)
	<-b.release
	return &Response{CacheKeyType: "Image", Auth: map[string]Login{"reg.io": {Username: "u"}}}, nil
}

// A caller whose context ends stops waiting; the run goes on and its
// answer is cached for the next caller.
func TestProviderCallerGivesUp(t *testing.T) {
	now := time.Unix(0, 0)
	run := &blockingRunner{release: make(chan struct{}), done: make(chan struct{})}
	p := testProvider("p", []string{"reg.io"}, time.Hour, run, &now)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.provide(ctx, "reg.io/a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(run.release)
	// Joins the run if it is still going, else finds its answer cached;
	// either way the plugin runs once (a second run would close done
	// twice and panic).
	got, err := p.provide(context.Background(), "reg.io/a")
	if err != nil || got["reg.io"].Username != "u" {
		t.Fatalf("after the run: %v %v", got, err)
	}
}
