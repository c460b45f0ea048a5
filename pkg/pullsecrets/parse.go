package pullsecrets

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Credential is one registry login from a pull secret. Its String and
// GoString never show the username or password, so a Credential that
// reaches a log or an event by mistake leaks nothing.
type Credential struct {
	Username, Password string
	// Source names the secret ("namespace/name") it came from.
	Source string
}

// String names the credential's secret only.
func (c Credential) String() string { return "credential from secret " + c.Source }

// GoString is String, so %#v hides the secret too.
func (c Credential) GoString() string { return c.String() }

// Entry is one registry key of a docker config and its credential.
type Entry struct {
	// Key is the registry key as written in the secret
	// ("https://index.docker.io/v1/", "registry:5000/team", "*.example.com").
	Key        string
	Credential Credential
}

// maxSecretBytes bounds the docker config read from one secret. The API
// server caps a secret at 1 MiB; the check keeps a hostile object from an
// unexpected source from costing more.
const maxSecretBytes = 1 << 20

// dockerEntry is one registry's entry in a docker config.
type dockerEntry struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// FromSecret returns the registry entries of a pull secret. ok is false for
// a secret that is no docker config (another type, or the type's key
// missing or empty): upstream ignores such secrets. An error names the
// secret and says what is wrong, never quoting its content.
func FromSecret(s *v1.Secret) (entries []Entry, ok bool, err error) {
	var data []byte
	var key string
	switch s.Type {
	case v1.SecretTypeDockerConfigJson:
		key = v1.DockerConfigJsonKey
	case v1.SecretTypeDockercfg:
		key = v1.DockerConfigKey
	default:
		return nil, false, nil
	}
	if data = s.Data[key]; len(data) == 0 {
		return nil, false, nil
	}
	source := s.Namespace + "/" + s.Name
	entries, err = parse(s.Type, data, source)
	if err != nil {
		return nil, false, fmt.Errorf("image pull secret %q (type %s): %w", source, s.Type, err)
	}
	return entries, true, nil
}

// parse decodes the docker config of a secret of type typ.
func parse(typ v1.SecretType, data []byte, source string) ([]Entry, error) {
	if len(data) > maxSecretBytes {
		return nil, fmt.Errorf("docker config of %d bytes is larger than %d", len(data), maxSecretBytes)
	}
	var auths map[string]json.RawMessage
	if typ == v1.SecretTypeDockerConfigJson {
		var cfg struct {
			Auths map[string]json.RawMessage `json:"auths"`
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", v1.DockerConfigJsonKey, jsonProblem(err))
		}
		auths = cfg.Auths
	} else if err := json.Unmarshal(data, &auths); err != nil {
		return nil, fmt.Errorf("%s: %w", v1.DockerConfigKey, jsonProblem(err))
	}
	out := make([]Entry, 0, len(auths))
	for key, raw := range auths {
		var e dockerEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("registry %q: %w", printable(key), jsonProblem(err))
		}
		c := Credential{Username: e.Username, Password: e.Password, Source: source}
		if e.Auth != "" {
			user, pass, err := decodeAuth(e.Auth)
			if err != nil {
				return nil, fmt.Errorf("registry %q: %w", printable(key), err)
			}
			c.Username, c.Password = user, pass
		}
		out = append(out, Entry{Key: key, Credential: c})
	}
	return out, nil
}

// decodeAuth splits an "auth" field: base64 (padded or not) of
// user:password.
func decodeAuth(field string) (user, pass string, err error) {
	field = strings.TrimSpace(field)
	enc := base64.RawStdEncoding
	if strings.HasSuffix(field, "=") {
		enc = base64.StdEncoding
	}
	b, err := enc.DecodeString(field)
	if err != nil {
		// base64's error names only a byte offset.
		return "", "", fmt.Errorf("auth is not base64: %w", err)
	}
	user, pass, found := strings.Cut(string(b), ":")
	if !found {
		return "", "", errors.New("auth must be base64 of username:password")
	}
	return user, pass, nil
}

// jsonProblem describes a JSON error without the text it was about: a
// syntax error quotes the offending character, which could be part of a
// password.
func jsonProblem(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Errorf("not valid JSON (at byte %d)", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Errorf("unexpected JSON %s where %s belongs (at byte %d)", typ.Value, typ.Type, typ.Offset)
	default:
		return errors.New("not valid JSON")
	}
}

// printable shortens a registry key for a message and drops control
// characters, so a hostile key cannot forge log lines.
func printable(s string) string {
	const max = 100
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			b.WriteString("...")
			break
		}
		if r < 0x20 || r == 0x7f {
			r = '?'
		}
		b.WriteRune(r)
	}
	return b.String()
}
