package gc

import (
	"errors"
	"fmt"
	"time"
)

// Policy is the container garbage collection policy.
type Policy struct {
	// MinAge: a dead container is removed only once it finished (or, when the
	// finish time is unknown, was created) at least MinAge ago
	// (--minimum-container-ttl-duration). 0 removes dead containers at once.
	MinAge time.Duration
	// MaxPerPodContainer is how many dead instances of each container of a
	// pod are kept (--maximum-dead-containers-per-container). Negative: no
	// limit.
	MaxPerPodContainer int
	// MaxContainers is how many dead containers are kept on the node in all
	// (--maximum-dead-containers). Negative: no limit.
	MaxContainers int
}

// Defaults, as upstream.
const (
	DefaultMinAge             = 0
	DefaultMaxPerPodContainer = 1
	DefaultMaxContainers      = -1
)

// DefaultPolicy keeps the last dead instance of each container, no node-wide
// cap, no minimum age.
func DefaultPolicy() Policy {
	return Policy{MinAge: DefaultMinAge, MaxPerPodContainer: DefaultMaxPerPodContainer, MaxContainers: DefaultMaxContainers}
}

// ErrInvalidPolicy is wrapped by the errors of Validate.
var ErrInvalidPolicy = errors.New("invalid container garbage collection policy")

// Validate refuses a negative minimum age.
func (p Policy) Validate() error {
	if p.MinAge < 0 {
		return fmt.Errorf("%w: --minimum-container-ttl-duration is %s, must not be negative", ErrInvalidPolicy, p.MinAge)
	}
	return nil
}
