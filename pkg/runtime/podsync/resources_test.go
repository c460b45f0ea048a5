package podsync

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeHook is a ResourceHook that records its calls in a shared log.
type fakeHook struct {
	name     string
	log      *[]string
	res      Resources
	err      error
	checkErr error
}

func (f *fakeHook) Name() string { return f.name }

func (f *fakeHook) CheckSpec(*v1.Pod) error {
	*f.log = append(*f.log, "check "+f.name)
	return f.checkErr
}

func (f *fakeHook) Prepare(context.Context, *v1.Pod) (Resources, error) {
	*f.log = append(*f.log, "prepare "+f.name)
	return f.res, f.err
}

func (f *fakeHook) Teardown(context.Context, types.UID) error {
	*f.log = append(*f.log, "teardown "+f.name)
	return f.err
}

func TestResourcePipeline(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name                         string
		a, b                         fakeHook
		wantLog                      []string
		wantPaths                    map[string]string
		wantCheck, wantPrep, wantTdn string
	}{{
		name:      "in order, merged",
		a:         fakeHook{res: Resources{VolumePaths: map[string]string{"x": "/x"}}},
		b:         fakeHook{res: Resources{VolumePaths: map[string]string{"y": "/y"}}},
		wantLog:   []string{"check a", "check b", "prepare a", "prepare b", "teardown b", "teardown a"},
		wantPaths: map[string]string{"x": "/x", "y": "/y"},
	}, {
		name:      "a failure stops check and prepare, not teardown",
		a:         fakeHook{err: boom, checkErr: boom},
		wantLog:   []string{"check a", "prepare a", "teardown b", "teardown a"},
		wantCheck: "boom", wantPrep: "boom", wantTdn: "resource hook a: boom",
	}, {
		name:     "a volume prepared twice",
		a:        fakeHook{res: Resources{VolumePaths: map[string]string{"x": "/x"}}},
		b:        fakeHook{res: Resources{VolumePaths: map[string]string{"x": "/other"}}},
		wantLog:  []string{"check a", "check b", "prepare a", "prepare b", "teardown b", "teardown a"},
		wantPrep: `resource hook b: volume "x" prepared twice`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var log []string
			a, b := tc.a, tc.b
			a.name, a.log, b.name, b.log = "a", &log, "b", &log
			s := &Syncer{resources: []ResourceHook{&a, &b}}
			ctx := context.Background()
			checkErr := s.checkSpec(&v1.Pod{})
			res, prepErr := s.prepareResources(ctx, &v1.Pod{})
			tdnErr := s.teardownResources(ctx, "u")
			for _, e := range []struct {
				err  error
				want string
			}{{checkErr, tc.wantCheck}, {prepErr, tc.wantPrep}, {tdnErr, tc.wantTdn}} {
				if (e.err == nil) != (e.want == "") || e.err != nil && !strings.Contains(e.err.Error(), e.want) {
					t.Errorf("err = %v, want %q", e.err, e.want)
				}
			}
			if !reflect.DeepEqual(log, tc.wantLog) {
				t.Errorf("calls = %v, want %v", log, tc.wantLog)
			}
			if prepErr == nil && !reflect.DeepEqual(res.VolumePaths, tc.wantPaths) {
				t.Errorf("volume paths = %v, want %v", res.VolumePaths, tc.wantPaths)
			}
		})
	}
}
