// Package tracingtest is an in-process OTLP trace receiver for tests: what
// an OpenTelemetry collector would be sent.
package tracingtest

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is one received span, flattened for assertions.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string
	// Attributes holds the string attributes of the span.
	Attributes map[string]string
	// Resource holds the string attributes of the span's resource.
	Resource map[string]string
}

// Receiver serves the OTLP gRPC trace service on a loopback port.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	// Endpoint is host:port, what a TracingConfiguration's endpoint takes.
	Endpoint string

	mu    sync.Mutex
	spans []Span
}

// Start serves a receiver until the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Endpoint: lis.Addr().String()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return r
}

// Export implements the OTLP trace service.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		res := strAttrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, flatten(s, res))
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Spans returns what was received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func flatten(s *tracepb.Span, res map[string]string) Span {
	return Span{
		Name: s.GetName(), TraceID: hexID(s.GetTraceId()), SpanID: hexID(s.GetSpanId()),
		ParentSpanID: hexID(s.GetParentSpanId()), Attributes: strAttrs(s.GetAttributes()), Resource: res,
	}
}

func strAttrs(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = kv.GetValue().GetStringValue()
	}
	return out
}

func hexID(b []byte) string { return hex.EncodeToString(b) }
