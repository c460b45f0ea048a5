package main

import (
	"strings"
	"testing"
	"time"
)

func TestReplaceSection(t *testing.T) {
	doc := "# B\n\nprose\n\n" + beginMarker + "\nold\n" + endMarker + "\n\nafter\n"
	got, err := replaceSection(doc, "new")
	if err != nil {
		t.Fatal(err)
	}
	want := "# B\n\nprose\n\n" + beginMarker + "\nnew\n" + endMarker + "\n\nafter\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got, err = replaceSection("# B\n", "x")
	if err != nil || !strings.HasSuffix(got, beginMarker+"\nx\n"+endMarker+"\n") {
		t.Fatalf("append: %q, %v", got, err)
	}
	if _, err := replaceSection(endMarker+beginMarker, "x"); err == nil {
		t.Fatal("want error for markers out of order")
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 20; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(ds, 50); got != 10*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := percentile(ds, 99); got != 20*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("empty = %v", got)
	}
}

func TestRenderRatiosAndMissing(t *testing.T) {
	cfg := config{pods: 2, burst: 3, idle: 10 * time.Second, runtimePID: 1}
	seq := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}
	res := map[string][]*result{
		"raw":      {{outcome: outcome{subject: "raw"}, seq: seq, burst: time.Second}},
		"upstream": {{outcome: outcome{subject: "upstream"}, seq: seq, burst: 2 * time.Second, rssKiB: 100 << 10, idleCPU: 1}},
		"nodelet":  {{outcome: outcome{subject: "nodelet"}, seq: seq, burst: time.Second, rssKiB: 25 << 10, idleCPU: 0.5}},
	}
	out := render(cfg, envInfo{}, res)
	for _, want := range []string{"| 3 pods at once → all running | 1.00 s | 2.00 s | 1.00 s | 1.00× | 0.50× |", "25.0 MiB", "0.25×"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	res["nodelet"] = []*result{{outcome: outcome{subject: "nodelet", notAvailable: "not available: no binary"}}}
	out = render(cfg, envInfo{}, res)
	if !strings.Contains(out, "| n/a | — | — |") || !strings.Contains(out, "not available: no binary") {
		t.Errorf("not-available leg not shown:\n%s", out)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/a`:          "/tmp/a",
		`/tmp/a\040b`:     "/tmp/a b",
		`/tmp/x\134y\011`: "/tmp/x\\y\t",
		`/tmp/bad\04`:     `/tmp/bad\04`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderCluster(t *testing.T) {
	cfg := config{pods: 2, deletes: 1}
	res := map[string][]*clusterResult{
		"upstream": {{outcome: outcome{subject: "upstream"}, ready: time.Second, api: []time.Duration{time.Second, time.Second}, mirrorCapped: true, del: []time.Duration{4 * time.Second}}},
		"nodelet":  {{outcome: outcome{subject: "nodelet"}, ready: 500 * time.Millisecond, api: []time.Duration{200 * time.Millisecond, 300 * time.Millisecond}, mirror: 900 * time.Millisecond, del: []time.Duration{3200 * time.Millisecond}}},
	}
	out := renderCluster(cfg, envInfo{}, res)
	for _, want := range []string{
		"| node start → Node Ready | 1.00 s | 500 ms | 0.50× | — | — |",
		"| API pod → Running in the API, p50 (2 sequential) | 1.00 s | 200 ms | 0.20× | ≤ 300 ms | yes |",
		"| static pod's mirror deleted → mirror back | > 90.00 s | 900 ms | < 0.01× | ≤ 5.00 s | yes |",
		"| 4.00 s | 3.20 s | 0.80× | ≤ 3.50 s | yes |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	doc, err := replaceSectionBetween("# B\n\n"+beginMarker+"\nold\n"+endMarker+"\n", clusterBeginMarker, clusterEndMarker, "c")
	if err != nil || !strings.Contains(doc, beginMarker+"\nold\n"+endMarker) || !strings.HasSuffix(doc, clusterBeginMarker+"\nc\n"+clusterEndMarker+"\n") {
		t.Fatalf("cluster section: %q, %v", doc, err)
	}
	if doc, err = replaceSection(doc, "new"); err != nil || !strings.Contains(doc, clusterBeginMarker+"\nc\n") {
		t.Fatalf("standalone section replace disturbed the cluster one: %q, %v", doc, err)
	}
}
