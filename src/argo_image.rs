//! Image references as Argo CD Image Updater reads them: `[alias=]registry/path[:tag][@digest]`.
//!
//! Argo CD Image Updater parses every image it meets (an `image-list` entry, a kustomize image in an
//! Application or an override file) with distribution's normalising parser, and when that refuses
//! the text, with a looser splitter of its own. What comes out decides which entries of an override
//! file are "the same image", what a Helm `image.name` parameter holds and what the commit message
//! calls the image, so the rules are rebuilt here exactly:
//!
//! * the registry is the first `/` component when it contains `.` or `:`, is `localhost`, or has an
//!   upper-case letter; an implicit Docker Hub leaves the registry empty (`nginx`, `acme/web`), an
//!   explicit one keeps it (`docker.io/acme/web`), and `index.docker.io` counts as implicit;
//! * Docker Hub's implicit `library/` is dropped again (`nginx` stays `nginx`, and so does
//!   `docker.io/library/nginx`), but an explicit `library/x` and `library/` on other registries stay;
//! * the loose splitter (used for constraints such as `~1.2`, bad digests, upper case) takes the first
//!   component as a registry only when it contains a `.`, then splits the digest at `@` and the tag at
//!   the last `:` after the last `/`.

use std::fmt;

use image_update_registry::reference::valid_tag;

/// A tag and/or digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageTag {
    pub name: String,
    pub digest: String,
}

impl ImageTag {
    /// Argo's tag equality: by digest when either side has one, else by name.
    #[must_use]
    pub fn equals(&self, other: &ImageTag) -> bool {
        if !self.digest.is_empty() || !other.digest.is_empty() {
            self.digest == other.digest
        } else {
            self.name == other.name
        }
    }
}

impl fmt::Display for ImageTag {
    /// The digest when there is one, else the tag (what Argo's commit message shows).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.digest.is_empty() {
            f.write_str(&self.name)
        } else {
            f.write_str(&self.digest)
        }
    }
}

/// One image, split as Argo CD Image Updater splits it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArgoImage {
    /// The part before `=` (`""` for none).
    pub alias: String,
    /// `""` for an implicit Docker Hub.
    pub registry: String,
    /// The repository path (`acme/web`, `nginx`).
    pub name: String,
    pub tag: Option<ImageTag>,
}

impl ArgoImage {
    /// Parse `[alias=]reference`; never fails (the loose splitter takes anything).
    #[must_use]
    pub fn parse(identifier: &str) -> Self {
        let (alias, reference) = match identifier.split_once('=') {
            Some((a, r)) => (a, r),
            None => ("", identifier),
        };
        if let Some(parsed) = normalized(reference) {
            let mut registry = parsed.domain.clone();
            if registry == "docker.io" && !reference.starts_with("docker.io") {
                registry.clear();
            }
            let mut name = parsed.path;
            if parsed.domain == "docker.io"
                && !reference.starts_with("library/")
                && let Some(rest) = name.strip_prefix("library/")
            {
                name = rest.to_owned();
            }
            let tag = (!parsed.tag.is_empty() || !parsed.digest.is_empty()).then_some(ImageTag {
                name: parsed.tag,
                digest: parsed.digest,
            });
            return Self {
                alias: alias.to_owned(),
                registry,
                name,
                tag,
            };
        }
        loose(identifier)
    }

    /// `registry/name` (`name` alone for an implicit Docker Hub).
    #[must_use]
    pub fn full_name(&self) -> String {
        if self.registry.is_empty()
            || self
                .name
                .strip_prefix(&self.registry)
                .is_some_and(|r| r.starts_with('/'))
        {
            self.name.clone()
        } else {
            format!("{}/{}", self.registry, self.name)
        }
    }

    /// `registry/name:tag@digest`, with whichever of tag and digest there are.
    #[must_use]
    pub fn full_name_with_tag(&self) -> String {
        let mut s = self.full_name();
        if let Some(tag) = &self.tag {
            if !tag.name.is_empty() {
                s.push(':');
                s.push_str(&tag.name);
            }
            if !tag.digest.is_empty() {
                s.push('@');
                s.push_str(&tag.digest);
            }
        }
        s
    }

    /// `tag`, `tag@digest`, or `latest@digest` for a digest alone; `""` without either.
    #[must_use]
    pub fn tag_with_digest(&self) -> String {
        let Some(tag) = &self.tag else {
            return String::new();
        };
        let mut s = tag.name.clone();
        if !tag.digest.is_empty() {
            if s.is_empty() {
                s.push_str("latest");
            }
            s.push('@');
            s.push_str(&tag.digest);
        }
        s
    }

    /// The same image with another tag.
    #[must_use]
    pub fn with_tag(&self, tag: Option<ImageTag>) -> Self {
        Self {
            tag,
            ..self.clone()
        }
    }

    /// Same name and registry, where Docker Hub written `docker.io` and left implicit are equal.
    #[must_use]
    pub fn same_name_and_registry(&self, other: &ArgoImage) -> bool {
        fn hub(r: &str) -> &str {
            if r == "docker.io" { "" } else { r }
        }
        self.name == other.name && hub(&self.registry) == hub(&other.registry)
    }
}

impl fmt::Display for ArgoImage {
    /// `alias=registry/name:tag@digest` (no `alias=` without an alias).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.alias.is_empty() {
            write!(f, "{}=", self.alias)?;
        }
        f.write_str(&self.full_name_with_tag())
    }
}

/// Whether an image name is in long form: its first `/` component contains a `.`.
#[must_use]
pub(crate) fn has_registry_prefix(name: &str) -> bool {
    match name.split_once('/') {
        Some((first, _)) => first.contains('.'),
        None => false,
    }
}

/// A long-form name without its registry component; other names unchanged.
#[must_use]
pub(crate) fn short_form(name: &str) -> &str {
    if has_registry_prefix(name) {
        name.split_once('/').map_or(name, |(_, rest)| rest)
    } else {
        name
    }
}

/// Argo CD's kustomize image match: both images' names up to the first of `=`, `:`, `@` found in
/// `other` (`:` when it has none) are equal. Argo CD cuts at the first `:` even in a registry's
/// port, so that every image of `registry:5000` matches every other and one replaces the next;
/// here a `:` delimiter is looked for after the last `/`, so a port stays in the name.
#[cfg(test)]
#[must_use]
pub(crate) fn kustomize_match(image: &str, other: &str) -> bool {
    let delim = kustomize_delimiter(other);
    kustomize_cut(image, delim) == kustomize_cut(other, delim)
}

/// The delimiter `kustomize_match` cuts both names at: the first of `=`, `:`, `@` found in
/// `other`'s tag part, `:` when it has none.
#[must_use]
pub(crate) fn kustomize_delimiter(other: &str) -> char {
    KUSTOMIZE_DELIMITERS
        .into_iter()
        .find(|d| tag_part(other).contains(*d))
        .unwrap_or(':')
}

/// The delimiters of [`kustomize_delimiter`], in the order they are looked for.
pub(crate) const KUSTOMIZE_DELIMITERS: [char; 3] = ['=', ':', '@'];

/// `image` up to `delim` (for `:`, the first one after the last `/`), as `kustomize_match`
/// compares it.
#[must_use]
pub(crate) fn kustomize_cut(image: &str, delim: char) -> &str {
    if delim == ':' {
        let from = image.rfind('/').map_or(0, |i| i + 1);
        image[from..]
            .find(':')
            .map_or(image, |i| &image[..from + i])
    } else {
        image.split_once(delim).map_or(image, |(a, _)| a)
    }
}

/// `image` from its last `/` on (the part a tag delimiter `:` may be in), with whatever comes
/// before `=` kept (a kustomize name cannot hold `/`).
fn tag_part(image: &str) -> &str {
    match image.split_once('=') {
        Some(_) => image,
        None => image.rfind('/').map_or(image, |i| &image[i..]),
    }
}

struct Normalized {
    domain: String,
    path: String,
    tag: String,
    digest: String,
}

/// distribution's `ParseNormalizedNamed`, or `None` where it fails.
fn normalized(s: &str) -> Option<Normalized> {
    if s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let (mut domain, mut remainder) = match s.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.to_lowercase() != first =>
        {
            (first.to_owned(), rest.to_owned())
        }
        _ => ("docker.io".to_owned(), s.to_owned()),
    };
    if domain == "index.docker.io" {
        "docker.io".clone_into(&mut domain);
    }
    if domain == "docker.io" && !remainder.contains('/') {
        remainder = format!("library/{remainder}");
    }
    if remainder.to_lowercase() != remainder {
        return None;
    }
    let (name, digest) = match remainder.split_once('@') {
        Some((n, d)) => (n, d),
        None => (remainder.as_str(), ""),
    };
    let (path, tag) = match name.split_once(':') {
        Some((p, t)) => (p, t),
        None => (name, ""),
    };
    let ok = valid_domain(&domain)
        && !path.is_empty()
        && path.split('/').all(valid_component)
        && (tag.is_empty() && !name.ends_with(':') || valid_tag(tag))
        && (digest.is_empty() && !remainder.ends_with('@') || valid_digest(digest))
        && domain.len() + 1 + path.len() <= 255;
    ok.then(|| Normalized {
        domain,
        path: path.to_owned(),
        tag: tag.to_owned(),
        digest: digest.to_owned(),
    })
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn valid_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        // A separator run: `.`, `_`, `__` or one or more `-`.
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-')) {
            return false;
        }
    }
    true
}

/// A host (`a.b`, `host-1`, `[::1]`) with an optional `:port`.
fn valid_domain(d: &str) -> bool {
    let port_ok = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = d.strip_prefix('[') {
        let Some((h, p)) = rest.split_once(']') else {
            return false;
        };
        return !h.is_empty()
            && h.bytes().all(|b| b.is_ascii_hexdigit() || b == b':')
            && (p.is_empty() || p.strip_prefix(':').is_some_and(port_ok));
    }
    let (host, port) = match d.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (d, None),
    };
    !host.is_empty()
        && host.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
        })
        && port.is_none_or(port_ok)
}

/// A digest distribution accepts: `sha256`, `sha384` or `sha512` with that many lower-case hex
/// digits.
fn valid_digest(d: &str) -> bool {
    let Some((algo, hex)) = d.split_once(':') else {
        return false;
    };
    let len = match algo {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Argo CD Image Updater's own splitter, for what distribution refuses.
fn loose(identifier: &str) -> ArgoImage {
    let (alias, mut image) = match identifier.split_once('=') {
        Some((a, r)) => (a.to_owned(), r),
        None => (String::new(), identifier),
    };
    let mut registry = String::new();
    if let Some((first, rest)) = image.split_once('/')
        && first.contains('.')
    {
        first.clone_into(&mut registry);
        image = rest;
    }
    let (name, tag) = if let Some((before, digest)) = image.split_once('@') {
        let colon = before.rfind(':');
        let slash = before.rfind('/');
        match colon {
            Some(c) if slash.is_none_or(|s| c > s) => (
                before[..c].to_owned(),
                Some(ImageTag {
                    name: before[c + 1..].to_owned(),
                    digest: digest.to_owned(),
                }),
            ),
            _ => (
                before.to_owned(),
                Some(ImageTag {
                    name: String::new(),
                    digest: digest.to_owned(),
                }),
            ),
        }
    } else {
        match image.split_once(':') {
            Some((n, t)) => {
                let (tag, digest) = match t.split('@').collect::<Vec<_>>()[..] {
                    [a, b] => (a.to_owned(), b.to_owned()),
                    _ => (t.to_owned(), String::new()),
                };
                (n.to_owned(), Some(ImageTag { name: tag, digest }))
            }
            None => (image.to_owned(), None),
        }
    };
    ArgoImage {
        alias,
        registry,
        name,
        tag,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn parts(s: &str) -> (String, String, String, Option<(String, String)>) {
        let i = ArgoImage::parse(s);
        (
            i.alias,
            i.registry,
            i.name,
            i.tag.map(|t| (t.name, t.digest)),
        )
    }

    fn t(name: &str, digest: &str) -> Option<(String, String)> {
        Some((name.to_owned(), digest.to_owned()))
    }

    #[test]
    fn docker_hub_names_lose_only_the_implicit_library() {
        assert_eq!(
            parts("acme/shop-api:2.1"),
            ("".into(), "".into(), "acme/shop-api".into(), t("2.1", ""))
        );
        assert_eq!(parts("redis"), ("".into(), "".into(), "redis".into(), None));
        assert_eq!(
            parts("library/redis"),
            ("".into(), "".into(), "library/redis".into(), None)
        );
        assert_eq!(
            parts("docker.io/library/redis:7"),
            ("".into(), "docker.io".into(), "redis".into(), t("7", ""))
        );
        assert_eq!(parts("index.docker.io/acme/x:1").1, "");
        assert_eq!(
            parts("quay.example.net/library/tools/jq:1.7").2,
            "library/tools/jq"
        );
    }

    #[test]
    fn registries_ports_aliases_and_digests() {
        assert_eq!(
            parts("cache=registry.local:5000/team/cache:9"),
            (
                "cache".into(),
                "registry.local:5000".into(),
                "team/cache".into(),
                t("9", "")
            )
        );
        assert_eq!(parts("db=localhost:5000/pg").1, "localhost:5000");
        assert_eq!(parts("w/x=ghcr.io:443/a/b:1").0, "w/x");
        let digest_only = ArgoImage::parse(&format!("ghcr.io/acme/api@{D}"));
        assert_eq!(
            digest_only.tag,
            Some(ImageTag {
                name: String::new(),
                digest: D.into()
            })
        );
        assert_eq!(digest_only.tag_with_digest(), format!("latest@{D}"));
        assert_eq!(
            digest_only.full_name_with_tag(),
            format!("ghcr.io/acme/api@{D}")
        );
        let both = ArgoImage::parse(&format!("ghcr.io/acme/api:stable@{D}"));
        assert_eq!(both.tag_with_digest(), format!("stable@{D}"));
        assert_eq!(both.to_string(), format!("ghcr.io/acme/api:stable@{D}"));
        assert_eq!(
            ArgoImage::parse("svc=acme/svc:3").to_string(),
            "svc=acme/svc:3"
        );
    }

    #[test]
    fn the_loose_splitter_takes_what_distribution_refuses() {
        // A constraint, a short digest, upper case.
        assert_eq!(
            parts("acme/web:~2.4"),
            ("".into(), "".into(), "acme/web".into(), t("~2.4", ""))
        );
        assert_eq!(
            parts("worker@sha9876"),
            ("".into(), "".into(), "worker".into(), t("", "sha9876"))
        );
        assert_eq!(
            parts("x=Acme.io/App:1"),
            ("x".into(), "Acme.io".into(), "App".into(), t("1", ""))
        );
        // `localhost:5000` has no `.`: not a registry to the loose splitter.
        assert_eq!(parts("localhost:5000/app:^1").2, "localhost");
    }

    #[test]
    fn names_and_forms() {
        let i = ArgoImage::parse("ghcr.io/acme/web:1");
        assert_eq!(i.full_name(), "ghcr.io/acme/web");
        assert!(has_registry_prefix("ghcr.io/acme/web"));
        assert!(!has_registry_prefix("localhost:5000/web"));
        assert!(has_registry_prefix("10.0.0.7/web"));
        assert_eq!(short_form("ghcr.io/acme/web"), "acme/web");
        assert_eq!(short_form("acme/web"), "acme/web");
        let hub = ArgoImage::parse("docker.io/acme/web");
        assert!(hub.same_name_and_registry(&ArgoImage::parse("acme/web:2")));
        assert!(
            !ArgoImage::parse("quay.io/redis")
                .same_name_and_registry(&ArgoImage::parse("docker.io/redis"))
        );
    }

    #[test]
    fn tag_equality_prefers_digests() {
        let tag = |n: &str, d: &str| ImageTag {
            name: n.into(),
            digest: d.into(),
        };
        assert!(tag("a", "sha256:1").equals(&tag("b", "sha256:1")));
        assert!(!tag("a", "sha256:1").equals(&tag("a", "")));
        assert!(!tag("a", "").equals(&tag("a", "sha256:1")));
        assert!(tag("a", "").equals(&tag("a", "")));
        assert_eq!(tag("v2", "sha256:9").to_string(), "sha256:9");
    }

    #[test]
    fn kustomize_matching() {
        assert!(kustomize_match("cart=1", "cart=2"));
        assert!(!kustomize_match("cartoon:2", "cart:2"));
        assert!(kustomize_match("cart", "cart"));
        assert!(kustomize_match("acme/cart:1.0", "acme/cart:2"));
        assert!(kustomize_match(
            &format!("acme/cart@{D}"),
            "acme/cart@sha256:00"
        ));
        assert!(!kustomize_match("acme/cart:1", "acme"));
        // A registry's port is not a tag.
        assert!(!kustomize_match(
            "registry.local:5000/acme/web:1.4.3",
            "registry.local:5000/acme/worker:main-3"
        ));
        assert!(kustomize_match(
            "registry.local:5000/acme/web:1.4.3",
            "registry.local:5000/acme/web:1.5.0"
        ));
        assert!(kustomize_match(
            "registry.local:5000/acme/web",
            "registry.local:5000/acme/web"
        ));
    }
}
