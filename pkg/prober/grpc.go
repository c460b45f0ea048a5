package prober

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// runGRPC asks the gRPC health service (grpc.health.v1.Health/Check) at
// addr about service; SERVING is a success. Connecting and the call share
// the probe's timeout. With useTLS (mode: TLS) the connection is TLS
// without certificate verification, as upstream's.
func (h handlers) runGRPC(ctx context.Context, addr, service string, useTLS bool, timeout time.Duration) (outcome, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	creds := insecure.NewCredentials()
	if useTLS {
		//nolint:gosec // upstream's gRPC probes in TLS mode do not verify certificates
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithUserAgent(h.userAgent),
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return probeDialer().DialContext(ctx, "tcp", addr)
		}),
	)
	if err != nil {
		return outcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		st, _ := status.FromError(err)
		switch st.Code() {
		case codes.Unimplemented:
			return outcomeFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message()), nil
		case codes.DeadlineExceeded:
			return outcomeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
		}
		return outcomeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return outcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return outcomeSuccess, "service healthy", nil
}
