package tracing

import (
	"context"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	tracingapi "k8s.io/component-base/tracing/api/v1"
	"k8s.io/utils/ptr"

	"github.com/nodelet/nodelet/pkg/tracing/tracingtest"
)

func TestDisabledProviderAddsNothing(t *testing.T) {
	tp, err := NewProvider(context.Background(), nil, "node")
	if err != nil {
		t.Fatal(err)
	}
	if opts := GRPCDialOptions(tp); len(opts) != 0 {
		t.Errorf("GRPCDialOptions of the no-op provider = %d options, want none", len(opts))
	}
	_, span := tp.Tracer(Scope).Start(context.Background(), "syncPod")
	if span.SpanContext().IsSampled() {
		t.Error("no-op provider sampled a span")
	}
}

// TestSpansReachTheEndpoint: a pod sync span and the gRPC call made within
// it arrive at an OTLP receiver in one trace, with upstream's names and
// attributes; at a sampling rate of 0 nothing is exported.
func TestSpansReachTheEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		rate *int32
		want int
	}{
		{"all sampled", ptr.To[int32](1000000), 2},
		{"rate unset samples nothing", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recv := tracingtest.Start(t)
			tp, err := NewProvider(context.Background(), &tracingapi.TracingConfiguration{Endpoint: &recv.Endpoint, SamplingRatePerMillion: tc.rate}, "node-1")
			if err != nil {
				t.Fatal(err)
			}
			conn := traceableServer(t, tp)
			ctx, span := tp.Tracer(Scope).Start(context.Background(), "syncPod",
				trace.WithAttributes(PodAttributes("ns", "web", "uid-1", "create")...))
			if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
				t.Fatal(err)
			}
			span.End()
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				t.Fatal(err)
			}
			spans := recv.Spans()
			if len(spans) != tc.want {
				t.Fatalf("received %d spans (%+v), want %d", len(spans), spans, tc.want)
			}
			if tc.want == 0 {
				return
			}
			byName := map[string]tracingtest.Span{}
			for _, s := range spans {
				byName[s.Name] = s
			}
			sync, call := byName["syncPod"], byName["grpc.health.v1.Health/Check"]
			if sync.Attributes["k8s.pod"] != "ns/web" || sync.Attributes["k8s.pod.uid"] != "uid-1" || sync.Attributes["k8s.pod.update_type"] != "create" {
				t.Errorf("syncPod attributes = %v", sync.Attributes)
			}
			if sync.Resource["service.name"] != "kubelet" || sync.Resource["host.name"] != "node-1" {
				t.Errorf("resource = %v", sync.Resource)
			}
			if call.TraceID != sync.TraceID || call.ParentSpanID != sync.SpanID {
				t.Errorf("call span %+v is not a child of the sync span %+v", call, sync)
			}
		})
	}
}

// traceableServer serves the gRPC health service on loopback and returns a
// client traced with tp.
func traceableServer(t *testing.T, tp trace.TracerProvider) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, GRPCDialOptions(tp)...)
	conn, err := grpc.NewClient(lis.Addr().String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
