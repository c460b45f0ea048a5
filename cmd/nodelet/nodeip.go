package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/nodelet/nodelet/pkg/options"
)

// nodeIP is --node-ip, or else the first global unicast IPv4 address of the
// default route's interface, or of any interface that is up.
func nodeIP(opts *options.Options) (string, error) {
	if ips := opts.NodeIPs(); len(ips) > 0 {
		return ips[0].String(), nil
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("find node IP: %w", err)
	}
	def := defaultRouteInterface()
	var fallback string
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := iface.Addrs()
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.To4() == nil || !n.IP.IsGlobalUnicast() {
				continue
			}
			if iface.Name == def {
				return n.IP.String(), nil
			}
			if fallback == "" {
				fallback = n.IP.String()
			}
		}
	}
	if fallback != "" {
		return fallback, nil
	}
	return "127.0.0.1", nil
}

// nodeIPList is the node's IPs: hostIP (nodeIP's answer) first, then the
// other address of a dual-stack --node-ip.
func nodeIPList(hostIP string, opts *options.Options) []string {
	ips := []string{hostIP}
	for _, ip := range opts.NodeIPs() {
		if s := ip.String(); s != hostIP {
			ips = append(ips, s)
		}
	}
	return ips
}

// defaultRouteInterface reads the IPv4 routing table for the interface of
// the default route ("" if none).
func defaultRouteInterface() string {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 2 && fields[1] == "00000000" && fields[0] != "Iface" {
			return fields[0]
		}
	}
	return ""
}
