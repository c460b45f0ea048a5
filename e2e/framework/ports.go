package framework

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Ports handed to a process that binds them later are taken below the
// kernel's ephemeral range: a port the kernel picks for ":0" lies inside that
// range, where any outgoing connection of containerd, the API server or a
// test can take it as its local port between our check and nodelet's bind
// (seen in CI as "bind: address already in use"). Below the range only a
// listener can take it, and the random start keeps the test packages, which
// run in parallel processes, apart.
var ports struct {
	sync.Mutex
	given map[int]bool
}

// FreePort returns a TCP port free on loopback right now, outside the
// kernel's ephemeral range and not handed out before in this process.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func freePort() (int, error) {
	lo, hi := belowEphemeral()
	ports.Lock()
	defer ports.Unlock()
	if ports.given == nil {
		ports.given = map[int]bool{}
	}
	for range 2000 {
		p := lo + rand.IntN(hi-lo)
		if ports.given[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		ports.given[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("no free loopback port in [%d, %d)", lo, hi)
}

// belowEphemeral returns the range to pick from: from 10000 up to the start
// of the kernel's ephemeral range (32768 when it cannot be read).
func belowEphemeral() (int, int) {
	lo, hi := 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) > 0 {
		if start, err := strconv.Atoi(f[0]); err == nil && start > lo+1000 {
			hi = start
		}
	}
	return lo, hi
}
