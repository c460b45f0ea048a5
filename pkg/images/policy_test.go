package images

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		name    string
		p       Policy
		wantErr []string // substrings; none means valid
	}{
		{name: "defaults", p: DefaultPolicy()},
		{name: "high 100 disables", p: Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}},
		{name: "0 and 1", p: Policy{HighThresholdPercent: 1, LowThresholdPercent: 0}},
		{name: "low equals high", p: Policy{HighThresholdPercent: 80, LowThresholdPercent: 80},
			wantErr: []string{"--image-gc-low-threshold (imageGCLowThresholdPercent) 80 must be less than --image-gc-high-threshold (imageGCHighThresholdPercent) 80"}},
		{name: "low above high", p: Policy{HighThresholdPercent: 70, LowThresholdPercent: 80},
			wantErr: []string{"80 must be less than", "70"}},
		{name: "high above 100", p: Policy{HighThresholdPercent: 101, LowThresholdPercent: 80},
			wantErr: []string{"--image-gc-high-threshold (imageGCHighThresholdPercent) is 101, must be between 0 and 100"}},
		{name: "negative low", p: Policy{HighThresholdPercent: 90, LowThresholdPercent: -1},
			wantErr: []string{"--image-gc-low-threshold (imageGCLowThresholdPercent) is -1"}},
		{name: "negative min age", p: Policy{HighThresholdPercent: 90, LowThresholdPercent: 80, MinAge: -time.Second},
			wantErr: []string{"--minimum-image-ttl-duration (imageMinimumGCAge) is -1s"}},
		{name: "several at once", p: Policy{HighThresholdPercent: -5, LowThresholdPercent: 200},
			wantErr: []string{"is -5", "is 200", "200 must be less than"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want error")
			}
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Errorf("error does not wrap ErrInvalidPolicy: %v", err)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}
