package main

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// component is one long-lived part of nodelet. run returns only when every
// goroutine it started has stopped, after ctx ended or on a failure.
type component struct {
	name string
	run  func(ctx context.Context) error
}

// runComponents runs every component until ctx ends or one of them stops:
// nodelet is whole or not at all, so the first to stop stops the others.
// It returns once all have returned, with the first error.
func runComponents(ctx context.Context, parts []component) error {
	g, ctx := errgroup.WithContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range parts {
		g.Go(func() error {
			defer cancel()
			if err := p.run(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			return nil
		})
	}
	return g.Wait()
}
