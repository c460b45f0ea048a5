package images

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Policy is the image garbage collection policy. Usage is the share of the
// image filesystem that is used, in percent of its capacity.
type Policy struct {
	// HighThresholdPercent: when usage reaches it, a pass removes images
	// (--image-gc-high-threshold, imageGCHighThresholdPercent). 100 disables
	// image garbage collection.
	HighThresholdPercent int
	// LowThresholdPercent: a pass removes images until usage is below it
	// (--image-gc-low-threshold, imageGCLowThresholdPercent).
	LowThresholdPercent int
	// MinAge protects images first seen less than MinAge ago, so an image
	// pulled for a pod that has not started yet is not removed
	// (--minimum-image-ttl-duration, imageMinimumGCAge).
	MinAge time.Duration
}

// Defaults of the policy (see docs/GC.md).
const (
	DefaultHighThresholdPercent = 90
	DefaultLowThresholdPercent  = 80
	DefaultMinAge               = 2 * time.Minute
	// DefaultPeriod is how often Manager.Run runs a pass.
	DefaultPeriod = 5 * time.Minute
)

// DefaultPolicy returns the default policy: 90 % / 80 % / 2m.
func DefaultPolicy() Policy {
	return Policy{
		HighThresholdPercent: DefaultHighThresholdPercent,
		LowThresholdPercent:  DefaultLowThresholdPercent,
		MinAge:               DefaultMinAge,
	}
}

// ErrInvalidPolicy is wrapped by every error Validate returns.
var ErrInvalidPolicy = errors.New("invalid image garbage collection policy")

// Validate refuses thresholds outside 0-100, a low threshold that is not
// below the high one, and a negative minimum age. Messages name both the flag
// and the KubeletConfiguration field.
func (p Policy) Validate() error {
	var errs []error
	if p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-high-threshold (imageGCHighThresholdPercent) is %d, must be between 0 and 100 inclusive", p.HighThresholdPercent))
	}
	if p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100 {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold (imageGCLowThresholdPercent) is %d, must be between 0 and 100 inclusive", p.LowThresholdPercent))
	}
	if p.LowThresholdPercent >= p.HighThresholdPercent {
		errs = append(errs, fmt.Errorf("--image-gc-low-threshold (imageGCLowThresholdPercent) %d must be less than --image-gc-high-threshold (imageGCHighThresholdPercent) %d", p.LowThresholdPercent, p.HighThresholdPercent))
	}
	if p.MinAge < 0 {
		errs = append(errs, fmt.Errorf("--minimum-image-ttl-duration (imageMinimumGCAge) is %s, must not be negative", p.MinAge))
	}
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return fmt.Errorf("%w: %s", ErrInvalidPolicy, strings.Join(msgs, "; "))
}

// Disabled reports whether the policy turns image garbage collection off,
// which a high threshold of 100 % does (as upstream).
func (p Policy) Disabled() bool { return p.HighThresholdPercent >= 100 }
