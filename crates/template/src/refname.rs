//! go-containerregistry's `name` package (v0.20.3, the version Flux's image-automation-controller
//! v0.41 pinned), as a template sees it through Flux v0.x's `update.ImageRef`.
//!
//! Flux v0.x parsed each policy's latest image with `name.ParseReference(image, name.WeakValidation)`
//! and handed templates the result: a `name.Tag` or a `name.Digest`, with their fields (all
//! unexported but the embedded `Repository` and `Registry`) and their method sets. The parsing rules
//! and every method's result are rebuilt here from the library's documented behaviour, so that
//! `{{ .Name }}`, `{{ .Context.Scope "pull" }}` or `{{ printf "%#v" . }}` print what Go printed.
//! The registry crate has its own, stricter parser for talking to registries; this one must agree
//! with Go byte for byte on everything a template can observe, including the values it keeps as
//! written (`docker.io` is rewritten, `library/` is implied but not stored).

use std::rc::Rc;

use crate::value::{FieldDef, Method, MethodFn, NamedType, Type, Underlying, Value};

/// Docker Hub's registry name, used when a reference names none.
pub const DEFAULT_REGISTRY: &str = "index.docker.io";
const DEFAULT_REGISTRY_ALIAS: &str = "docker.io";
const DEFAULT_TAG: &str = "latest";
const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";
const TAG_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-.ABCDEFGHIJKLMNOPQRSTUVWXYZ";

/// A parsed reference: what `name.Tag` or `name.Digest` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// `Registry.registry`: the registry as written, `docker.io` rewritten, Docker Hub when absent.
    pub registry: String,
    /// `Repository.repository`: the repository as written (without an implied `library/`).
    pub repository: String,
    /// The tag (`latest` when none was written) or the digest.
    pub identifier: Identifier,
    /// The text parsed.
    pub original: String,
}

/// The type-specific part of a reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identifier {
    /// A `name.Tag`.
    Tag(String),
    /// A `name.Digest` (`sha256:` and 64 hex digits).
    Digest(String),
}

/// Go's `name.ParseReference(s, name.WeakValidation)`: a tag reference if `s` parses as one, else a
/// digest reference; the error text is go-containerregistry's.
pub fn parse_reference(s: &str) -> Result<Reference, String> {
    if let Ok(t) = new_tag(s) {
        return Ok(t);
    }
    if let Ok(d) = new_digest(s) {
        return Ok(d);
    }
    Err(format!("could not parse reference: {s}"))
}

fn check_element(
    what: &str,
    element: &str,
    allowed: &str,
    min: usize,
    max: usize,
) -> Result<(), String> {
    let n = element.chars().count();
    if n < min || n > max {
        return Err(format!(
            "{what} must be between {min} and {max} characters in length: {element}"
        ));
    }
    if element.chars().any(|c| !allowed.contains(c)) {
        return Err(format!(
            "{what} can only contain the characters `{allowed}`: {element}"
        ));
    }
    Ok(())
}

/// Go's `url.Parse("//" + name)` succeeding with `Host == name`.
fn valid_authority(name: &str) -> bool {
    let host_byte_ok =
        |b: u8| b >= 0x80 || b.is_ascii_alphanumeric() || b"!$&'()*+,;=:[]<>\"-_.~".contains(&b);
    if !name.bytes().all(host_byte_ok) {
        return false;
    }
    let valid_port = |p: &str| {
        p.is_empty() || (p.starts_with(':') && p[1..].bytes().all(|b| b.is_ascii_digit()))
    };
    if name.starts_with('[') {
        match name.rfind(']') {
            Some(i) => valid_port(&name[i + 1..]),
            None => false,
        }
    } else {
        match name.rfind(':') {
            Some(i) => valid_port(&name[i..]),
            None => true,
        }
    }
}

fn new_registry(name: &str) -> Result<String, String> {
    if !valid_authority(name) {
        return Err(format!(
            "registries must be valid RFC 3986 URI authorities: {name}"
        ));
    }
    Ok(match name {
        "" | DEFAULT_REGISTRY_ALIAS => DEFAULT_REGISTRY.to_owned(),
        other => other.to_owned(),
    })
}

fn new_repository(name: &str) -> Result<(String, String), String> {
    if name.is_empty() {
        return Err("a repository name must be specified".to_owned());
    }
    let (registry, repo) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) => (first, rest),
        _ => ("", name),
    };
    check_element("repository", repo, REPOSITORY_CHARS, 2, 255)?;
    Ok((new_registry(registry)?, repo.to_owned()))
}

fn new_tag(name: &str) -> Result<Reference, String> {
    let (base, tag) = match name.rsplit_once(':') {
        Some((base, tag)) if !tag.contains('/') => (base, tag),
        _ => (name, ""),
    };
    if !tag.is_empty() {
        check_element("tag", tag, TAG_CHARS, 1, 128)?;
    }
    let (registry, repository) = new_repository(base)?;
    Ok(Reference {
        registry,
        repository,
        identifier: Identifier::Tag(if tag.is_empty() { DEFAULT_TAG } else { tag }.to_owned()),
        original: name.to_owned(),
    })
}

fn new_digest(name: &str) -> Result<Reference, String> {
    let parts: Vec<&str> = name.split('@').collect();
    let [base, dig] = parts.as_slice() else {
        return Err(format!(
            "a digest must contain exactly one '@' separator (e.g. registry/repository@digest) saw: {name}"
        ));
    };
    let Some(hex) = dig.strip_prefix("sha256:") else {
        return Err(format!("unsupported digest algorithm: {dig}"));
    };
    if hex.len() != 64
        || !hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err("invalid checksum digest format".to_owned());
    }
    // A tag before the digest is dropped: the base becomes the tag's fully qualified repository.
    let qualified;
    let base = match new_tag(base) {
        Ok(t) => {
            qualified = repository_name(&t.registry, &t.repository);
            qualified.as_str()
        }
        Err(_) => base,
    };
    let (registry, repository) = new_repository(base)?;
    Ok(Reference {
        registry,
        repository,
        identifier: Identifier::Digest((*dig).to_owned()),
        original: name.to_owned(),
    })
}

/// `Repository.RepositoryStr()`: `library/` is implied for a one-component Docker Hub repository.
pub fn repository_str(registry: &str, repository: &str) -> String {
    if !repository.contains('/') && registry == DEFAULT_REGISTRY {
        format!("library/{repository}")
    } else {
        repository.to_owned()
    }
}

/// `Repository.Name()`.
pub fn repository_name(registry: &str, repository: &str) -> String {
    let repo = repository_str(registry, repository);
    if registry.is_empty() {
        repo
    } else {
        format!("{registry}/{repo}")
    }
}

#[cfg(test)]
impl Reference {
    /// `Identifier()`: the tag or the digest.
    pub fn identifier(&self) -> &str {
        match &self.identifier {
            Identifier::Tag(t) | Identifier::Digest(t) => t,
        }
    }

    /// `Name()`: the fully qualified reference.
    pub fn name(&self) -> String {
        let sep = match self.identifier {
            Identifier::Tag(_) => ':',
            Identifier::Digest(_) => '@',
        };
        format!(
            "{}{sep}{}",
            repository_name(&self.registry, &self.repository),
            self.identifier()
        )
    }

    /// `Context().RepositoryStr()`.
    pub fn repository_str(&self) -> String {
        repository_str(&self.registry, &self.repository)
    }
}

/// `Registry.Scheme()`: `http` for private, local and loopback registries, else `https`.
fn scheme(registry: &str) -> &'static str {
    let host = registry.split(':').next().unwrap_or_default();
    let rfc1918 = host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| {
        let o = ip.octets();
        o[0] == 10 || (o[0] == 172 && (16..32).contains(&o[1])) || (o[0] == 192 && o[1] == 168)
    });
    if rfc1918
        || registry.starts_with("localhost:")
        || is_local(registry)
        || registry.contains("127.0.0.1")
        || registry.contains("::1")
    {
        "http"
    } else {
        "https"
    }
}

/// Go's `.*\.local(?:host)?(?::\d{1,5})?$`.
fn is_local(registry: &str) -> bool {
    let without_port = match registry.rsplit_once(':') {
        Some((h, p)) if (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => registry,
    };
    without_port.ends_with(".local") || without_port.ends_with(".localhost")
}

/// Go's `path.Join`: the non-empty elements joined by `/` and cleaned; `""` when all are empty.
fn path_join(parts: &[&str]) -> String {
    let joined: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
    if joined.is_empty() {
        return String::new();
    }
    path_clean(&joined.join("/"))
}

/// Go's `path.Clean`.
fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_owned();
    }
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

/// The Go types of the `name` package, and the values built from a [`Reference`].
pub struct NameTypes {
    /// `name.Registry`
    pub registry: Rc<NamedType>,
    /// `name.Repository`
    pub repository: Rc<NamedType>,
    /// `name.Tag`
    pub tag: Rc<NamedType>,
    /// `name.Digest`
    pub digest: Rc<NamedType>,
    /// `name.Reference` (an interface)
    pub reference: Rc<NamedType>,
}

thread_local! {
    static TYPES: Rc<NameTypes> = Rc::new(NameTypes::new());
}

/// The `name` package's types (built once per thread, so that methods returning new values share
/// them).
pub fn types() -> Rc<NameTypes> {
    TYPES.with(Rc::clone)
}

fn text(v: &Value, i: usize) -> String {
    v.field(i).as_str().unwrap_or_default().to_owned()
}

/// The `Registry` inside a `Registry`, `Repository`, `Tag` or `Digest` value.
fn registry_of(v: &Value) -> Value {
    match v {
        Value::Struct(s) if s.ty.name == "name.Registry" => v.clone(),
        Value::Struct(s) if s.ty.name == "name.Repository" => v.field(0),
        Value::Struct(_) => v.field(0).field(0),
        _ => Value::Invalid,
    }
}

/// The `Repository` inside a `Repository`, `Tag` or `Digest` value.
fn repository_of(v: &Value) -> Value {
    match v {
        Value::Struct(s) if s.ty.name == "name.Repository" => v.clone(),
        _ => v.field(0),
    }
}

fn registry_str_of(v: &Value) -> String {
    text(&registry_of(v), 1)
}

fn repository_str_of(v: &Value) -> String {
    let repo = repository_of(v);
    repository_str(&registry_str_of(&repo), &text(&repo, 1))
}

fn repository_name_of(v: &Value) -> String {
    let repo = repository_of(v);
    repository_name(&registry_str_of(&repo), &text(&repo, 1))
}

fn arg_str(args: &[Value], i: usize) -> String {
    args.get(i)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn m_registry_str(v: &Value, _: &[Value]) -> Value {
    Value::string(registry_str_of(v))
}

fn m_registry_scope(_: &Value, _: &[Value]) -> Value {
    Value::str("registry:catalog:*")
}

fn m_scheme(v: &Value, _: &[Value]) -> Value {
    Value::str(scheme(&registry_str_of(v)))
}

fn m_repo(v: &Value, args: &[Value]) -> Value {
    let parts: Vec<&str> = args
        .iter()
        .map(|a| a.as_str().unwrap_or_default())
        .collect();
    let t = types();
    t.repository_value(registry_of(v), &path_join(&parts))
}

fn m_repository_str(v: &Value, _: &[Value]) -> Value {
    Value::string(repository_str_of(v))
}

fn m_repository_name(v: &Value, _: &[Value]) -> Value {
    Value::string(repository_name_of(v))
}

fn m_repository_scope(v: &Value, args: &[Value]) -> Value {
    Value::string(format!(
        "repository:{}:{}",
        repository_str_of(v),
        arg_str(args, 0)
    ))
}

/// `Repository.Tag(identifier)`: a tag whose original text is its fully qualified name.
fn m_new_tag(v: &Value, args: &[Value]) -> Value {
    let id = arg_str(args, 0);
    let original = format!("{}:{id}", repository_name_of(v));
    types().reference_value(repository_of(v), Identifier::Tag(id), &original)
}

/// `Repository.Digest(identifier)`.
fn m_new_digest(v: &Value, args: &[Value]) -> Value {
    let id = arg_str(args, 0);
    let original = format!("{}@{id}", repository_name_of(v));
    types().reference_value(repository_of(v), Identifier::Digest(id), &original)
}

fn m_context(v: &Value, _: &[Value]) -> Value {
    repository_of(v)
}

fn m_ident(v: &Value, _: &[Value]) -> Value {
    v.field(1)
}

fn m_ref_name(v: &Value, _: &[Value]) -> Value {
    let sep = match v {
        Value::Struct(s) if s.ty.name == "name.Digest" => '@',
        _ => ':',
    };
    Value::string(format!("{}{sep}{}", repository_name_of(v), text(v, 1)))
}

fn m_original(v: &Value, _: &[Value]) -> Value {
    v.field(2)
}

/// `Digest.MarshalJSON()`: its original text as a JSON string.
fn m_marshal_json(v: &Value, _: &[Value]) -> Value {
    let json = serde_json::Value::String(text(v, 2)).to_string();
    Value::slice(
        Type::slice_of(Type::Uint8),
        json.bytes()
            .map(|b| Value::Int(i64::from(b), Type::Uint8))
            .collect(),
    )
}

fn registry_string(v: &Value) -> String {
    registry_str_of(v)
}

fn repository_string(v: &Value) -> String {
    repository_name_of(v)
}

fn original_string(v: &Value) -> String {
    text(v, 2)
}

impl NameTypes {
    fn new() -> NameTypes {
        // Method sets, promoted methods included (a method declared on the outer type hides the
        // promoted one of the same name). A method's result type only names a type, so results of
        // types not built yet are named by a stub of the same name.
        let s = || Type::String;
        let stub = |name: &str| {
            Type::Named(Rc::new(NamedType::new(
                name,
                Underlying::Struct(Vec::new()),
            )))
        };
        let registry_methods = |name_fn: MethodFn, scope_fn: MethodFn| {
            vec![
                Method::niladic("Name", s(), name_fn),
                Method::niladic("RegistryStr", s(), m_registry_str),
                Method::with_params("Repo", vec![s()], true, stub("name.Repository"), m_repo),
                Method::niladic("Scheme", s(), m_scheme),
                Method::with_params("Scope", vec![s()], false, s(), scope_fn),
                Method::niladic("String", s(), name_fn),
            ]
        };
        let repository_methods = |name_fn: MethodFn, string_fn: MethodFn| {
            let mut m = registry_methods(name_fn, m_repository_scope);
            m.retain(|m| m.name != "String");
            m.push(Method::niladic("String", s(), string_fn));
            m.push(Method::with_params(
                "Digest",
                vec![s()],
                false,
                stub("name.Digest"),
                m_new_digest,
            ));
            m.push(Method::niladic("RepositoryStr", s(), m_repository_str));
            m.push(Method::with_params(
                "Tag",
                vec![s()],
                false,
                stub("name.Tag"),
                m_new_tag,
            ));
            m
        };

        let mut registry = NamedType::new(
            "name.Registry",
            Underlying::Struct(vec![
                FieldDef::new("insecure", Type::Bool),
                FieldDef::new("registry", Type::String),
            ]),
        );
        registry.stringer = Some(registry_string);
        registry.methods = sorted(registry_methods(m_registry_str, m_registry_scope));
        let registry = Rc::new(registry);

        let mut repository = NamedType::new(
            "name.Repository",
            Underlying::Struct(vec![
                FieldDef::embedded(&registry),
                FieldDef::new("repository", Type::String),
            ]),
        );
        repository.stringer = Some(repository_string);
        repository.methods = sorted(repository_methods(m_repository_name, m_repository_name));
        let repository = Rc::new(repository);
        let repo_t = Type::Named(repository.clone());

        let reference = |name: &str, id_field: &str, id_method: &str| {
            let mut t = NamedType::new(
                name,
                Underlying::Struct(vec![
                    FieldDef::embedded(&repository),
                    FieldDef::new(id_field, Type::String),
                    FieldDef::new("original", Type::String),
                ]),
            );
            t.stringer = Some(original_string);
            let mut m = repository_methods(m_ref_name, m_original);
            m.push(Method::niladic("Context", repo_t.clone(), m_context));
            m.push(Method::niladic("Identifier", s(), m_ident));
            m.push(Method::niladic(id_method, s(), m_ident));
            t.methods = m;
            t
        };
        let tag = reference("name.Tag", "tag", "TagStr");
        let mut digest = reference("name.Digest", "digest", "DigestStr");
        digest.methods.push(Method::niladic(
            "MarshalJSON",
            Type::slice_of(Type::Uint8),
            m_marshal_json,
        ));
        let (mut tag, mut digest) = (tag, digest);
        tag.methods = sorted(std::mem::take(&mut tag.methods));
        digest.methods = sorted(std::mem::take(&mut digest.methods));
        NameTypes {
            registry,
            repository,
            tag: Rc::new(tag),
            digest: Rc::new(digest),
            reference: Rc::new(NamedType::new("name.Reference", Underlying::Interface)),
        }
    }

    /// A `name.Registry` value.
    pub fn registry_value(&self, registry: &str) -> Value {
        Value::structure(
            &self.registry,
            vec![Value::Bool(false), Value::str(registry)],
            Vec::new(),
        )
    }

    /// A `name.Repository` value.
    pub fn repository_value(&self, registry: Value, repository: &str) -> Value {
        Value::structure(
            &self.repository,
            vec![registry, Value::str(repository)],
            Vec::new(),
        )
    }

    fn reference_value(&self, repository: Value, id: Identifier, original: &str) -> Value {
        let (ty, id) = match id {
            Identifier::Tag(t) => (&self.tag, t),
            Identifier::Digest(d) => (&self.digest, d),
        };
        Value::structure(
            ty,
            vec![repository, Value::string(id), Value::str(original)],
            Vec::new(),
        )
    }

    /// The `name.Tag` or `name.Digest` value of a parsed reference.
    pub fn value(&self, r: &Reference) -> Value {
        let repository = self.repository_value(self.registry_value(&r.registry), &r.repository);
        self.reference_value(repository, r.identifier.clone(), &r.original)
    }
}

fn sorted(mut methods: Vec<Method>) -> Vec<Method> {
    methods.sort_by(|a, b| a.name.cmp(&b.name));
    methods
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:6745aaad46d795c9836632e1fb62f24b7e7f4c843144da8e47a5465c411a14be";

    #[test]
    fn seed_004_example() {
        let r = parse_reference("helloworld:v1.0.1").unwrap();
        assert_eq!(r.original, "helloworld:v1.0.1");
        assert_eq!(r.identifier(), "v1.0.1");
        assert_eq!(r.repository_str(), "library/helloworld");
        assert_eq!(r.registry, "index.docker.io");
        assert_eq!(r.name(), "index.docker.io/library/helloworld:v1.0.1");
        // `library/` is implied, not stored.
        assert_eq!(r.repository, "helloworld");
    }

    #[test]
    fn registries_and_defaults() {
        let r = parse_reference("docker.io/nginx").unwrap();
        assert_eq!(
            (r.registry.as_str(), r.identifier(), r.name().as_str()),
            (
                "index.docker.io",
                "latest",
                "index.docker.io/library/nginx:latest"
            )
        );
        // A first component without `.` or `:` is part of the repository, even `localhost`.
        let r = parse_reference("localhost/app:1").unwrap();
        assert_eq!(r.name(), "index.docker.io/localhost/app:1");
        let r = parse_reference("localhost:5000/app:1").unwrap();
        assert_eq!(r.name(), "localhost:5000/app:1");
        assert_eq!(scheme(&r.registry), "http");
        let r = parse_reference("GHCR.io/org/app:v1").unwrap();
        assert_eq!(r.registry, "GHCR.io");
        assert_eq!(scheme("ghcr.io"), "https");
        assert_eq!(scheme("10.1.2.3:5000"), "http");
        assert_eq!(scheme("172.20.0.1"), "http");
        assert_eq!(scheme("172.32.0.1"), "https");
        assert_eq!(scheme("registry.local:5000"), "http");
        assert_eq!(scheme("[::1]:5000"), "http");
        // An empty tag after `:` is the default tag; the original keeps the colon.
        let r = parse_reference("nginx:").unwrap();
        assert_eq!((r.identifier(), r.original.as_str()), ("latest", "nginx:"));
    }

    #[test]
    fn digests_drop_the_tag_and_qualify_the_repository() {
        let r = parse_reference(&format!("nginx:1.25@{D}")).unwrap();
        assert_eq!(r.identifier, Identifier::Digest(D.to_owned()));
        assert_eq!(r.repository, "library/nginx");
        assert_eq!(r.name(), format!("index.docker.io/library/nginx@{D}"));
        assert_eq!(r.original, format!("nginx:1.25@{D}"));
        let r = parse_reference(&format!("ghcr.io/a/b@{D}")).unwrap();
        assert_eq!(r.repository, "a/b");
    }

    #[test]
    fn errors_are_go_containerregistry_s() {
        assert_eq!(
            parse_reference("Nginx:1").unwrap_err(),
            "could not parse reference: Nginx:1"
        );
        assert!(
            new_tag("a:1")
                .unwrap_err()
                .contains("repository must be between 2 and 255")
        );
        assert!(
            new_tag("nginx:bad+tag")
                .unwrap_err()
                .starts_with("tag can only contain the characters")
        );
        assert!(new_tag("host:port/xy:1").unwrap_err().contains("RFC 3986"));
        assert!(parse_reference("ghcr.io/a/b@sha256:abc").is_err());
        assert!(parse_reference("ghcr.io/a/b@sha512:abc").is_err());
        assert!(parse_reference("").is_err());
    }

    #[test]
    fn paths_join_as_go_does() {
        assert_eq!(path_join(&[]), "");
        assert_eq!(path_join(&["", ""]), "");
        assert_eq!(path_join(&["a", "b"]), "a/b");
        assert_eq!(path_join(&["a/", "/b/", "../c"]), "a/c");
        assert_eq!(path_join(&["..", "x"]), "../x");
        assert_eq!(path_join(&["/", ".."]), "/");
        assert_eq!(path_join(&["."]), ".");
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(s in "\\PC{0,60}") {
            let _ = parse_reference(&s);
        }
    }
}
