package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

// cpuProfileEnv names a file that receives a CPU profile of the whole run
// (until nodelet exits). A developer aid for benchmarks (docs/DESIGN.md),
// deliberately not a flag: it is not part of the upstream command line.
const cpuProfileEnv = "NODELET_CPU_PROFILE"

// heapProfileEnv names a file that receives a heap profile (live objects,
// after a GC) when nodelet exits. Same purpose: what the RSS is made of.
const heapProfileEnv = "NODELET_HEAP_PROFILE"

// heapProfileDelayEnv, a Go duration, writes the heap profile that long
// after the start, while nodelet runs (at exit the pods' workers and caches
// are gone), with the runtime's memory statistics next to it
// (<file>.memstats).
const heapProfileDelayEnv = "NODELET_HEAP_PROFILE_DELAY"

// cpuProfileDelayEnv delays the CPU profile's start by a Go duration, so
// that a profile of an idle node is not dominated by its start-up.
const cpuProfileDelayEnv = "NODELET_CPU_PROFILE_DELAY"

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
	var heapDelay time.Duration
	if v := os.Getenv(heapProfileDelayEnv); v != "" && heapPath != "" {
		if heapDelay, err = time.ParseDuration(v); err != nil {
			stopCPU()
			return nil, fmt.Errorf("%s: %w", heapProfileDelayEnv, err)
		}
		// A developer aid: the timer lives as long as the process.
		time.AfterFunc(heapDelay, func() {
			if err := writeHeapProfile(heapPath); err != nil {
				fmt.Fprintf(os.Stderr, "nodelet: %s: %v\n", heapProfileEnv, err)
			}
		})
	}
	return func() {
		stopCPU()
		if heapPath != "" && heapDelay == 0 {
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
	if err := pprof.WriteHeapProfile(f); err != nil {
		return err
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return os.WriteFile(path+".memstats", fmt.Appendf(nil,
		"HeapInuse %d\nHeapIdle %d\nHeapReleased %d\nHeapAlloc %d\nHeapObjects %d\nStackInuse %d\nMSpanInuse %d\nGCSys %d\nOtherSys %d\nSys %d\nNumGoroutine %d\n",
		ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.HeapAlloc, ms.HeapObjects, ms.StackInuse, ms.MSpanInuse,
		ms.GCSys, ms.OtherSys, ms.Sys, runtime.NumGoroutine()), 0o644)
}

func startCPUProfile() (stop func(), err error) {
	path := os.Getenv(cpuProfileEnv)
	if path == "" {
		return func() {}, nil
	}
	var delay time.Duration
	if v := os.Getenv(cpuProfileDelayEnv); v != "" {
		if delay, err = time.ParseDuration(v); err != nil {
			return nil, fmt.Errorf("%s: %w", cpuProfileDelayEnv, err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cpuProfileEnv, err)
	}
	start := func() error {
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("%s: %w", cpuProfileEnv, err)
		}
		return nil
	}
	if delay == 0 {
		if err := start(); err != nil {
			f.Close()
			return nil, err
		}
		return func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}, nil
	}
	// The timer's goroutine and stop race for mu: whichever comes first
	// decides whether a profile was started and has to be written out.
	var (
		mu      sync.Mutex
		stopped bool
	)
	timer := time.AfterFunc(delay, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			if err := start(); err != nil {
				fmt.Fprintf(os.Stderr, "nodelet: %v\n", err)
			}
		}
	})
	return func() {
		timer.Stop()
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		pprof.StopCPUProfile() // a no-op when the profile never started
		_ = f.Close()
	}, nil
}
