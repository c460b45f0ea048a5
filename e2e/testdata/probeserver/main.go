// Command probeserver serves what e2e tests point HTTP and gRPC probes at:
//
//	probeserver HTTP_PORT HTTPS_PORT H2C_PORT GRPC_TLS_PORT
//
// HTTP (HTTP/1.1 only) and HTTPS (a self-signed certificate made at start)
// both serve /ok (200), /redirect (302 to /ok on the same host), /offhost
// (302 to another host), /endless (200 and a body that never ends) and
// /hang (no answer ever). H2C_PORT serves /ok over HTTP/2 cleartext only,
// and GRPC_TLS_PORT the gRPC health service over TLS, SERVING.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	if len(os.Args) != 5 {
		log.Fatal("usage: probeserver HTTP_PORT HTTPS_PORT H2C_PORT GRPC_TLS_PORT")
	}
	cert := selfSigned()
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok "+r.Proto) })
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/offhost", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/ok", http.StatusFound)
	})
	mux.HandleFunc("/endless", func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 4096))
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

	h1 := &http.Server{Addr: ":" + os.Args[1], Handler: mux, Protocols: new(http.Protocols)}
	h1.Protocols.SetHTTP1(true)
	go func() { log.Fatal(h1.ListenAndServe()) }()
	tlsSrv := &http.Server{Addr: ":" + os.Args[2], Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go func() { log.Fatal(tlsSrv.ListenAndServeTLS("", "")) }()
	h2c := &http.Server{Addr: ":" + os.Args[3], Handler: mux, Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	go func() { log.Fatal(h2c.ListenAndServe()) }()

	l, err := net.Listen("tcp", ":"+os.Args[4])
	if err != nil {
		log.Fatal(err)
	}
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	srv := grpc.NewServer(grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	healthpb.RegisterHealthServer(srv, hs)
	log.Fatal(srv.Serve(l))
}

func selfSigned() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		log.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "probeserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		log.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
