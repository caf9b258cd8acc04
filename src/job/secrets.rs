//! Kubernetes Secrets pasted as files (`--secret`, multi-document): the git
//! Secret a GitRepository names and the signing Secret an automation names.
//! Their values are [`Secret`]s: never shown.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use image_update_git::Secret;
use serde_json::Value;

use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::SizeLimit;
use crate::yaml::Document;

fn located(origin: &str, doc: &Document, pointer: &str, message: String) -> Diagnostic {
    Diagnostic::error(message).at(Location::new(origin, doc.position(pointer)))
}

/// The Secrets of the `--secret` files, by namespace and name.
#[derive(Default)]
pub(crate) struct Secrets {
    by_name: BTreeMap<(String, String), SecretObject>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_name.keys()).finish()
    }
}

/// One Secret: where it was read, and its decoded keys.
pub(crate) struct SecretObject {
    /// `FILE:LINE:COL` of the object.
    pub location: Location,
    data: BTreeMap<String, Secret>,
}

impl SecretObject {
    /// The value of `key`, if the Secret has it.
    #[must_use]
    pub(crate) fn get(&self, key: &str) -> Option<&Secret> {
        self.data.get(key)
    }

    /// Whether the Secret has `key`.
    #[must_use]
    pub(crate) fn has(&self, key: &str) -> bool {
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
    pub(crate) fn read(files: &[PathBuf], limit: SizeLimit) -> Result<Self, Error> {
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

    /// The Secret `namespace/name`, if a `--secret` file holds it.
    #[must_use]
    pub(crate) fn find(&self, namespace: &str, name: &str) -> Option<&SecretObject> {
        self.by_name.get(&(namespace.to_owned(), name.to_owned()))
    }

    /// The Secret `namespace/name`, which `who` references; `instead` says what else gives its
    /// values (`, or ...`), for the message when it is missing.
    ///
    /// # Errors
    /// When no `--secret` file holds it.
    pub(crate) fn get(
        &self,
        namespace: &str,
        name: &str,
        who: &str,
        instead: &str,
    ) -> Result<&SecretObject, Error> {
        self.by_name
            .get(&(namespace.to_owned(), name.to_owned()))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{who} references Secret {namespace}/{name}, which no --secret file holds: \
                     give its manifest with --secret FILE{instead}"
                ))
            })
    }
}
