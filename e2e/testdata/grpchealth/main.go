// Command grpchealth serves the gRPC health service (grpc.health.v1) on the
// port given as its first argument: service "" is SERVING, service "down"
// NOT_SERVING. It is the image e2e tests probe with gRPC probes.
package main

import (
	"log"
	"net"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: grpchealth PORT")
	}
	l, err := net.Listen("tcp", ":"+os.Args[1])
	if err != nil {
		log.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	log.Fatal(srv.Serve(l))
}
