package credentialprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// DefaultTimeout bounds one plugin run, as upstream bounds it.
const DefaultTimeout = time.Minute

// maxOutput bounds what is read of a plugin's stdout and stderr: an answer
// is a few hundred bytes, and a runaway plugin must not fill memory.
const maxOutput = 1 << 20

// Exec runs a plugin binary with the request on stdin.
type Exec struct {
	Path string
	Args []string
	// Env is added to nodelet's own environment (later entries win).
	Env []string
	// APIVersion of the request; the response must have the same.
	APIVersion string
	// Timeout is DefaultTimeout when zero.
	Timeout time.Duration
}

// Run implements Runner.
func (e *Exec) Run(ctx context.Context, repo string) (*Response, error) {
	req, err := json.Marshal(map[string]string{"apiVersion": e.APIVersion, "kind": "CredentialProviderRequest", "image": repo})
	if err != nil {
		return nil, err
	}
	timeout := e.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Path, e.Args...)
	cmd.Env = append(os.Environ(), e.Env...)
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A plugin's children holding the pipes open must not keep Wait past
	// the timeout.
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("running credential provider plugin %s for image %s: %w", e.Path, repo, ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("running credential provider plugin %s for image %s: %w: %s", e.Path, repo, err, strings.TrimSpace(stderr.String()))
	}
	return DecodeResponse(stdout.Bytes(), e.APIVersion)
}

// DecodeResponse decodes a plugin's answer strictly (an unknown field is
// an error, as upstream's strict decoder makes it) and checks that its
// apiVersion is the request's and its kind a CredentialProviderResponse.
// The error never quotes the answer, which holds passwords.
func DecodeResponse(data []byte, apiVersion string) (*Response, error) {
	var r credentialproviderv1.CredentialProviderResponse
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("decoding the credential provider response: %w", sanitize(err))
	}
	if r.APIVersion != apiVersion {
		return nil, fmt.Errorf("credential provider response has apiVersion %q, want %q as in the request", r.APIVersion, apiVersion)
	}
	if r.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("credential provider response has kind %q, want CredentialProviderResponse", r.Kind)
	}
	out := &Response{CacheKeyType: string(r.CacheKeyType)}
	if r.CacheDuration != nil {
		d := r.CacheDuration.Duration
		out.CacheDuration = &d
	}
	if len(r.Auth) > 0 {
		out.Auth = make(map[string]Login, len(r.Auth))
		for k, a := range r.Auth {
			out.Auth[k] = Login{Username: a.Username, Password: a.Password}
		}
	}
	return out, nil
}

// sanitize keeps a JSON error's kind and offset but not the value it
// quotes, which may be a password.
func sanitize(err error) error {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Errorf("invalid JSON at offset %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Errorf("field %q: wrong type %s", e.Field, e.Value)
	}
	if strings.HasPrefix(err.Error(), "json: unknown field") {
		return err
	}
	return fmt.Errorf("invalid response")
}

// limitedBuffer keeps the first maxOutput bytes written and drops the
// rest, still reporting them written so the plugin is not killed by EPIPE.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*limitedBuffer)(nil)
