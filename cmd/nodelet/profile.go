package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole run
// (until nodelet exits). A developer aid for benchmarks (docs/DESIGN.md),
// deliberately not a flag: it is not part of the upstream command line.
const cpuProfileEnv = "NODELET_CPU_PROFILE"

// startCPUProfile starts profiling when NODELET_CPU_PROFILE is set and
// returns the function that writes the profile out; a no-op otherwise.
func startCPUProfile() (stop func(), err error) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
