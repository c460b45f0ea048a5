package options

import (
	"reflect"
	"testing"
)

func TestHeaderFlag(t *testing.T) {
	tests := []struct {
		name    string
		sets    []string
		want    map[string][]string
		wantErr bool
	}{
		{"upstream example", []string{"a:hello,b:again,c:world", "b:beautiful"},
			map[string][]string{"a": {"hello"}, "b": {"again", "beautiful"}, "c": {"world"}}, false},
		{"value with colons", []string{"Authorization:Bearer a:b"}, map[string][]string{"Authorization": {"Bearer a:b"}}, false},
		{"spaces and blanks", []string{" a : x ,, b:"}, map[string][]string{"a": {"x"}, "b": {""}}, false},
		{"missing colon", []string{"novalue"}, nil, true},
		{"empty key", []string{":v"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := NewFlagSet("nodelet")
			var args []string
			for _, s := range tc.sets {
				args = append(args, "--manifest-url-header", s)
			}
			err := fs.Parse(args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			o := &Options{}
			for _, f := range flagSpecs() {
				if f.name == "manifest-url-header" {
					if err := f.apply(fs, o); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !reflect.DeepEqual(o.StaticPodURLHeader, tc.want) {
				t.Errorf("got %v, want %v", o.StaticPodURLHeader, tc.want)
			}
			if got := fs.Lookup("manifest-url-header").Value.String(); tc.name == "upstream example" && got != "a:hello,b:again,b:beautiful,c:world" {
				t.Errorf("String() = %q", got)
			}
		})
	}
}

func TestLabelsFlag(t *testing.T) {
	tests := []struct {
		name    string
		sets    []string
		want    map[string]string
		wantErr bool
	}{
		{"pairs", []string{"a=1,b=2"}, map[string]string{"a": "1", "b": "2"}, false},
		{"repeated, later wins", []string{"a=1", "a=2,c="}, map[string]string{"a": "2", "c": ""}, false},
		{"missing equals", []string{"a"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := &pairsValue{what: "label", sep: "="}
			var err error
			for _, s := range tc.sets {
				if err = v.Set(s); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(v.m, tc.want) {
				t.Errorf("got %v, want %v", v.m, tc.want)
			}
		})
	}
}
