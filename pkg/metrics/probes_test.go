package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestProbeMetrics(t *testing.T) {
	l := ProbeLabels{ProbeType: "Readiness", Container: "c", Pod: "p", Namespace: "ns", PodUID: "u"}
	s := NewProbeSeries(l)
	s.Observe(ProbeResultSuccessful, 10*time.Millisecond)
	s.Observe(ProbeResultFailed, time.Second)
	body := scrapeProbes(t)
	for _, want := range []string{
		`prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="u",probe_type="Readiness",result="successful"} 1`,
		`prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="u",probe_type="Readiness",result="failed"} 1`,
		`prober_probe_duration_seconds_count{container="c",namespace="ns",pod="p",probe_type="Readiness"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s in\n%s", want, body)
		}
	}
	ForgetProbe(l)
	if body := scrapeProbes(t); strings.Contains(body, `pod_uid="u"`) {
		t.Errorf("series left after ForgetProbe:\n%s", body)
	}
}

func scrapeProbes(t *testing.T) string {
	rec := httptest.NewRecorder()
	ProbeMetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics/probes", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}
