package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nodelet/nodelet/pkg/options"
	"github.com/nodelet/nodelet/pkg/shutdown"
)

// noopLogind is a logind that never announces a shutdown.
type noopLogind struct{}

func (noopLogind) InhibitDelayMax() (time.Duration, error)                 { return time.Hour, nil }
func (noopLogind) Inhibit(string, string) (io.Closer, error)               { return io.NopCloser(nil), nil }
func (noopLogind) ReloadConfig() error                                     { return nil }
func (noopLogind) PrepareForShutdown(context.Context) (<-chan bool, error) { return nil, nil }

func TestGracefulShutdownWiring(t *testing.T) {
	for _, tc := range []struct {
		name            string
		grace, critical time.Duration
		logind          error // nil: a logind runs
		wantComponent   bool
		wantErr         string
	}{
		{name: "not set: nothing", logind: nil},
		{name: "set, logind runs: the component", grace: 30 * time.Second, critical: 10 * time.Second, wantComponent: true},
		{name: "set, no logind: a warning, nodelet carries on", grace: 30 * time.Second, logind: fmt.Errorf("%w: no bus", shutdown.ErrNoLogind)},
		{name: "logind unreachable: a warning, nodelet carries on", grace: 30 * time.Second, logind: fmt.Errorf("bus timeout")},
		{name: "critical above the whole: refused", grace: 10 * time.Second, critical: 20 * time.Second, wantErr: "must not exceed"},
		{name: "critical alone: refused", critical: 20 * time.Second, wantErr: "needs a shutdownGracePeriod"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := logindDialer
			defer func() { logindDialer = old }()
			logindDialer = func() (shutdown.Logind, error) {
				if tc.logind != nil {
					return nil, tc.logind
				}
				return noopLogind{}, nil
			}
			opts := &options.Options{ShutdownGracePeriod: tc.grace, ShutdownGracePeriodCriticalPods: tc.critical}
			c, err := gracefulShutdown(opts, nil, &shutdownState{})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c != nil) != tc.wantComponent {
				t.Errorf("component = %v, want one: %v", c, tc.wantComponent)
			}
		})
	}
}
