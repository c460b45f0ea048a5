package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	"github.com/nodelet/nodelet/pkg/kube"
)

// MaxManifestSize caps one manifest file or URL body. A pod manifest is a few
// KiB; the cap keeps a stray file in the manifest dir (a log, a core dump)
// from being read into memory.
const MaxManifestSize = 10 << 20

var (
	// ErrEmptyManifest is returned for a manifest with no content (zero bytes,
	// whitespace or comments only). A file caught mid-write often looks like
	// this, so the file source retries it before reporting.
	ErrEmptyManifest = errors.New("manifest is empty")
	// ErrManifestTooLarge is returned for a manifest over MaxManifestSize.
	ErrManifestTooLarge = fmt.Errorf("manifest is larger than %d bytes", MaxManifestSize)
)

// strictDeserializer decodes typed objects and reports unknown and duplicate
// fields as a strict-decoding error while still returning the object. We turn
// those into warnings: a manifest written for a newer API version must still
// run (the upstream kubelet ignores such fields too), but a typo like
// "contianers" deserves a mention.
var strictDeserializer = serializer.NewCodecFactory(kube.Scheme, serializer.EnableStrict).UniversalDeserializer()

// Manifest is one decoded manifest.
type Manifest struct {
	// Pods in document order. Exactly one for a Pod manifest, any number
	// (including none) for a PodList or List.
	Pods []*v1.Pod
	// Warnings about fields that were ignored (unknown or duplicated). The
	// pods are usable.
	Warnings []string
}

// ReadManifest reads at most MaxManifestSize bytes from r and fails with
// ErrManifestTooLarge if there is more, without reading the rest.
func ReadManifest(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if len(data) > MaxManifestSize {
		return nil, ErrManifestTooLarge
	}
	return data, nil
}

// DecodeManifest decodes one JSON or YAML manifest holding a v1 Pod or, when
// allowList is set (URL source), a v1 PodList or a v1 List of Pods. Errors say
// what is wrong in terms of the manifest: YAML line, kind, apiVersion. It
// never panics: a panic in a parser on hostile input becomes an error.
func DecodeManifest(data []byte, allowList bool) (m *Manifest, err error) {
	defer func() {
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("decode manifest: internal decoder error: %v", r)
		}
	}()
	return decodeManifest(data, allowList)
}

func decodeManifest(data []byte, allowList bool) (*Manifest, error) {
	if len(data) > MaxManifestSize {
		return nil, ErrManifestTooLarge
	}
	if err := checkText(data); err != nil {
		return nil, err
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	m := &Manifest{}
	js, err := toJSON(data, m)
	if err != nil {
		return nil, err
	}
	if err := decodeObject(js, allowList, m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkText rejects input that cannot be YAML or JSON with a message that
// says so, instead of whatever the YAML parser makes of it.
func checkText(data []byte) error {
	if bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe}) {
		return errors.New("manifest is UTF-16 encoded; save it as UTF-8")
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("manifest is binary data, not YAML or JSON (NUL byte at offset %d)", i)
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		return fmt.Errorf("manifest is not valid UTF-8 text (invalid byte 0x%02x at offset %d)", data[i], i)
	}
	return nil
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

// toJSON converts the single document of a manifest to JSON. JSON input is
// taken as is; anything else is YAML.
func toJSON(data []byte, m *Manifest) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, ErrEmptyManifest
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if json.Valid(trimmed) {
			return trimmed, nil
		}
		// A YAML flow mapping also starts with '{'; only if YAML cannot make
		// sense of it either is it broken JSON, and the JSON error (with its
		// position) is the useful one.
		if js, err := yamlToJSON(data, m); err == nil {
			return js, nil
		}
		return nil, jsonSyntaxError(trimmed)
	}
	return yamlToJSON(data, m)
}

func jsonSyntaxError(data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := position(data, se.Offset)
		return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
	}
	if err == nil {
		err = errors.New("not a single JSON value")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	return line, col
}

func yamlToJSON(data []byte, m *Manifest) ([]byte, error) {
	doc, err := singleDocument(data)
	if err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", trimYAMLPrefix(err))
	}
	// The lenient conversion keeps the last of duplicated keys, as the
	// upstream kubelet does; the strict one tells us it happened.
	if _, err := yaml.YAMLToJSONStrict(doc); err != nil {
		m.Warnings = append(m.Warnings, trimYAMLPrefix(err))
	}
	return js, nil
}

func trimYAMLPrefix(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if strings.HasPrefix(msg, "unsupported map key") {
		// The library's message prints a nil key as "%!s(<nil>)" (found by
		// fuzzing "? : x" and "~: x").
		return "a mapping key is null or not a scalar; keys must be strings, numbers or booleans"
	}
	return msg
}

// singleDocument returns the one YAML document of a manifest that has
// content. Lines outside it are blanked rather than dropped so the YAML
// parser's line numbers still match the file. A file with two pods in it is
// an error: upstream silently runs the first one, which hides the second.
func singleDocument(data []byte) ([]byte, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	doc, content := 0, -1
	docOf := make([]int, len(lines))
	for i, l := range lines {
		if isDocSeparator(l) {
			doc++
		}
		docOf[i] = doc
		if hasContent(l) && !isDocSeparator(l) && content != doc {
			if content >= 0 {
				return nil, fmt.Errorf("manifest has more than one YAML document (second one at line %d); put each pod in its own file", i+1)
			}
			content = doc
		}
	}
	if content < 0 {
		return nil, ErrEmptyManifest
	}
	var b bytes.Buffer
	b.Grow(len(data))
	for i, l := range lines {
		switch {
		case docOf[i] != content:
			b.WriteByte('\n')
		case isDocSeparator(l):
			// "--- !!map" style: keep whatever follows the marker.
			b.WriteString("   ")
			b.Write(l[3:])
		default:
			b.Write(l)
		}
	}
	return b.Bytes(), nil
}

// isDocSeparator reports a YAML "---" document marker: at column 0 and
// followed by whitespace or the end of the line.
func isDocSeparator(l []byte) bool {
	if !bytes.HasPrefix(l, []byte("---")) {
		return false
	}
	rest := l[3:]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r'
}

// hasContent reports a line that is more than whitespace, a comment or a
// directive.
func hasContent(l []byte) bool {
	t := bytes.TrimSpace(l)
	if isDocSeparator(l) {
		t = bytes.TrimSpace(l[3:])
	}
	return len(t) > 0 && t[0] != '#' && t[0] != '%'
}

// typeMeta is read before the full decode so that a wrong kind or
// apiVersion gets a message in manifest terms rather than a scheme error.
type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

func readTypeMeta(js []byte) (typeMeta, error) {
	var tm typeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return tm, fmt.Errorf("read apiVersion and kind: %w", err)
	}
	return tm, nil
}

func decodeObject(js []byte, allowList bool, m *Manifest) error {
	if bytes.Equal(js, []byte("null")) {
		return ErrEmptyManifest
	}
	if len(js) == 0 || js[0] != '{' {
		return fmt.Errorf("manifest must be an object with apiVersion, kind, metadata and spec, not %s", jsonKind(js))
	}
	tm, err := readTypeMeta(js)
	if err != nil {
		return err
	}
	want := "Pod"
	if allowList {
		want = "Pod, PodList or List"
	}
	switch {
	case tm.Kind == "":
		return fmt.Errorf("manifest has no kind, want %s", want)
	case tm.Kind != "Pod" && !(allowList && (tm.Kind == "PodList" || tm.Kind == "List")):
		return fmt.Errorf("kind %q is not supported in a pod manifest, want %s", tm.Kind, want)
	case tm.APIVersion == "":
		return fmt.Errorf("%s manifest has no apiVersion, want v1", tm.Kind)
	case tm.APIVersion != "v1":
		return fmt.Errorf("apiVersion %q is not supported for kind %s, want v1", tm.APIVersion, tm.Kind)
	}
	obj, err := decodeTyped(js, tm.Kind, m)
	if err != nil {
		return err
	}
	switch o := obj.(type) {
	case *v1.Pod:
		m.Pods = append(m.Pods, o)
	case *v1.PodList:
		for i := range o.Items {
			m.Pods = append(m.Pods, &o.Items[i])
		}
	case *v1.List:
		for i, item := range o.Items {
			if err := decodeListItem(item, i, m); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("decode %s: unexpected object %T", tm.Kind, obj)
	}
	return nil
}

func decodeListItem(item runtime.RawExtension, i int, m *Manifest) error {
	raw := bytes.TrimSpace(item.Raw)
	if len(raw) == 0 || raw[0] != '{' {
		return fmt.Errorf("items[%d]: must be a Pod object, not %s", i, jsonKind(raw))
	}
	tm, err := readTypeMeta(raw)
	if err != nil {
		return fmt.Errorf("items[%d]: %w", i, err)
	}
	if tm.Kind != "Pod" || tm.APIVersion != "v1" {
		return fmt.Errorf("items[%d]: kind %q apiVersion %q is not supported in a List, want kind Pod apiVersion v1", i, tm.Kind, tm.APIVersion)
	}
	obj, err := decodeTyped(raw, "Pod", m)
	if err != nil {
		return fmt.Errorf("items[%d]: %w", i, err)
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return fmt.Errorf("items[%d]: decoded %T, want Pod", i, obj)
	}
	m.Pods = append(m.Pods, p)
	return nil
}

func decodeTyped(js []byte, kind string, m *Manifest) (runtime.Object, error) {
	obj, _, err := strictDeserializer.Decode(js, nil, nil)
	if err != nil {
		if strict, ok := runtime.AsStrictDecodingError(err); ok && obj != nil {
			for _, e := range strict.Errors() {
				m.Warnings = append(m.Warnings, e.Error())
			}
		} else {
			if strings.Contains(err.Error(), "cannot unmarshal bool into") && strings.Contains(err.Error(), "of type string") {
				// YAML 1.1 reads unquoted yes/no/on/off/y/n as booleans.
				return nil, fmt.Errorf("decode %s: %w (quote values like yes, no, on, off, y and n)", kind, err)
			}
			return nil, fmt.Errorf("decode %s: %w", kind, err)
		}
	}
	return obj, nil
}

func jsonKind(js []byte) string {
	if len(js) == 0 {
		return "nothing"
	}
	switch js[0] {
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}
