// Command nodelet is a Kubernetes node agent: it runs the pods of one node
// from a manifest directory, a manifest URL and (with --kubeconfig) the API
// server, on any CRI runtime. main only parses settings and wires packages.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/version"
)

// defaultGCPercent is nodelet's GOGC unless the environment sets one. Its
// live heap is small (about 6 MiB with 70 pods) and grows slowly, so the
// heap Go's default of 100 lets build up before a collection is most of
// its anonymous memory; at 50 the resident set is 3-4 MiB smaller for a
// collection every few seconds of a few milliseconds (docs/BENCHMARKS.md).
const defaultGCPercent = 50

func setGCPercent() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
}

func main() {
	fs := options.NewFlagSet("nodelet")
	showVersion := fs.Bool("version", false, "Print the version (the Kubernetes release whose kubelet nodelet implements, with nodelet's own version as build metadata) and exit.")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "nodelet:", err)
		os.Exit(2)
	}
	if *showVersion {
		fmt.Println(version.VersionLine())
		os.Exit(0)
	}
	opts, warnings, err := options.Load(fs)
	for _, w := range warnings {
		klog.Warning(w)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodelet: invalid configuration:\n"+err.Error())
		os.Exit(2)
	}
	if err := opts.ApplyVerbosity(); err != nil {
		fmt.Fprintln(os.Stderr, "nodelet:", err)
		os.Exit(2)
	}

	setGCPercent()
	stopProfile, err := startProfiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, "nodelet:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err = run(ctx, opts)
	stopProfile()
	if err != nil {
		klog.ErrorS(err, "nodelet failed")
		klog.Flush()
		os.Exit(1)
	}
	klog.InfoS("nodelet stopped; pods keep running")
	klog.Flush()
}
