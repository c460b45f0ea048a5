package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole run
// (until nodelet exits). A developer aid for benchmarks (docs/DESIGN.md),
// deliberately not a flag: it is not part of the upstream command line.
const cpuProfileEnv = "NODELET_CPU_PROFILE"

// heapProfileEnv names a file that receives a heap profile (live objects,
// after a GC) when nodelet exits. Same purpose: what the RSS is made of.
const heapProfileEnv = "NODELET_HEAP_PROFILE"

// startProfiles starts CPU profiling when NODELET_CPU_PROFILE is set and
// returns the function that writes the profiles out at exit (also the heap
// profile of NODELET_HEAP_PROFILE); a no-op when neither is set.
func startProfiles() (stop func(), err error) {
	stopCPU, err := startCPUProfile()
	if err != nil {
		return nil, err
	}
	heapPath := os.Getenv(heapProfileEnv)
	if heapPath != "" {
		// Every 4 KiB allocated, not every 512 KiB: small objects are
		// what a node agent's heap is made of.
		runtime.MemProfileRate = 4096
	}
	return func() {
		stopCPU()
		if heapPath != "" {
			if err := writeHeapProfile(heapPath); err != nil {
				fmt.Fprintf(os.Stderr, "nodelet: %s: %v\n", heapProfileEnv, err)
			}
		}
	}, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC() // the profile's in-use figures are as of the last GC
	return pprof.WriteHeapProfile(f)
}

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
