// Package name mirrors the parts of go-containerregistry's pkg/name (v0.20.3, the version Flux's
// image-automation-controller v0.41 pinned) that Flux v0.x's update.ImageRef exposes to commit
// templates: the Registry, Repository, Tag and Digest types with their fields, embedding and
// exported method sets, and ParseReference with weak validation. It is written from the library's
// documented behaviour, so that the oracle runs without go-containerregistry (Debian packages it
// with some 250 dependencies).
package name

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"
)

const (
	defaultRegistry = "index.docker.io"
	registryAlias   = "docker.io"
	defaultTag      = "latest"
	repoChars       = "abcdefghijklmnopqrstuvwxyz0123456789_-./"
	tagChars        = "abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ"
)

// Reference is a tag or a digest reference.
type Reference interface {
	fmt.Stringer
	Context() Repository
	Identifier() string
	Name() string
	Scope(string) string
}

// Registry is a registry host.
type Registry struct {
	insecure bool
	registry string
}

// RegistryStr gives the registry host.
func (r Registry) RegistryStr() string { return r.registry }

// Name gives the registry host.
func (r Registry) Name() string { return r.RegistryStr() }

// String gives the registry host.
func (r Registry) String() string { return r.Name() }

// Repo gives a repository of the registry.
func (r Registry) Repo(repo ...string) Repository {
	return Repository{Registry: r, repository: path.Join(repo...)}
}

// Scope gives the registry's catalog scope.
func (r Registry) Scope(string) string { return "registry:catalog:*" }

var local = regexp.MustCompile(`.*\.local(?:host)?(?::\d{1,5})?$`)

// Scheme gives http for private, local and loopback registries, else https.
func (r Registry) Scheme() string {
	host := strings.Split(r.Name(), ":")[0]
	if ip := net.ParseIP(host); ip != nil {
		for _, cidr := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"} {
			_, block, _ := net.ParseCIDR(cidr)
			if block.Contains(ip) {
				return "http"
			}
		}
	}
	n := r.Name()
	if r.insecure || strings.HasPrefix(n, "localhost:") || local.MatchString(n) ||
		strings.Contains(n, "127.0.0.1") || strings.Contains(n, "::1") {
		return "http"
	}
	return "https"
}

// Repository is a repository in a registry.
type Repository struct {
	Registry
	repository string
}

// RepositoryStr gives the repository path, with library/ implied on Docker Hub.
func (r Repository) RepositoryStr() string {
	if !strings.ContainsRune(r.repository, '/') && r.RegistryStr() == defaultRegistry {
		return "library/" + r.repository
	}
	return r.repository
}

// Name gives registry/repository.
func (r Repository) Name() string {
	if n := r.Registry.Name(); n != "" {
		return n + "/" + r.RepositoryStr()
	}
	return r.RepositoryStr()
}

// String gives registry/repository.
func (r Repository) String() string { return r.Name() }

// Scope gives the repository scope for an action.
func (r Repository) Scope(action string) string {
	return "repository:" + r.RepositoryStr() + ":" + action
}

// Tag gives a tag of the repository.
func (r Repository) Tag(identifier string) Tag {
	t := Tag{Repository: r, tag: identifier}
	t.original = t.Name()
	return t
}

// Digest gives a digest of the repository.
func (r Repository) Digest(identifier string) Digest {
	d := Digest{Repository: r, digest: identifier}
	d.original = d.Name()
	return d
}

// Tag is a tag reference.
type Tag struct {
	Repository
	tag      string
	original string
}

// Context gives the repository.
func (t Tag) Context() Repository { return t.Repository }

// Identifier gives the tag.
func (t Tag) Identifier() string { return t.TagStr() }

// TagStr gives the tag.
func (t Tag) TagStr() string { return t.tag }

// Name gives the fully qualified reference.
func (t Tag) Name() string { return t.Repository.Name() + ":" + t.TagStr() }

// String gives the text parsed.
func (t Tag) String() string { return t.original }

// Scope gives the repository scope.
func (t Tag) Scope(action string) string { return t.Repository.Scope(action) }

// Digest is a digest reference.
type Digest struct {
	Repository
	digest   string
	original string
}

// Context gives the repository.
func (d Digest) Context() Repository { return d.Repository }

// Identifier gives the digest.
func (d Digest) Identifier() string { return d.DigestStr() }

// DigestStr gives the digest.
func (d Digest) DigestStr() string { return d.digest }

// Name gives the fully qualified reference.
func (d Digest) Name() string { return d.Repository.Name() + "@" + d.DigestStr() }

// String gives the text parsed.
func (d Digest) String() string { return d.original }

// Scope gives the repository scope.
func (d Digest) Scope(action string) string { return d.Repository.Scope(action) }

// MarshalJSON writes the text parsed as a JSON string.
func (d Digest) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func checkElement(what, element, allowed string, min, max int) error {
	n := utf8.RuneCountInString(element)
	if n < min || n > max {
		return fmt.Errorf("%s must be between %d and %d characters in length: %s", what, min, max, element)
	}
	for _, c := range element {
		if !strings.ContainsRune(allowed, c) {
			return fmt.Errorf("%s can only contain the characters `%s`: %s", what, allowed, element)
		}
	}
	return nil
}

// parseAuthority gives the host Go's URL parser reads from "//" + host.
func parseAuthority(host string) (string, error) {
	u, err := url.Parse("//" + host)
	if err != nil {
		return "", err
	}
	return u.Host, nil
}

func newRegistry(host string) (Registry, error) {
	if u, err := parseAuthority(host); err != nil || u != host {
		return Registry{}, fmt.Errorf("registries must be valid RFC 3986 URI authorities: %s", host)
	}
	if host == "" || host == registryAlias {
		host = defaultRegistry
	}
	return Registry{registry: host}, nil
}

func newRepository(s string) (Repository, error) {
	if s == "" {
		return Repository{}, fmt.Errorf("a repository name must be specified")
	}
	host, repo := "", s
	if parts := strings.SplitN(s, "/", 2); len(parts) == 2 && strings.ContainsAny(parts[0], ".:") {
		host, repo = parts[0], parts[1]
	}
	if err := checkElement("repository", repo, repoChars, 2, 255); err != nil {
		return Repository{}, err
	}
	reg, err := newRegistry(host)
	if err != nil {
		return Repository{}, err
	}
	return Repository{Registry: reg, repository: repo}, nil
}

func newTag(s string) (Tag, error) {
	base, tag := s, ""
	if parts := strings.Split(s, ":"); len(parts) > 1 && !strings.Contains(parts[len(parts)-1], "/") {
		base, tag = strings.Join(parts[:len(parts)-1], ":"), parts[len(parts)-1]
	}
	if tag != "" {
		if err := checkElement("tag", tag, tagChars, 1, 128); err != nil {
			return Tag{}, err
		}
	} else {
		tag = defaultTag
	}
	repo, err := newRepository(base)
	if err != nil {
		return Tag{}, err
	}
	return Tag{Repository: repo, tag: tag, original: s}, nil
}

var hex64 = regexp.MustCompile(`^[a-f0-9]{64}$`)

func newDigest(s string) (Digest, error) {
	parts := strings.Split(s, "@")
	if len(parts) != 2 {
		return Digest{}, fmt.Errorf("a digest must contain exactly one '@' separator (e.g. registry/repository@digest) saw: %s", s)
	}
	base, dig := parts[0], parts[1]
	if !strings.HasPrefix(dig, "sha256:") || !hex64.MatchString(strings.TrimPrefix(dig, "sha256:")) {
		return Digest{}, fmt.Errorf("invalid digest %s", dig)
	}
	if t, err := newTag(base); err == nil {
		base = t.Repository.Name()
	}
	repo, err := newRepository(base)
	if err != nil {
		return Digest{}, err
	}
	return Digest{Repository: repo, digest: dig, original: s}, nil
}

// ParseReference parses a tag reference, else a digest reference (weak validation).
func ParseReference(s string) (Reference, error) {
	if t, err := newTag(s); err == nil {
		return t, nil
	}
	if d, err := newDigest(s); err == nil {
		return d, nil
	}
	return nil, fmt.Errorf("could not parse reference: %s", s)
}
