package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nodelet/nodelet/pkg/pod"
)

// FuzzDecodeManifest feeds arbitrary bytes through decoding and the static
// pod pipeline. The seed corpus is testdata/fuzz/FuzzDecodeManifest plus the
// manifests under testdata. Run with:
//
//	go test ./pkg/config -run '^$' -fuzz FuzzDecodeManifest -fuzztime 60s
func FuzzDecodeManifest(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.*")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, false)
		f.Add(data, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, allowList bool) {
		// The unexported decoder has no recover: a panic here is a bug.
		m, err := decodeManifest(data, allowList)
		if err != nil {
			if m != nil {
				t.Fatalf("error %v with a manifest", err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if m == nil {
			t.Fatal("no error and no manifest")
		}
		if !allowList && len(m.Pods) != 1 {
			t.Fatalf("pod manifest decoded to %d pods", len(m.Pods))
		}
		for _, p := range m.Pods {
			if p == nil {
				t.Fatal("nil pod")
			}
			// Whatever decodes must survive defaults, identity and validation.
			sp, err := StaticPod(p, Origin{Source: pod.FileSource, Location: "/m/fuzz.yaml"}, "node")
			if err == nil && sp.UID == "" {
				t.Fatal("valid static pod without UID")
			}
		}
		_, _ = staticPods(m, Origin{Source: pod.HTTPSource, Location: "http://x/"}, "node")
	})
}
