package eviction

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseFlagAndMap(t *testing.T) {
	tests := []struct {
		flag    string
		want    string // thresholds as signal=quantity|percent, ";"-joined
		wantErr string
	}{
		{flag: "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%",
			want: "imagefs.available=0.15;memory.available=100Mi;nodefs.available=0.1;nodefs.inodesFree=0.05"},
		{flag: " memory.available < 1Gi ", want: "memory.available=1Gi"},
		{flag: "", want: ""},
		{flag: "memory.available<0,nodefs.available<0%", want: ""},
		{flag: "pid.available<10%", want: "pid.available=0.1"},
		{flag: "memory.available>100Mi", wantErr: "want signal<value"},
		{flag: "memory.available<", wantErr: "want signal<value"},
		{flag: "memory.available<1Mi,memory.available<2Mi", wantErr: "given twice"},
		{flag: "memory.free<1Mi", wantErr: `unknown signal "memory.free"`},
		{flag: "memory.available<lots", wantErr: "bad quantity"},
		{flag: "memory.available<-1Mi", wantErr: "must not be negative"},
		{flag: "nodefs.available<101%", wantErr: "between 0% and 100%"},
		{flag: "nodefs.available<x%", wantErr: "bad percentage"},
	}
	for _, tc := range tests {
		m, err := ParseFlag(tc.flag)
		var ths []Threshold
		if err == nil {
			ths, err = ParseMap(m)
		}
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.flag, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.flag, err)
			continue
		}
		var got []string
		for _, th := range ths {
			if th.Quantity != nil {
				got = append(got, string(th.Signal)+"="+th.Quantity.String())
			} else {
				got = append(got, string(th.Signal)+"="+strings.TrimRight(strings.TrimRight(resource.NewMilliQuantity(int64(th.Percentage*1000+0.5), resource.DecimalSI).AsDec().String(), "0"), "."))
			}
		}
		if s := strings.Join(got, ";"); s != tc.want {
			t.Errorf("%q: got %q, want %q", tc.flag, s, tc.want)
		}
	}
}

func TestDefaultHardRoundTrips(t *testing.T) {
	m, err := ParseFlag(FormatFlag(DefaultHard()))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != len(DefaultHard()) || m["memory.available"] != "100Mi" || m["nodefs.available"] != "10%" {
		t.Errorf("round trip: %v", m)
	}
	if _, err := ParseMap(DefaultHard()); err != nil {
		t.Error(err)
	}
}

func TestReservation(t *testing.T) {
	capacity := v1.ResourceList{
		v1.ResourceMemory:           resource.MustParse("8Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		v1.ResourceCPU:              resource.MustParse("2"),
	}
	tests := []struct {
		flag          string
		memory, ephem string // "" for none
	}{
		{"memory.available<100Mi,nodefs.available<10%,imagefs.available<15%", "100Mi", "10Gi"},
		{"memory.available<25%", "2Gi", ""},
		{"nodefs.inodesFree<5%,pid.available<10%", "", ""},
		{"nodefs.available<1Gi", "", "1Gi"},
	}
	for _, tc := range tests {
		m, _ := ParseFlag(tc.flag)
		ths, err := ParseMap(m)
		if err != nil {
			t.Fatal(err)
		}
		r := Reservation(ths, capacity)
		for name, want := range map[v1.ResourceName]string{v1.ResourceMemory: tc.memory, v1.ResourceEphemeralStorage: tc.ephem} {
			q, ok := r[name]
			if want == "" {
				if ok {
					t.Errorf("%q: %s reserved %s, want none", tc.flag, name, q.String())
				}
				continue
			}
			if !ok || q.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%q: %s reserved %v, want %s", tc.flag, name, q.String(), want)
			}
		}
		if _, ok := r[v1.ResourceCPU]; ok {
			t.Errorf("%q: cpu reserved", tc.flag)
		}
	}
}
