package config

import (
	"errors"
	"io"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeManifest(t *testing.T) {
	const pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  containers:\n  - name: app\n    image: busybox:1.35\n"
	tests := []struct {
		name      string
		file      string // under testdata, instead of in
		in        string
		allowList bool
		pods      []string // names, when no error
		warning   string
		err       string // substring of the error
	}{
		{name: "pod yaml", file: "pod.yaml", pods: []string{"web"}},
		{name: "pod json", file: "pod.json", pods: []string{"web-json"}},
		{name: "pod with leading separator and comments", in: "# hi\n---\n" + pod + "---\n# trailing\n", pods: []string{"web"}},
		{name: "pod with BOM", in: "\xef\xbb\xbf" + pod, pods: []string{"web"}},
		{name: "yaml flow mapping", in: "{apiVersion: v1, kind: Pod, metadata: {name: web}}", pods: []string{"web"}},
		{name: "podlist", file: "podlist.yaml", allowList: true, pods: []string{"one", "two"}},
		{name: "list", file: "list.json", allowList: true, pods: []string{"a"}},
		{name: "empty podlist", in: `{"apiVersion":"v1","kind":"PodList","items":[]}`, allowList: true, pods: []string{}},
		{name: "pod where lists are allowed", file: "pod.yaml", allowList: true, pods: []string{"web"}},
		{name: "podlist in a file", file: "podlist.yaml", err: `kind "PodList" is not supported in a pod manifest, want Pod`},
		{name: "deployment", file: "deployment.yaml", err: `kind "Deployment" is not supported in a pod manifest, want Pod`},
		{name: "unregistered kind", in: "apiVersion: v1\nkind: Frobnicator\n", err: `kind "Frobnicator" is not supported`},
		{name: "wrong apiVersion", in: "apiVersion: apps/v1\nkind: Pod\n", err: `apiVersion "apps/v1" is not supported for kind Pod, want v1`},
		{name: "no apiVersion", in: "kind: Pod\n", err: "Pod manifest has no apiVersion, want v1"},
		{name: "no kind", in: "apiVersion: v1\nmetadata: {name: x}\n", err: "manifest has no kind, want Pod"},
		{name: "kind not a string", in: `{"apiVersion":"v1","kind":5}`, err: "read apiVersion and kind"},
		{name: "empty", in: "", err: "manifest is empty"},
		{name: "whitespace and comments", in: "\n  \n# nothing\n---\n", err: "manifest is empty"},
		{name: "null document", in: "~\n", err: "manifest is empty"},
		{name: "truncated yaml", file: "truncated.yaml", err: "invalid YAML: yaml: line 9"},
		{name: "bad indentation", file: "bad-indent.yaml", err: "invalid YAML: yaml: line 4: did not find expected key"},
		{name: "truncated json", in: "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n", err: "invalid JSON at line 3, column 17: unexpected end of JSON input"},
		{name: "two documents", file: "multidoc.yaml", err: "more than one YAML document (second one at line 10)"},
		{name: "scalar", in: "hello", err: "manifest must be an object with apiVersion, kind, metadata and spec, not a string"},
		{name: "array", in: "[1, 2]", err: "not a list"},
		{name: "binary", file: "garbage.bin", err: "binary data"},
		{name: "invalid utf-8", in: "kind: Pod\nmetadata: {name: \xc3\x28}\n", err: "not valid UTF-8 text (invalid byte 0xc3 at offset 27)"},
		{name: "utf-16", in: "\xff\xfek\x00", err: "UTF-16"},
		{name: "wrong field type", in: "apiVersion: v1\nkind: Pod\nspec:\n  containers: 5\n", err: "decode Pod: json: cannot unmarshal number into Go struct field PodSpec.spec.containers"},
		{name: "unquoted yes", file: "yes.yaml", err: "quote values like yes"},
		{name: "unknown field is a warning", file: "unknown-field.yaml", pods: []string{"web"}, warning: `unknown field "spec.contianers"`},
		{name: "duplicate key is a warning", in: "apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n  name: web\n", pods: []string{"web"}, warning: `key "name" already set`},
		{name: "list item of wrong kind", in: `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service"}]}`, allowList: true, err: `items[0]: kind "Service" apiVersion "v1" is not supported in a List, want kind Pod apiVersion v1`},
		{name: "list item without type", in: `{"apiVersion":"v1","kind":"List","items":[{}]}`, allowList: true, err: `items[0]: kind "" apiVersion "" is not supported`},
		{name: "null mapping key", in: "apiVersion: v1\nkind: Pod\n~: x\n", err: "invalid YAML: a mapping key is null or not a scalar"},
		{name: "complex mapping key", in: "apiVersion: v1\nkind: Pod\n? [a, b]\n: x\n", err: "invalid YAML: yaml: invalid map key"},
		{name: "list item not an object", in: `{"apiVersion":"v1","kind":"List","items":[3]}`, allowList: true, err: "items[0]: must be a Pod object, not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.in)
			if tt.file != "" {
				var err error
				if data, err = os.ReadFile("testdata/" + tt.file); err != nil {
					t.Fatal(err)
				}
			}
			m, err := DecodeManifest(data, tt.allowList)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			names := []string{}
			for _, p := range m.Pods {
				names = append(names, p.Name)
			}
			if !reflect.DeepEqual(names, tt.pods) {
				t.Errorf("pods = %v, want %v", names, tt.pods)
			}
			if got := strings.Join(m.Warnings, "; "); tt.warning == "" && got != "" || !strings.Contains(got, tt.warning) {
				t.Errorf("warnings = %q, want %q", got, tt.warning)
			}
		})
	}
}

func TestDecodeManifestTooLarge(t *testing.T) {
	big := make([]byte, MaxManifestSize+1)
	if _, err := DecodeManifest(big, false); !errors.Is(err, ErrManifestTooLarge) {
		t.Errorf("error = %v, want ErrManifestTooLarge", err)
	}
}

// countingReader is an endless stream that counts what was read.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += int64(len(p))
	return len(p), nil
}

func TestReadManifestStopsAtLimit(t *testing.T) {
	r := &countingReader{}
	_, err := ReadManifest(io.LimitReader(r, 50<<20))
	if !errors.Is(err, ErrManifestTooLarge) {
		t.Fatalf("error = %v, want ErrManifestTooLarge", err)
	}
	if r.n > MaxManifestSize+64<<10 {
		t.Errorf("read %d bytes of a 50 MB stream; want to stop just after %d", r.n, MaxManifestSize)
	}
	data, err := ReadManifest(strings.NewReader("kind: Pod"))
	if err != nil || string(data) != "kind: Pod" {
		t.Errorf("ReadManifest = %q, %v", data, err)
	}
}
