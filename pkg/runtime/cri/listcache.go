package cri

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The relist asks for every sandbox and container every second, and on an
// idle node the answer is the same each time. Decoding it (label and
// annotation maps, a string per field) was the largest part of an idle
// node's CPU and the garbage behind most of its GCs. The full lists are
// therefore fetched undecoded, split into their entries (one length-delimited
// field each), and an entry that encodes the same message as one in the
// previous list reuses the message decoded then.
//
// "The same message" is decided on the bytes, made canonical first: a
// runtime encodes map entries in any order (containerd 1.6 does: Go map
// iteration), so an entry's key is its fields in their order with the
// entries of each map field sorted. Entries whose maps repeat a key (where
// the order decides which value wins) are decoded every time, uncached.
// Filtered lists are rare and not cached.
//
// Cached messages are shared between callers: nothing may modify a
// *runtimeapi.Container or *runtimeapi.PodSandbox returned by a list.

// Full method names of the two list calls (runtime.v1.RuntimeService).
const (
	methodListPodSandbox = "/runtime.v1.RuntimeService/ListPodSandbox"
	methodListContainers = "/runtime.v1.RuntimeService/ListContainers"
)

// listEntriesField is the number of the repeated field holding the entries in
// both ListPodSandboxResponse (items) and ListContainersResponse (containers).
const listEntriesField protowire.Number = 1

// cachedEntry keeps the key string with the message, so that an entry found
// again goes into the next map without a new string.
type cachedEntry[T proto.Message] struct {
	key string
	msg T
}

// decodeCache maps an entry's canonical bytes to its decoded message, for
// the entries of the latest list; older ones are dropped with each list.
type decodeCache[T proto.Message] struct {
	newMsg func() T
	// mapFields are the numbers of T's map fields.
	mapFields map[protowire.Number]bool

	mu      sync.Mutex
	entries map[string]cachedEntry[T] // guarded by mu
	// Scratch space for canonical keys, reused under mu.
	key    []byte
	chunks []mapChunk
}

func newDecodeCache[T proto.Message](newMsg func() T) *decodeCache[T] {
	maps := map[protowire.Number]bool{}
	fields := newMsg().ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if f := fields.Get(i); f.IsMap() {
			maps[f.Number()] = true
		}
	}
	return &decodeCache[T]{newMsg: newMsg, mapFields: maps, entries: map[string]cachedEntry[T]{}}
}

// decode splits a list response into its entries, decoding only the entries
// not seen in the previous response.
func (c *decodeCache[T]) decode(resp []byte) ([]T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := make(map[string]cachedEntry[T], len(c.entries))
	var out []T
	for len(resp) > 0 {
		num, typ, n := protowire.ConsumeTag(resp)
		if n < 0 {
			return nil, fmt.Errorf("decode list response: %w", protowire.ParseError(n))
		}
		resp = resp[n:]
		if num != listEntriesField || typ != protowire.BytesType {
			// Unknown to this version of the API: skipped, as proto would.
			n = protowire.ConsumeFieldValue(num, typ, resp)
			if n < 0 {
				return nil, fmt.Errorf("decode list response: %w", protowire.ParseError(n))
			}
			resp = resp[n:]
			continue
		}
		entry, n := protowire.ConsumeBytes(resp)
		if n < 0 {
			return nil, fmt.Errorf("decode list response: %w", protowire.ParseError(n))
		}
		resp = resp[n:]
		key, cacheable := c.canonical(entry)
		var hit cachedEntry[T]
		ok := false
		if cacheable {
			if hit, ok = next[string(key)]; !ok { // a duplicate entry in one response
				hit, ok = c.entries[string(key)]
			}
		}
		if !ok {
			msg := c.newMsg()
			if err := proto.Unmarshal(entry, msg); err != nil {
				return nil, fmt.Errorf("decode list entry: %w", err)
			}
			hit = cachedEntry[T]{msg: msg}
			if cacheable {
				hit.key = string(key)
			}
		}
		if cacheable {
			next[hit.key] = hit
		}
		out = append(out, hit.msg)
	}
	c.entries = next
	return out, nil
}

// canonical returns entry's fields with each map field's entries sorted, in
// c.key (valid until the next call). Not cacheable: bytes that do not parse
// (proto.Unmarshal reports why) or a map that repeats a key.
func (c *decodeCache[T]) canonical(entry []byte) (key []byte, cacheable bool) {
	c.key, c.chunks = c.key[:0], c.chunks[:0]
	for rest := entry; len(rest) > 0; {
		num, typ, n := protowire.ConsumeField(rest)
		if n < 0 {
			return nil, false
		}
		chunk := rest[:n]
		rest = rest[n:]
		if c.mapFields[num] && typ == protowire.BytesType {
			k, ok := mapEntryKey(chunk)
			if !ok {
				return nil, false
			}
			c.chunks = append(c.chunks, mapChunk{key: k, bytes: chunk})
			continue
		}
		c.key = append(c.key, chunk...)
	}
	// By field and map key first, so that entries repeating a key sort
	// next to each other whatever their values' lengths; the whole bytes
	// only order entries that repeat a key (then not cacheable anyway). A
	// map entry whose key comes after its value (no encoder in use does
	// that) reads as having the zero key: it only costs cache misses.
	slices.SortFunc(c.chunks, func(a, b mapChunk) int {
		if d := bytes.Compare(a.key.num, b.key.num); d != 0 {
			return d
		}
		if d := bytes.Compare(a.key.key, b.key.key); d != 0 {
			return d
		}
		return bytes.Compare(a.bytes, b.bytes)
	})
	for i, ch := range c.chunks {
		if i > 0 && bytes.Equal(c.chunks[i-1].key.num, ch.key.num) && bytes.Equal(c.chunks[i-1].key.key, ch.key.key) {
			return nil, false
		}
		c.key = append(c.key, ch.bytes...)
	}
	return c.key, true
}

// mapChunk is one encoded map entry of an entry being made canonical.
type mapChunk struct {
	key   mapKey
	bytes []byte
}

type mapKey struct{ num, key []byte }

// mapEntryKey reads the field tag and the key field of an encoded map entry;
// not ok when the entry does not parse or repeats its key field (the last
// would win: which key it has would depend on more than these bytes).
func mapEntryKey(chunk []byte) (mapKey, bool) {
	_, _, n := protowire.ConsumeTag(chunk)
	if n < 0 {
		return mapKey{}, false
	}
	k := mapKey{num: chunk[:n]} // no key field: the zero key
	body, m := protowire.ConsumeBytes(chunk[n:])
	if m < 0 {
		return mapKey{}, false
	}
	found := false
	for len(body) > 0 {
		num, _, l := protowire.ConsumeField(body)
		if l < 0 {
			return mapKey{}, false
		}
		if num == 1 {
			if found {
				return mapKey{}, false
			}
			k.key, found = body[:l], true
		}
		body = body[l:]
	}
	return k, true
}

// rawCodec hands the response over undecoded (as a *[]byte, into the
// buffer it already points to when that is large enough) and encodes
// requests as proto does.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := proto.Marshal(v.(proto.Message))
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	out, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot decode into %T", v)
	}
	// Into the caller's buffer: the response of a full list was most of
	// an idle node's garbage (a new buffer every second).
	buf := (*out)[:0]
	for _, b := range data {
		buf = append(buf, b.ReadOnlyData()...)
	}
	*out = buf
	return nil
}

func (rawCodec) Name() string { return "proto" }

// listAll invokes a list method with no filter and decodes its response
// through cache. The undecoded response goes into a buffer reused from list
// to list: decoded messages own their strings (proto copies them), so
// nothing refers to the buffer once decode returns.
func listAll[T proto.Message](ctx context.Context, c *Client, method string, req proto.Message, cache *decodeCache[T]) ([]T, error) {
	buf := c.lists.bufs.Get().(*[]byte)
	defer c.lists.bufs.Put(buf)
	if err := c.conn.Invoke(ctx, method, req, buf, grpc.ForceCodecV2(rawCodec{})); err != nil {
		return nil, err
	}
	return cache.decode(*buf)
}

// listCaches holds the decode caches of the two full lists and their
// response buffers.
type listCaches struct {
	sandboxes  *decodeCache[*runtimeapi.PodSandbox]
	containers *decodeCache[*runtimeapi.Container]
	bufs       *sync.Pool // of *[]byte
}

func newListCaches() listCaches {
	return listCaches{
		sandboxes:  newDecodeCache(func() *runtimeapi.PodSandbox { return new(runtimeapi.PodSandbox) }),
		containers: newDecodeCache(func() *runtimeapi.Container { return new(runtimeapi.Container) }),
		bufs:       &sync.Pool{New: func() any { return new([]byte) }},
	}
}
