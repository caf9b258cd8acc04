//! Flux objects pasted as files: a GitRepository (`--git-repository`) and
//! the Secrets it and the ImageUpdateAutomation reference (`--secret`), so
//! a Flux user runs the same automation as a Job with no controller.
//!
//! Only what the Job can honour is accepted: a field it cannot (another
//! `provider`, a proxy, a CA, verification, submodules...) is an error at
//! its line, never silently ignored.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use image_update_git::Secret;
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::SizeLimit;
use crate::yaml::Document;

/// `spec.ref` of a GitRepository, or an automation's `spec.git.checkout.ref`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceRef {
    /// A branch, tag, commit or ref name (or the default branch).
    Checkout(image_update_git::CheckoutRef),
    /// The tag with the highest version in this Masterminds range, chosen
    /// from the remote's tags when the Job runs.
    Semver(String),
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceRef::Checkout(reference) => reference.fmt(f),
            SourceRef::Semver(range) => write!(f, "the newest tag in semver range `{range}`"),
        }
    }
}

impl SourceRef {
    /// Whether a checkout of this ref sits on a branch a push can go back
    /// to (a tag, a semver tag, a bare commit or another ref need a push
    /// branch).
    #[must_use]
    pub fn has_branch(&self) -> bool {
        use image_update_git::CheckoutRef;
        match self {
            SourceRef::Checkout(reference) => matches!(
                reference.normalized(),
                CheckoutRef::DefaultBranch
                    | CheckoutRef::Branch(_)
                    | CheckoutRef::Commit {
                        branch: Some(_),
                        ..
                    }
            ),
            SourceRef::Semver(_) => false,
        }
    }
}

/// A Flux GitRepository (source.toolkit.fluxcd.io v1 or v1beta2), as far
/// as the Job uses it.
#[derive(Debug, Clone)]
pub struct GitRepository {
    /// `metadata.namespace` (default `default`): where its Secret lives.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.url`.
    pub url: String,
    /// `spec.ref`, when given.
    pub reference: Option<SourceRef>,
    /// `spec.secretRef.name`.
    pub secret_name: Option<String>,
}

/// The `spec` fields of a GitRepository the Job honours (or that do not
/// concern a single clone: `interval`, `timeout`, `suspend`, `ignore`).
const SPEC_FIELDS: [&str; 7] = [
    "url",
    "ref",
    "secretRef",
    "interval",
    "timeout",
    "suspend",
    "ignore",
];

/// What a Flux `GitRepositoryRef` checks out (Flux's precedence: commit,
/// name, semver, tag, branch); `None` when it names nothing.
#[must_use]
pub fn source_ref(git_ref: &crate::automation::GitRef) -> Option<SourceRef> {
    use image_update_git::CheckoutRef;
    Some(if let Some(id) = &git_ref.commit {
        SourceRef::Checkout(CheckoutRef::Commit {
            id: id.clone(),
            branch: git_ref.branch.clone(),
        })
    } else if let Some(name) = &git_ref.name {
        SourceRef::Checkout(CheckoutRef::Name(name.clone()))
    } else if let Some(range) = &git_ref.semver {
        SourceRef::Semver(range.clone())
    } else if let Some(tag) = &git_ref.tag {
        SourceRef::Checkout(CheckoutRef::Tag(tag.clone()))
    } else if let Some(branch) = &git_ref.branch {
        SourceRef::Checkout(CheckoutRef::Branch(branch.clone()))
    } else {
        return None;
    })
}

fn located(origin: &str, doc: &Document, pointer: &str, message: String) -> Diagnostic {
    Diagnostic::error(message).at(Location::new(origin, doc.position(pointer)))
}

fn string_at(doc: &Document, pointer: &str) -> Option<String> {
    doc.value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The one GitRepository in `file`.
///
/// # Errors
/// An unreadable file, invalid YAML, no or several GitRepositories, a
/// missing `spec.url`, and every field the Job cannot honour, at its line.
pub fn read_git_repository(file: &Path, limit: SizeLimit) -> Result<GitRepository, Error> {
    let (origin, documents) = crate::input::read_yaml(file, limit)?;
    let found: Vec<&Document> = documents
        .iter()
        .filter(|d| crate::yaml::is_kind(&d.value, "source.toolkit.fluxcd.io", "GitRepository"))
        .collect();
    let doc = match found.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::invalid(vec![
                Diagnostic::error("holds no GitRepository (source.toolkit.fluxcd.io)")
                    .at(Location::new(origin, None)),
            ]));
        }
        [_, second, ..] => {
            return Err(Error::invalid(vec![located(
                &origin,
                second,
                "",
                format!("holds {} GitRepositories; give one", found.len()),
            )]));
        }
    };
    let mut errors = Vec::new();
    if let Some(Value::Object(spec)) = doc.value.get("spec") {
        for field in spec.keys() {
            if SPEC_FIELDS.contains(&field.as_str()) {
                continue;
            }
            let pointer = format!("/spec/{field}");
            let value = &spec[field];
            let harmless = match field.as_str() {
                "provider" => value.as_str().is_some_and(|p| p == "generic"),
                "recurseSubmodules" => value == &Value::Bool(false),
                _ => false,
            };
            if !harmless {
                errors.push(located(
                    &origin,
                    doc,
                    &pointer,
                    format!("spec.{field} is not supported by `image-update job`"),
                ));
            }
        }
    }
    let url = string_at(doc, "/spec/url");
    if url.is_none() {
        errors.push(located(
            &origin,
            doc,
            "/spec",
            "spec.url is missing".to_owned(),
        ));
    }
    let reference = doc.value.pointer("/spec/ref").map(|r| {
        let field = |name: &str| r.get(name).and_then(Value::as_str).map(str::to_owned);
        crate::automation::GitRef {
            branch: field("branch"),
            tag: field("tag"),
            semver: field("semver"),
            name: field("name"),
            commit: field("commit"),
        }
    });
    if !errors.is_empty() {
        return Err(Error::invalid(errors));
    }
    let (namespace, name) = crate::yaml::namespace_name(&doc.value);
    Ok(GitRepository {
        namespace: if namespace.is_empty() {
            "default".to_owned()
        } else {
            namespace
        },
        name,
        url: url.unwrap_or_default(),
        reference: reference.as_ref().and_then(source_ref),
        secret_name: string_at(doc, "/spec/secretRef/name"),
    })
}

/// The Secrets of the `--secret` files, by namespace and name.
#[derive(Default)]
pub struct Secrets {
    by_name: BTreeMap<(String, String), SecretObject>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_name.keys()).finish()
    }
}

/// One Secret: where it was read, and its decoded keys.
pub struct SecretObject {
    /// `FILE:LINE:COL` of the object.
    pub location: Location,
    data: BTreeMap<String, Secret>,
}

impl SecretObject {
    /// The value of `key`, if the Secret has it.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Secret> {
        self.data.get(key)
    }

    /// Whether the Secret has `key`.
    #[must_use]
    pub fn has(&self, key: &str) -> bool {
        self.data.contains_key(key)
    }
}

impl Secrets {
    /// Reads every v1 Secret in `files` (multi-document; `data` is base64,
    /// `stringData` plain and wins over `data`).
    ///
    /// # Errors
    /// Unreadable files, invalid YAML, undecodable values, a Secret given
    /// twice.
    pub fn read(files: &[PathBuf], limit: SizeLimit) -> Result<Self, Error> {
        let mut secrets = Self::default();
        let mut errors = Vec::new();
        for file in files {
            let (origin, documents) = crate::input::read_yaml(file, limit)?;
            for doc in &documents {
                let value = &doc.value;
                if value.get("kind").and_then(Value::as_str) != Some("Secret")
                    || value.get("apiVersion").and_then(Value::as_str) != Some("v1")
                {
                    continue;
                }
                let (namespace, name) = crate::yaml::namespace_name(value);
                let namespace = if namespace.is_empty() {
                    "default".to_owned()
                } else {
                    namespace
                };
                let mut data = BTreeMap::new();
                if let Some(Value::Object(map)) = value.get("data") {
                    for (key, encoded) in map {
                        let compact: String = encoded
                            .as_str()
                            .unwrap_or_default()
                            .split_whitespace()
                            .collect();
                        match base64::engine::general_purpose::STANDARD
                            .decode(compact)
                            .ok()
                            .and_then(|bytes| String::from_utf8(bytes).ok())
                        {
                            Some(text) => {
                                data.insert(key.clone(), Secret::new(text));
                            }
                            None => errors.push(located(
                                &origin,
                                doc,
                                &format!("/data/{key}"),
                                format!("data[{key}] is not base64-encoded UTF-8 text"),
                            )),
                        }
                    }
                }
                if let Some(Value::Object(map)) = value.get("stringData") {
                    for (key, text) in map {
                        data.insert(key.clone(), Secret::new(text.as_str().unwrap_or_default()));
                    }
                }
                let location = Location::new(origin.clone(), doc.position(""));
                let key = (namespace.clone(), name.clone());
                if secrets.by_name.contains_key(&key) {
                    errors.push(located(
                        &origin,
                        doc,
                        "",
                        format!("Secret {namespace}/{name} is given twice"),
                    ));
                }
                secrets.by_name.insert(key, SecretObject { location, data });
            }
        }
        if errors.is_empty() {
            Ok(secrets)
        } else {
            Err(Error::invalid(errors))
        }
    }

    /// The Secret `namespace/name`, which `who` references.
    ///
    /// # Errors
    /// When no `--secret` file holds it.
    pub fn get(&self, namespace: &str, name: &str, who: &str) -> Result<&SecretObject, Error> {
        self.by_name
            .get(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{who} references Secret {namespace}/{name}, which no --secret file holds"
                ))
            })
    }
}

/// Keys of Flux's git Secret the Job cannot use (a TLS client certificate).
pub const UNSUPPORTED_GIT_KEYS: [&str; 2] = ["tls.crt", "tls.key"];

/// Fails when `secret` (a GitRepository's) has keys the Job cannot use.
///
/// # Errors
/// Naming the Secret, its place and the key.
pub fn check_git_secret(secret: &SecretObject, name: &str) -> Result<(), Error> {
    let unsupported: Vec<Diagnostic> = UNSUPPORTED_GIT_KEYS
        .iter()
        .filter(|key| secret.has(key))
        .map(|key| {
            Diagnostic::error(format!(
                "Secret {name}: key {key} is not supported by `image-update job`"
            ))
            .at(secret.location.clone())
        })
        .collect();
    if unsupported.is_empty() {
        Ok(())
    } else {
        Err(Error::invalid(unsupported))
    }
}
