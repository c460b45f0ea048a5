package credentialprovider

import (
	"testing"

	"github.com/nodelet/nodelet/pkg/pullsecrets"
)

// TestMatchImages: matchImages patterns follow the pull-secret key rule
// (pullsecrets.MatchesRepository), as upstream's do.
func TestMatchImages(t *testing.T) {
	for _, tt := range []struct {
		pattern, repo string
		want          bool
	}{
		{"gcr.io", "gcr.io/project/app", true},
		{"gcr.io", "eu.gcr.io/project/app", false},
		{"*.gcr.io", "eu.gcr.io/project/app", true},
		{"*.io", "eu.gcr.io/project/app", false}, // a glob is one label
		{"*.*.registry.io", "a.b.registry.io/x", true},
		{"k8s.*.io", "k8s.gcr.io/x", true},
		{"k8s.*", "k8s.io/x", true},
		{"app*.k8s.io", "apps.k8s.io/x", true},
		{"app*.k8s.io", "web.k8s.io/x", false},
		{"123456789.dkr.ecr.us-east-1.amazonaws.com", "123456789.dkr.ecr.us-east-1.amazonaws.com/team/app", true},
		{"registry.io:8080/path", "registry.io:8080/path/app", true},
		{"registry.io:8080/path", "registry.io:8080/other/app", false},
		{"registry.io:8080/path", "registry.io/path/app", false},
		{"registry.io:8080", "registry.io:9090/app", false},
		{"registry.io", "registry.io:8080/app", false}, // no port in the pattern: only images without one
		{"127.0.0.1:5000", "127.0.0.1:5000/e2e/app", true},
		{"docker.io", "docker.io/library/busybox", true},
		{"[", "x/y", false},
	} {
		if got := pullsecrets.MatchesRepository(tt.pattern, tt.repo); got != tt.want {
			t.Errorf("pullsecrets.MatchesRepository(%q, %q) = %v, want %v", tt.pattern, tt.repo, got, tt.want)
		}
	}
}

func TestCacheKey(t *testing.T) {
	for _, tt := range []struct {
		keyType, repo, want string
		ok                  bool
	}{
		{"Image", "reg:5000/team/app", "reg:5000/team/app", true},
		{"Registry", "reg:5000/team/app", "reg:5000", true},
		{"Global", "reg:5000/team/app", globalKey, true},
		{"image", "reg/app", "", false},
		{"", "reg/app", "", false},
	} {
		got, ok := cacheKey(tt.keyType, tt.repo)
		if got != tt.want || ok != tt.ok {
			t.Errorf("cacheKey(%q, %q) = %q %v, want %q %v", tt.keyType, tt.repo, got, ok, tt.want, tt.ok)
		}
	}
}
