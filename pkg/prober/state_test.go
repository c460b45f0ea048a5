package prober

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodelet/nodelet/pkg/runtime"
)

func TestStep(t *testing.T) {
	cfg := settings{success: 2, failure: 3}
	S, F, U := Success, Failure, Unknown
	tests := []struct {
		name    string
		results []Result
		commits []bool
	}{
		{"success needs its threshold", []Result{S, S, S}, []bool{false, true, true}},
		{"failure needs its threshold", []Result{F, F, F, F}, []bool{false, false, true, true}},
		{"a different result starts over", []Result{F, F, S, F, F, F}, []bool{false, false, false, false, false, true}},
		{"unknown changes nothing", []Result{F, U, F, U, F}, []bool{false, false, false, false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s streak
			for i, r := range tt.results {
				var c bool
				s, c = step(s, r, cfg)
				if c != tt.commits[i] {
					t.Fatalf("result %d (%v): commit = %v, want %v", i, r, c, tt.commits[i])
				}
			}
		})
	}
}

func TestSettingsDefaults(t *testing.T) {
	got := settingsOf(&v1.Probe{})
	want := settings{period: 10 * time.Second, timeout: time.Second, success: 1, failure: 3}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
	got = settingsOf(&v1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 1, FailureThreshold: 7})
	want = settings{initialDelay: 5 * time.Second, period: 2 * time.Second, timeout: 3 * time.Second, success: 1, failure: 7}
	if got != want {
		t.Fatalf("settings = %+v, want %+v", got, want)
	}
}

func TestFirstDelay(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		started time.Time
		delay   time.Duration
		want    time.Duration
	}{
		{now, 0, 0},
		{now, 5 * time.Second, 5 * time.Second},
		{now.Add(-3 * time.Second), 5 * time.Second, 2 * time.Second},
		{now.Add(-time.Minute), 5 * time.Second, 0},
	}
	for _, tt := range tests {
		if got := firstDelay(tt.started, now, tt.delay); got != tt.want {
			t.Errorf("firstDelay(%v, %v) = %v, want %v", tt.started, tt.delay, got, tt.want)
		}
	}
}

func probe() *v1.Probe { return &v1.Probe{} }

func TestInitialAndApply(t *testing.T) {
	all := &v1.Container{Name: "c", StartupProbe: probe(), ReadinessProbe: probe(), LivenessProbe: probe()}
	noStartup := &v1.Container{Name: "c", ReadinessProbe: probe(), LivenessProbe: probe()}
	livenessOnly := &v1.Container{Name: "c", LivenessProbe: probe()}
	liveness, startup := Liveness, Startup

	st, kinds := initial(all, "id")
	if st != (Container{ID: "id"}) || len(kinds) != 1 || kinds[0] != Startup {
		t.Fatalf("startup probe: initial = %+v %v, want not started, only the startup probe", st, kinds)
	}
	st, kinds = initial(noStartup, "id")
	if !st.Started || st.Ready || len(kinds) != 2 {
		t.Fatalf("no startup probe: initial = %+v %v, want started, not ready, readiness+liveness", st, kinds)
	}
	st, _ = initial(livenessOnly, "id")
	if !st.Started || !st.Ready {
		t.Fatalf("no readiness probe: initial = %+v, want started and ready", st)
	}

	tests := []struct {
		name      string
		c         *v1.Container
		from      Container
		kind      Kind
		r         Result
		want      Container
		wantStart []Kind
		wantKeep  bool
	}{
		{"startup success starts the others", all, Container{ID: "id"}, Startup, Success,
			Container{ID: "id", Started: true}, []Kind{Readiness, Liveness}, false},
		{"startup success without readiness probe is ready", &v1.Container{StartupProbe: probe()}, Container{ID: "id"}, Startup, Success,
			Container{ID: "id", Started: true, Ready: true}, nil, false},
		{"startup failure fails the instance", all, Container{ID: "id"}, Startup, Failure,
			Container{ID: "id", Failed: &startup}, nil, false},
		{"readiness success", noStartup, Container{ID: "id", Started: true}, Readiness, Success,
			Container{ID: "id", Started: true, Ready: true}, nil, true},
		{"readiness failure", noStartup, Container{ID: "id", Started: true, Ready: true}, Readiness, Failure,
			Container{ID: "id", Started: true}, nil, true},
		{"readiness never makes a not started container ready", all, Container{ID: "id"}, Readiness, Success,
			Container{ID: "id"}, nil, true},
		{"liveness success", noStartup, Container{ID: "id", Started: true}, Liveness, Success,
			Container{ID: "id", Started: true}, nil, true},
		{"liveness failure fails the instance and stops", noStartup, Container{ID: "id", Started: true, Ready: true}, Liveness, Failure,
			Container{ID: "id", Started: true, Ready: true, Failed: &liveness}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, start, keep := apply(tt.from, tt.c, tt.kind, tt.r)
			if !sameState(got, tt.want) || keep != tt.wantKeep || len(start) != len(tt.wantStart) {
				t.Fatalf("apply = %+v %v %v, want %+v %v %v", got, start, keep, tt.want, tt.wantStart, tt.wantKeep)
			}
			for i := range start {
				if start[i] != tt.wantStart[i] {
					t.Fatalf("start = %v, want %v", start, tt.wantStart)
				}
			}
		})
	}
}

func TestTargets(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "sidecar", RestartPolicy: &always, ReadinessProbe: probe()}},
		Containers: []v1.Container{
			{Name: "probed", LivenessProbe: probe()},
			{Name: "plain"},
			{Name: "exited", ReadinessProbe: probe()},
			{Name: "absent", StartupProbe: probe()},
		},
	}}
	started := time.Unix(100, 0)
	rs := &runtime.PodStatus{Containers: []*runtime.ContainerStatus{
		{ID: "p2", Name: "probed", State: runtime.ContainerStateRunning, StartedAt: started},
		{ID: "p1", Name: "probed", State: runtime.ContainerStateExited},
		{ID: "s1", Name: "sidecar", State: runtime.ContainerStateRunning, StartedAt: started},
		{ID: "x1", Name: "plain", State: runtime.ContainerStateRunning},
		{ID: "e1", Name: "exited", State: runtime.ContainerStateExited},
	}}
	got := targets(pod, rs)
	want := map[string]string{"sidecar": "s1", "probed": "p2", "exited": "", "absent": ""}
	if len(got) != len(want) {
		t.Fatalf("targets = %v, want keys of %v", got, want)
	}
	for name, id := range want {
		if got[name].id != id {
			t.Errorf("target %s = %q, want %q", name, got[name].id, id)
		}
	}
	if !got["probed"].startedAt.Equal(started) {
		t.Errorf("startedAt = %v, want %v", got["probed"].startedAt, started)
	}
}

func TestView(t *testing.T) {
	liveness, startup := Liveness, Startup
	v := View{
		"ready":    {ID: "a", Started: true, Ready: true},
		"starting": {ID: "b"},
		"dead":     {ID: "c", Started: true, Failed: &liveness},
		"nostart":  {ID: "d", Failed: &startup},
	}
	checks := []struct {
		name, id       string
		started, ready bool
		unhealthy      string
	}{
		{"ready", "a", true, true, ""},
		{"ready", "old", true, true, ""}, // another instance: not the prober's to judge
		{"starting", "b", false, false, ""},
		{"dead", "c", true, false, "liveness"},
		{"nostart", "d", false, false, "startup"},
		{"unknown", "x", true, true, ""},
	}
	for _, c := range checks {
		if got := v.Started(c.name, c.id); got != c.started {
			t.Errorf("Started(%s, %s) = %v", c.name, c.id, got)
		}
		if got := v.Ready(c.name, c.id); got != c.ready {
			t.Errorf("Ready(%s, %s) = %v", c.name, c.id, got)
		}
		if got := v.Unhealthy(c.name, c.id); got != c.unhealthy {
			t.Errorf("Unhealthy(%s, %s) = %q", c.name, c.id, got)
		}
	}
	var none View
	if !none.Started("x", "y") || !none.Ready("x", "y") || none.Unhealthy("x", "y") != "" {
		t.Error("a nil View must hold nothing back")
	}
}

func TestResumed(t *testing.T) {
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	readiness := &v1.Container{Name: "c", ReadinessProbe: probe, LivenessProbe: probe}
	startup := &v1.Container{Name: "c", ReadinessProbe: probe, StartupProbe: probe}
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	yes, no := true, false
	status := func(id string, ready bool, started *bool) []v1.ContainerStatus {
		return []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://" + id, Ready: ready, Started: started, State: running}}
	}
	for _, tc := range []struct {
		name      string
		c         *v1.Container
		reported  []v1.ContainerStatus
		ok        bool
		want      Container
		wantKinds []Kind
	}{
		{"ready in the API: stays ready, probes go on", readiness, status("abc", true, &yes), true,
			Container{ID: "abc", Started: true, Ready: true}, []Kind{Readiness, Liveness}},
		{"not ready in the API: started, not ready", readiness, status("abc", false, &yes), true,
			Container{ID: "abc", Started: true}, []Kind{Readiness, Liveness}},
		{"another instance: nothing resumed", readiness, status("old", true, &yes), false, Container{}, nil},
		{"not in the API", readiness, nil, false, Container{}, nil},
		{"not running in the API", readiness, []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://abc", Ready: true}}, false, Container{}, nil},
		{"startup probe passed before", startup, status("abc", true, &yes), true,
			Container{ID: "abc", Started: true, Ready: true}, []Kind{Readiness}},
		{"startup probe pending before", startup, status("abc", false, &no), false, Container{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, kinds, ok := resumed(tc.c, "abc", tc.reported)
			if ok != tc.ok || st != tc.want || !slices.Equal(kinds, tc.wantKinds) {
				t.Errorf("resumed = %+v %v %v, want %+v %v %v", st, kinds, ok, tc.want, tc.wantKinds, tc.ok)
			}
		})
	}
}
