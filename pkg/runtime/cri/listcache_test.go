package cri

import (
	"context"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func newContainerCache() *decodeCache[*runtimeapi.Container] {
	return newDecodeCache(func() *runtimeapi.Container { return new(runtimeapi.Container) })
}

func encodeList(t testing.TB, cs ...*runtimeapi.Container) []byte {
	t.Helper()
	b, err := proto.Marshal(&runtimeapi.ListContainersResponse{Containers: cs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeCacheReusesUnchangedEntries(t *testing.T) {
	c := newContainerCache()
	a := &runtimeapi.Container{Id: "a", Labels: map[string]string{"k": "v"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	b := &runtimeapi.Container{Id: "b", Annotations: map[string]string{"x": "y"}}
	first, err := c.decode(encodeList(t, a, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 || !proto.Equal(first[0], a) || !proto.Equal(first[1], b) {
		t.Fatalf("decoded %v, want a and b as sent", first)
	}
	b.State = runtimeapi.ContainerState_CONTAINER_EXITED
	second, err := c.decode(encodeList(t, a, b))
	if err != nil {
		t.Fatal(err)
	}
	if second[0] != first[0] {
		t.Error("unchanged entry decoded again, want the cached message")
	}
	if second[1] == first[1] || second[1].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("changed entry = %v, want a new message with the new state", second[1])
	}
	// a leaves the list and comes back: decoded anew (the cache holds only
	// the previous list's entries).
	if _, err := c.decode(encodeList(t, b)); err != nil {
		t.Fatal(err)
	}
	if len(c.entries) != 1 {
		t.Errorf("cache holds %d entries, want only the latest list's 1", len(c.entries))
	}
	third, _ := c.decode(encodeList(t, a, b))
	if third[0] == first[0] || !proto.Equal(third[0], a) {
		t.Error("entry absent from the previous list must be decoded anew")
	}
}

func TestDecodeCacheEmptyAndUnknownFields(t *testing.T) {
	c := newContainerCache()
	got, err := c.decode(nil)
	if err != nil || len(got) != 0 {
		t.Errorf("empty response: %v, %v", got, err)
	}
	// A field a newer API might add to the response is skipped.
	b := protowire.AppendTag(nil, 7, protowire.VarintType)
	b = protowire.AppendVarint(b, 42)
	b = append(b, encodeList(t, &runtimeapi.Container{Id: "a"})...)
	got, err = c.decode(b)
	if err != nil || len(got) != 1 || got[0].Id != "a" {
		t.Errorf("with an unknown field: %v, %v", got, err)
	}
	if _, err := c.decode([]byte{0x0a, 0x05, 0x01}); err == nil {
		t.Error("truncated entry: want an error")
	}
}

// FuzzDecodeCache: whatever the runtime sends, the cache never panics and
// gives what proto.Unmarshal of the whole response gives, also on the second
// pass when entries come from the cache.
func FuzzDecodeCache(f *testing.F) {
	f.Add(encodeList(f, &runtimeapi.Container{Id: "a", Labels: map[string]string{"k": "v"}}, &runtimeapi.Container{Id: "b"}))
	f.Add([]byte{0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		var want runtimeapi.ListContainersResponse
		wantErr := proto.Unmarshal(b, &want)
		c := newContainerCache()
		for pass := 0; pass < 2; pass++ {
			got, err := c.decode(b)
			if wantErr != nil {
				continue // the cache may be stricter or laxer about broken bytes; it only must not panic
			}
			if err != nil {
				t.Fatalf("pass %d: %v, but proto decodes it", pass, err)
			}
			if len(got) != len(want.Containers) {
				t.Fatalf("pass %d: %d entries, proto %d", pass, len(got), len(want.Containers))
			}
			for i := range got {
				if !proto.Equal(got[i], want.Containers[i]) {
					t.Fatalf("pass %d entry %d: %v, proto %v", pass, i, got[i], want.Containers[i])
				}
			}
		}
	})
}

// Through a real gRPC connection: the full lists go through the cache, and a
// relist of an unchanged runtime decodes nothing.
func TestFullListsReuseDecodedEntries(t *testing.T) {
	f := &fakeCRI{
		sandboxes:  []*runtimeapi.PodSandbox{sandboxOf("sb1", "web", 0, 100, true, true)},
		containers: []*runtimeapi.Container{ctrOf("w0", "sb1", "web", "a", 0, 110, running)},
	}
	c := dial(t, f)
	ctx := context.Background()
	s1, err1 := c.ListPodSandbox(ctx, nil)
	c1, err2 := c.ListContainers(ctx, nil)
	s2, err3 := c.ListPodSandbox(ctx, nil)
	c2, err4 := c.ListContainers(ctx, nil)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(s1) != 1 || len(c1) != 1 || s1[0] != s2[0] || c1[0] != c2[0] {
		t.Errorf("second lists gave new messages (%p %p, %p %p), want the cached ones", s1[0], s2[0], c1[0], c2[0])
	}
	if !proto.Equal(s1[0], f.sandboxes[0]) || !proto.Equal(c1[0], f.containers[0]) {
		t.Errorf("listed %v %v, want what the runtime sent", s1[0], c1[0])
	}
}

// encodeWithLabels encodes a container whose labels come in the given order,
// as a runtime iterating a Go map may send them.
func encodeWithLabels(id string, kv ...string) []byte {
	var c []byte
	c = protowire.AppendTag(c, 1, protowire.BytesType)
	c = protowire.AppendString(c, id)
	for i := 0; i+1 < len(kv); i += 2 {
		var e []byte
		e = protowire.AppendTag(e, 1, protowire.BytesType)
		e = protowire.AppendString(e, kv[i])
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendString(e, kv[i+1])
		c = protowire.AppendTag(c, 8, protowire.BytesType) // labels
		c = protowire.AppendBytes(c, e)
	}
	resp := protowire.AppendTag(nil, 1, protowire.BytesType)
	return protowire.AppendBytes(resp, c)
}

func TestDecodeCacheIgnoresMapOrder(t *testing.T) {
	c := newContainerCache()
	first, err := c.decode(encodeWithLabels("a", "x", "1", "y", "2"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.decode(encodeWithLabels("a", "y", "2", "x", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if first[0] != second[0] {
		t.Error("same labels in another order decoded again, want the cached message")
	}
	third, _ := c.decode(encodeWithLabels("a", "y", "2", "x", "3"))
	if third[0] == second[0] || third[0].Labels["x"] != "3" {
		t.Errorf("changed label: %v, want a new message", third[0].Labels)
	}
	// A repeated key: the last value wins, so order matters; never cached.
	dup1, _ := c.decode(encodeWithLabels("a", "x", "1", "x", "2"))
	dup2, _ := c.decode(encodeWithLabels("a", "x", "2", "x", "1"))
	if dup1[0].Labels["x"] != "2" || dup2[0].Labels["x"] != "1" {
		t.Errorf("repeated key: %v then %v, want the last value each time", dup1[0].Labels, dup2[0].Labels)
	}
}

// The full lists' responses go into a reused buffer: what was decoded from
// it must not change when the next response overwrites it.
func TestFullListsOwnTheirEntries(t *testing.T) {
	f := &fakeCRI{containers: []*runtimeapi.Container{ctrOf("a0", "sb1", "web", "a", 0, 110, running)}}
	c := dial(t, f)
	ctx := context.Background()
	first, err := c.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := proto.Clone(first[0])
	for i, next := range []*runtimeapi.Container{
		ctrOf("b0", "sb2", "other-pod-name", "b", 1, 120, exited),
		ctrOf("c00000000000000000000", "sb3", "yet-another-pod", "c", 2, 130, running),
	} {
		f.mu.Lock()
		f.containers = []*runtimeapi.Container{next}
		f.mu.Unlock()
		got, err := c.ListContainers(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got[0], next) {
			t.Errorf("list %d: got %v, want %v", i+2, got[0], next)
		}
		if !proto.Equal(first[0], want) {
			t.Fatalf("list %d changed the entry decoded by the first: %v, want %v", i+2, first[0], want)
		}
	}
}

func TestRawCodecReusesTheBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	out := &buf
	data := mem.BufferSlice{mem.SliceBuffer("hello "), mem.SliceBuffer("world")}
	if err := (rawCodec{}).Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
	if string(*out) != "hello world" || &(*out)[:1][0] != &buf[:1][0] {
		t.Errorf("got %q in a new buffer, want %q in the caller's", *out, "hello world")
	}
}

// A repeated key whose entries do not sort next to each other (entries of
// another length between them) is still seen as repeated: never cached.
func TestDecodeCacheRepeatedKeyApart(t *testing.T) {
	c := newContainerCache()
	first, _ := c.decode(encodeWithLabels("a", "x", "1", "y", "2", "x", "33"))
	second, _ := c.decode(encodeWithLabels("a", "x", "33", "y", "2", "x", "1"))
	if first[0].Labels["x"] != "33" || second[0].Labels["x"] != "1" {
		t.Errorf("repeated key: %v then %v, want the last value each time", first[0].Labels, second[0].Labels)
	}
}

// A map entry that repeats its key field has the last key: such entries
// are never cached, whatever their order.
func TestDecodeCacheRepeatedKeyField(t *testing.T) {
	entry := func(keys []string, value string) []byte {
		var e []byte
		for _, k := range keys {
			e = protowire.AppendTag(e, 1, protowire.BytesType)
			e = protowire.AppendString(e, k)
		}
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		return protowire.AppendString(e, value)
	}
	list := func(entries ...[]byte) []byte {
		var c []byte
		c = protowire.AppendTag(c, 1, protowire.BytesType)
		c = protowire.AppendString(c, "id")
		for _, e := range entries {
			c = protowire.AppendTag(c, 8, protowire.BytesType) // labels
			c = protowire.AppendBytes(c, e)
		}
		resp := protowire.AppendTag(nil, 1, protowire.BytesType)
		return protowire.AppendBytes(resp, c)
	}
	c := newContainerCache()
	tricky, plain := entry([]string{"a", "b"}, "1"), entry([]string{"b"}, "2")
	for i, b := range [][]byte{list(tricky, plain), list(plain, tricky)} {
		var want runtimeapi.ListContainersResponse
		if err := proto.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, err := c.decode(b)
		if err != nil || !proto.Equal(got[0], want.Containers[0]) {
			t.Errorf("order %d: got %v (%v), want %v", i, got, err, want.Containers[0])
		}
	}
}
