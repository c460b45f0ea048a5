package options

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/FLAGS.md from the flag tables")

// TestFlagsDoc keeps docs/FLAGS.md what the code does: it is rendered from
// the tables of refused and ignored flags and fields. After changing them:
// go test ./pkg/options -run TestFlagsDoc -update-docs
func TestFlagsDoc(t *testing.T) {
	const path = "../../docs/FLAGS.md"
	want := renderFlagsDoc()
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is out of date: go test ./pkg/options -run TestFlagsDoc -update-docs", path)
	}
}

func renderFlagsDoc() string {
	var b strings.Builder
	b.WriteString(`# Upstream flags and config fields nodelet does not implement

Generated from pkg/options (refused.go, unsupported.go) by ` + "`go test ./pkg/options -run TestFlagsDoc -update-docs`" + `;
a test fails when this file and the code disagree.

nodelet takes the upstream kubelet's flags and ` + "`KubeletConfiguration`" + ` fields under their upstream names. The
ones it implements are listed by ` + "`nodelet --help`" + `. Of the others:

- **Refused**: set to anything but upstream's default, nodelet does not start and says why, because ignoring
  the setting would leave the node less safe than the operator asked. At the default they change nothing.
- **Ignored with a warning**: accepted so that a unit file written for the upstream kubelet still starts
  nodelet; each one that is set is named in a warning at start.
- A ` + "`KubeletConfiguration`" + ` field nodelet does not honour is named in a warning when a file sets it to anything
  but upstream's default (found by walking the type, so a field added upstream is reported, never dropped).

One default differs from upstream's: ` + "`--image-gc-high-threshold`" + ` / ` + "`imageGCHighThresholdPercent`" + ` is 90 (upstream: 85).

## Refused flags

| flag | why it cannot be ignored |
|---|---|
`)
	names := make([]string, 0, len(refusedFlags))
	for n := range refusedFlags {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "| `--%s` | %s |\n", n, refusedFlags[n].reason)
	}
	b.WriteString("\n## Refused config fields\n\n| field | why it cannot be ignored |\n|---|---|\n")
	fields := make([]string, 0, len(refusedFields))
	for f := range refusedFields {
		fields = append(fields, f)
	}
	slices.Sort(fields)
	for _, f := range fields {
		fmt.Fprintf(&b, "| `%s` | %s |\n", f, refusedFields[f])
	}
	b.WriteString("\n## Flags ignored with a warning\n\n")
	var warned []string
	for _, n := range slices.Concat(unsupportedBoolFlags, unsupportedValueFlags) {
		if _, refused := refusedFlags[n]; !refused {
			warned = append(warned, "`--"+n+"`")
		}
	}
	slices.Sort(warned)
	b.WriteString(strings.Join(warned, ", ") + "\n")
	return b.String()
}
