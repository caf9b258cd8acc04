//! Image reference parsing and Docker Hub normalisation.
//!
//! The rules follow go-containerregistry's `name` package in its default
//! ("weak") validation mode, because that is what Flux uses to check the
//! values it writes and to compute `canonicalImageName`:
//!
//! * the first `/`-separated component is a registry when it contains `.` or
//!   `:`, or is exactly `localhost`; otherwise the registry is Docker Hub;
//! * `docker.io` is spelled `index.docker.io`, and a one-component Docker Hub
//!   repository gets the `library/` prefix (`nginx` → `library/nginx`);
//! * repositories are lowercase (`a-z0-9_-./`), 2–255 characters;
//! * tags match `[\w][\w.-]{0,127}`;
//! * digests are `algorithm:hex` (`sha256` needs 64 hex digits).
//!
//! Everything here is pure: no I/O, no allocation beyond the result.

use std::fmt;

/// The registry that unqualified names refer to.
pub const DOCKER_HUB: &str = "index.docker.io";
/// The host that actually serves the Docker Hub registry API.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";
/// The tag implied when a reference has neither a tag nor a digest.
pub const DEFAULT_TAG: &str = "latest";

/// Why a string is not a valid image reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    #[error("image reference is empty")]
    Empty,
    #[error("image '{0}' should not include URL scheme; remove '{1}'")]
    Scheme(String, String),
    #[error("image '{0}' should not include a tag; remove ':{1}'")]
    UnexpectedTag(String, String),
    #[error("invalid registry {registry:?} in {input:?}")]
    Registry { input: String, registry: String },
    #[error(
        "invalid repository {repository:?} in {input:?}: use 2-255 characters from a-z, 0-9, '_', '-', '.', '/'"
    )]
    Repository { input: String, repository: String },
    #[error("invalid tag {tag:?} in {input:?}: must match [A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}}")]
    Tag { input: String, tag: String },
    #[error("invalid digest {digest:?} in {input:?}: expected algorithm:hex")]
    Digest { input: String, digest: String },
}

/// A repository on a registry, normalised (`index.docker.io/library/nginx`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Repository {
    registry: String,
    repository: String,
}

impl Repository {
    /// Parse a repository name without tag or digest, the way Flux validates
    /// `ImageRepository.spec.image`: a URL scheme is refused, and so is any
    /// `:` after the registry part (which would be a tag or a digest).
    pub fn parse(input: &str) -> Result<Self, ReferenceError> {
        let input = input.trim();
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        if let Some(pos) = input.find("://") {
            return Err(ReferenceError::Scheme(
                input.to_owned(),
                input[..pos + 3].to_owned(),
            ));
        }
        let (registry_part, rest) = split_registry(input);
        if let Some(pos) = rest.find(':') {
            return Err(ReferenceError::UnexpectedTag(
                input.to_owned(),
                rest[pos + 1..].to_owned(),
            ));
        }
        if rest.contains('@') {
            let digest = rest.rsplit('@').next().unwrap_or_default();
            return Err(ReferenceError::Digest {
                input: input.to_owned(),
                digest: digest.to_owned(),
            });
        }
        Self::from_parts(input, registry_part, rest)
    }

    fn from_parts(
        input: &str,
        registry: Option<&str>,
        repository: &str,
    ) -> Result<Self, ReferenceError> {
        let registry = match registry {
            None => DOCKER_HUB.to_owned(),
            Some(r) => {
                if !valid_registry(r) {
                    return Err(ReferenceError::Registry {
                        input: input.to_owned(),
                        registry: r.to_owned(),
                    });
                }
                normalise_registry(r)
            }
        };
        let repository = if registry == DOCKER_HUB && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository.to_owned()
        };
        if !valid_repository(&repository) {
            return Err(ReferenceError::Repository {
                input: input.to_owned(),
                repository,
            });
        }
        Ok(Self {
            registry,
            repository,
        })
    }

    /// Build a repository from an already separated registry host and path.
    pub fn new(registry: &str, repository: &str) -> Result<Self, ReferenceError> {
        let input = format!("{registry}/{repository}");
        Self::from_parts(&input, Some(registry), repository)
    }

    /// The registry host (with port), normalised: `index.docker.io`, `ghcr.io`, `localhost:5000`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository path inside the registry: `library/nginx`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// `registry/repository`, Flux's `canonicalImageName`.
    pub fn canonical_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The host that serves the registry API (Docker Hub uses another host
    /// than its canonical name).
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }
}

impl fmt::Display for Repository {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)
    }
}

/// A full image reference: repository plus tag and/or digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    original: String,
    repository: Repository,
    tag: Option<String>,
    digest: Option<String>,
}

impl Reference {
    /// Parse `name[:tag][@digest]`.
    pub fn parse(input: &str) -> Result<Self, ReferenceError> {
        if input.is_empty() {
            return Err(ReferenceError::Empty);
        }
        let (name, digest) = match input.rsplit_once('@') {
            Some((name, digest)) => {
                if !valid_digest(digest) {
                    return Err(ReferenceError::Digest {
                        input: input.to_owned(),
                        digest: digest.to_owned(),
                    });
                }
                (name, Some(digest.to_owned()))
            }
            None => (input, None),
        };
        let (registry_part, rest) = split_registry(name);
        let (path, tag) = match rest.rsplit_once(':') {
            Some((path, tag)) => {
                if !valid_tag(tag) {
                    return Err(ReferenceError::Tag {
                        input: input.to_owned(),
                        tag: tag.to_owned(),
                    });
                }
                (path, Some(tag.to_owned()))
            }
            None => (rest, None),
        };
        let repository = Repository::from_parts(input, registry_part, path)?;
        Ok(Self {
            original: input.to_owned(),
            repository,
            tag,
            digest,
        })
    }

    /// The text this reference was parsed from.
    pub fn original(&self) -> &str {
        &self.original
    }

    pub fn repository(&self) -> &Repository {
        &self.repository
    }

    /// The explicit tag, if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// The explicit digest, if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The digest if present, else the tag, else `latest` (go-containerregistry `Identifier`).
    pub fn identifier(&self) -> &str {
        self.digest
            .as_deref()
            .or(self.tag.as_deref())
            .unwrap_or(DEFAULT_TAG)
    }

    /// Fully qualified name: `registry/repo@digest` when a digest is present
    /// (the tag is then dropped, as go-containerregistry does), else `registry/repo:tag`.
    pub fn name(&self) -> String {
        match &self.digest {
            Some(d) => format!("{}@{d}", self.repository),
            None => format!(
                "{}:{}",
                self.repository,
                self.tag.as_deref().unwrap_or(DEFAULT_TAG)
            ),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.original)
    }
}

/// Check that `input` is a valid `name[:tag][@digest]` image reference
/// (go-containerregistry `ParseReference` with weak validation). Stricter
/// than [`Reference::parse`] in one point, as go-containerregistry is: the
/// digest must be `sha256:` with 64 hex digits.
pub fn validate_reference(input: &str) -> Result<(), ReferenceError> {
    let reference = Reference::parse(input)?;
    match reference.digest() {
        Some(d) if !d.starts_with("sha256:") => Err(ReferenceError::Digest {
            input: input.to_owned(),
            digest: d.to_owned(),
        }),
        _ => Ok(()),
    }
}

/// Split off the registry component when the first path component looks like a host.
fn split_registry(input: &str) -> (Option<&str>, &str) {
    match input.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (Some(first), rest)
        }
        _ => (None, input),
    }
}

/// `docker.io` and its aliases become `index.docker.io`.
pub fn normalise_registry(registry: &str) -> String {
    match registry {
        "docker.io" => DOCKER_HUB.to_owned(),
        other => other.to_owned(),
    }
}

/// Registry syntax: `host[:port]` or `[ipv6][:port]`.
pub fn valid_registry(registry: &str) -> bool {
    let (host_ok, port) = if let Some(rest) = registry.strip_prefix('[') {
        // `[ipv6]` or `[ipv6]:port`
        let Some((h, p)) = rest.split_once(']') else {
            return false;
        };
        let ok = !h.is_empty() && h.chars().all(|c| c.is_ascii_hexdigit() || c == ':');
        match p {
            "" => (ok, None),
            _ => match p.strip_prefix(':') {
                Some(port) => (ok, Some(port)),
                None => return false,
            },
        }
    } else {
        let (h, p) = match registry.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (registry, None),
        };
        let ok = !h.is_empty()
            && h.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
        (ok, p)
    };
    host_ok
        && port
            .is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.chars().all(|c| c.is_ascii_digit()))
}

fn valid_repository(repository: &str) -> bool {
    (2..=255).contains(&repository.len())
        && repository.chars().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.' | '/')
        })
        && !repository.starts_with('/')
        && !repository.ends_with('/')
        && !repository.contains("//")
}

/// Tag syntax: `[\w][\w.-]{0,127}`.
pub fn valid_tag(tag: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut chars = tag.chars();
    match chars.next() {
        Some(first) if word(first) => {}
        _ => return false,
    }
    tag.len() <= 128 && chars.all(|c| word(c) || c == '.' || c == '-')
}

/// Digest syntax: `algorithm:hex`. `sha256` needs 64 and `sha512` 128
/// lowercase hex digits; other algorithms need at least 32.
pub fn valid_digest(digest: &str) -> bool {
    let Some((algo, hex)) = digest.split_once(':') else {
        return false;
    };
    let algo_ok = !algo.is_empty()
        && algo.split(['+', '.', '_', '-']).all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    let hex_ok = hex
        .chars()
        .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c));
    let len_ok = match algo {
        "sha256" => hex.len() == 64,
        "sha512" => hex.len() == 128,
        _ => hex.len() >= 32,
    };
    algo_ok && hex_ok && len_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be";

    #[test]
    fn must_ref_docker_hub_short_name() {
        let r = Reference::parse("helloworld:v1.0.1").unwrap();
        assert_eq!(r.to_string(), "helloworld:v1.0.1");
        assert_eq!(r.identifier(), "v1.0.1");
        assert_eq!(r.repository().repository(), "library/helloworld");
        assert_eq!(r.repository().registry(), "index.docker.io");
        assert_eq!(r.name(), "index.docker.io/library/helloworld:v1.0.1");
    }

    #[test]
    fn must_ref_localhost_port_digest() {
        let input = format!("localhost:5000/org/helloworld@{D}");
        let r = Reference::parse(&input).unwrap();
        assert_eq!(r.to_string(), input);
        assert_eq!(r.name(), input);
        assert_eq!(r.identifier(), D);
        assert_eq!(r.repository().repository(), "org/helloworld");
        assert_eq!(r.repository().registry(), "localhost:5000");
    }

    #[test]
    fn docker_hub_normalisation() {
        let cases = [
            ("nginx", "index.docker.io/library/nginx"),
            ("alpine", "index.docker.io/library/alpine"),
            (
                "stefanprodan/podinfo",
                "index.docker.io/stefanprodan/podinfo",
            ),
            ("docker.io/nginx", "index.docker.io/library/nginx"),
            ("docker.io/library/nginx", "index.docker.io/library/nginx"),
            ("index.docker.io/nginx", "index.docker.io/library/nginx"),
            ("ghcr.io/fluxcd/flux", "ghcr.io/fluxcd/flux"),
            ("localhost/foo", "localhost/foo"),
            ("localhost:5000/foo", "localhost:5000/foo"),
            ("registry:5000/classic-web", "registry:5000/classic-web"),
            ("10.0.0.1/x/y", "10.0.0.1/x/y"),
            ("quay.io/a/b/c/d", "quay.io/a/b/c/d"),
            ("[::1]:5000/foo", "[::1]:5000/foo"),
        ];
        for (input, want) in cases {
            let repo = Repository::parse(input).unwrap();
            assert_eq!(repo.canonical_name(), want, "{input}");
        }
        assert_eq!(
            Repository::parse("nginx").unwrap().api_host(),
            DOCKER_HUB_API
        );
        assert_eq!(
            Repository::parse("ghcr.io/a/b").unwrap().api_host(),
            "ghcr.io"
        );
    }

    #[test]
    fn first_component_without_dot_is_a_path() {
        let r = Repository::parse("myorg/app").unwrap();
        assert_eq!(r.registry(), DOCKER_HUB);
        assert_eq!(r.repository(), "myorg/app");
    }

    #[test]
    fn repository_parse_rejects_scheme_tag_digest() {
        assert_eq!(
            Repository::parse("https://ghcr.io/a/b")
                .unwrap_err()
                .to_string(),
            "image 'https://ghcr.io/a/b' should not include URL scheme; remove 'https://'"
        );
        assert_eq!(
            Repository::parse("ghcr.io/a/b:v1").unwrap_err().to_string(),
            "image 'ghcr.io/a/b:v1' should not include a tag; remove ':v1'"
        );
        assert!(Repository::parse(&format!("ghcr.io/a/b@{D}")).is_err());
        assert!(Repository::parse("host:5000/a/b").is_ok());
        assert!(Repository::parse("").is_err());
    }

    #[test]
    fn uppercase_repository_is_invalid() {
        assert!(matches!(
            Reference::parse("ghcr.io/Org/app:v1"),
            Err(ReferenceError::Repository { .. })
        ));
        assert!(Reference::parse("Nginx:1").is_err());
        // an uppercase registry host is fine
        assert!(Reference::parse("GHCR.io/org/app:v1").is_ok());
    }

    #[test]
    fn tags() {
        assert!(valid_tag("v1.0.0"));
        assert!(valid_tag("_x"));
        assert!(valid_tag("1.2.3-rc.1_build"));
        assert!(valid_tag(&"a".repeat(128)));
        assert!(!valid_tag(&"a".repeat(129)));
        assert!(!valid_tag(""));
        assert!(!valid_tag(".hidden"));
        assert!(!valid_tag("-x"));
        assert!(!valid_tag("a+b"));
        assert!(!valid_tag("a/b"));
        assert!(Reference::parse("nginx:bad+tag").is_err());
        assert!(Reference::parse(&format!("nginx:{}", "a".repeat(129))).is_err());
    }

    #[test]
    fn digests() {
        assert!(valid_digest(D));
        assert!(!valid_digest("sha256:abc"));
        assert!(!valid_digest(&D.to_uppercase()));
        assert!(!valid_digest("sha256"));
        assert!(valid_digest(&format!("sha512:{}", "a".repeat(128))));
        assert!(valid_digest(&format!(
            "multihash+base58:{}",
            "0".repeat(32)
        )));
        assert!(Reference::parse("gcr.io/x/y@sha256:abcde").is_err());
    }

    #[test]
    fn tag_and_digest() {
        let r = Reference::parse(&format!("ghcr.io/x/y:v1@{D}")).unwrap();
        assert_eq!(r.tag(), Some("v1"));
        assert_eq!(r.digest(), Some(D));
        assert_eq!(r.identifier(), D);
        assert_eq!(r.name(), format!("ghcr.io/x/y@{D}"));
        let r = Reference::parse("ghcr.io/x/y").unwrap();
        assert_eq!(r.identifier(), "latest");
        assert_eq!(r.name(), "ghcr.io/x/y:latest");
    }

    #[test]
    fn registry_with_port_and_tag() {
        let r = Reference::parse("localhost:5000/foo:1.2").unwrap();
        assert_eq!(r.repository().registry(), "localhost:5000");
        assert_eq!(r.repository().repository(), "foo");
        assert_eq!(r.tag(), Some("1.2"));
        let r = Reference::parse("gcr.io:1234/x/y:0.1").unwrap();
        assert_eq!(r.repository().registry(), "gcr.io:1234");
        assert!(Reference::parse("host:port/x:1").is_err());
        assert!(Reference::parse("ho_st.io/x:1").is_err());
    }

    #[test]
    fn validator() {
        assert!(validate_reference("nginx:1.25").is_ok());
        assert!(validate_reference("ghcr.io/a/b:v1").is_ok());
        assert!(validate_reference("").is_err());
        assert!(validate_reference("a:1").is_ok()); // library/a
        assert!(validate_reference("gcr.io/a:1").is_err()); // one-character repository
        assert!(validate_reference(&format!("ghcr.io/a/b:v1@{D}")).is_ok());
        assert!(validate_reference(&format!("ghcr.io/a/b@sha512:{}", "a".repeat(128))).is_err());
        assert!(Reference::parse(&format!("ghcr.io/a/b@sha512:{}", "a".repeat(128))).is_ok());
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(s in "\\PC{0,80}") {
            let _ = Reference::parse(&s);
            let _ = Repository::parse(&s);
            let _ = validate_reference(&s);
        }

        #[test]
        fn valid_references_round_trip(
            host in "(ghcr\\.io|localhost:5000|[a-z]{1,8}\\.example\\.com(:[0-9]{1,4})?)",
            path in "[a-z0-9]{2,8}(/[a-z0-9]{1,8}){0,2}",
            tag in "[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}",
        ) {
            let input = format!("{host}/{path}:{tag}");
            let r = Reference::parse(&input).unwrap();
            proptest::prop_assert_eq!(r.name(), input.clone());
            proptest::prop_assert_eq!(r.tag(), Some(tag.as_str()));
            let again = Reference::parse(&r.name()).unwrap();
            proptest::prop_assert_eq!(again.repository(), r.repository());
        }
    }
}
