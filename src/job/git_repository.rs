//! A Flux GitRepository pasted as a file (`--git-repository`): its URL,
//! checkout ref and Secret name, so a Flux user runs the same automation as
//! a Job with no controller.
//!
//! Only what the Job can honour is accepted: a field it cannot (another
//! `provider`, a proxy, verification, submodules, a sparse checkout...) is
//! an error at its line, never silently ignored.

use std::path::Path;

use serde_json::Value;

use super::checkout::{CheckoutTarget, from_git_ref};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::SizeLimit;
use crate::yaml::Document;

/// A Flux GitRepository (source.toolkit.fluxcd.io v1 or v1beta2), as far
/// as the Job uses it.
#[derive(Debug, Clone)]
pub(crate) struct GitRepository {
    /// `metadata.namespace` (default `default`): where its Secret lives.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.url`.
    pub url: String,
    /// `spec.ref`, when given.
    pub reference: Option<CheckoutTarget>,
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
pub(crate) fn read(file: &Path, limit: SizeLimit) -> Result<GitRepository, Error> {
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
        reference: reference.as_ref().and_then(from_git_ref),
        secret_name: string_at(doc, "/spec/secretRef/name"),
    })
}
