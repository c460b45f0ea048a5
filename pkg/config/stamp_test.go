package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestStampSettled(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stamp := fileStamp{ino: 1, size: 10, mtime: t0.UnixNano(), ctime: t0.UnixNano()}
	touched := stamp
	touched.ctime = t0.Add(time.Minute).UnixNano() // chmod, or mtime set back
	tests := []struct {
		name   string
		stamp  fileStamp
		readAt time.Time
		want   bool
	}{
		{"read long after the change", stamp, t0.Add(time.Minute), true},
		{"read in the same tick as the change", stamp, t0, false},
		{"read within the granularity", stamp, t0.Add(stampGranularity), false},
		{"read just past the granularity", stamp, t0.Add(stampGranularity + time.Millisecond), true},
		{"change time newer than the modification time", touched, t0.Add(time.Minute + time.Second), false},
		{"clock behind the file", stamp, t0.Add(-time.Hour), false},
	}
	for _, tc := range tests {
		if got := stampSettled(tc.stamp, tc.readAt); got != tc.want {
			t.Errorf("%s: settled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLoadTrustsOnlySettledStamps: a manifest read long after its last
// change is not read again while its stamp stays; any change gives a new
// stamp and is read, even one of the same size.
func TestLoadTrustsOnlySettledStamps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	write := func(image string) {
		if err := os.WriteFile(path, []byte(podYAML("web", image)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("busybox:1.35")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	stamp, ok := stampOf(fi)
	if !ok {
		t.Fatal("no stamp")
	}
	written := time.Unix(0, stamp.ctime)
	later := written.Add(time.Hour) // the file looks an hour old
	st := &fileState{}
	st.load(path, "node", written)
	if st.pod == nil || st.trusted {
		t.Fatalf("first read: pod %v, trusted %v; want the pod, not trusted (just written)", st.pod, st.trusted)
	}
	st.load(path, "node", later)
	if !st.trusted {
		t.Fatal("a file read long after its change is not trusted")
	}
	first := st.pod
	st.load(path, "node", later)
	if st.pod != first {
		t.Fatal("an unchanged file was decoded again")
	}
	write("busybox:1.36") // same size, new content
	st.load(path, "node", later)
	if st.pod == nil || st.pod.Spec.Containers[0].Image != "busybox:1.36" {
		t.Fatalf("the rewrite of a trusted file was missed: %v", st.pod)
	}
}
