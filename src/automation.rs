//! Flux `ImageUpdateAutomation` objects (`image.toolkit.fluxcd.io` v1 and
//! v1beta2), read the way Flux's image-automation-controller uses them.
//!
//! Every mode takes one: `update --automation FILE`, the KRM function's
//! functionConfig, and (with its GitRepository) the Job. Its namespace
//! scopes the ImagePolicies, `spec.policySelector` selects among them,
//! `spec.update.path` limits the edits, `spec.suspend` edits nothing, and
//! `spec.git` (checkout, commit, push) is kept for the commit message and
//! the Job.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diagnostic::{Diagnostic, Location};
use crate::policies::image_policy::{FLUX_IMAGE_GROUP, is_flux_kind};
use crate::policies::selector::Selector;
use crate::yaml::Document;

/// The API versions of ImageUpdateAutomation that are read.
pub(crate) const VERSIONS: [&str; 2] = ["v1", "v1beta2"];

/// An ImageUpdateAutomation, as far as image-update uses it.
#[derive(Debug, Clone, Default)]
pub struct Automation {
    pub namespace: String,
    pub name: String,
    /// `spec.policySelector`.
    pub selector: Option<Selector>,
    /// `spec.update.path`, normalised: no `.`/`..` (it cannot climb out of
    /// the repository, as Flux joins it securely), no leading or trailing
    /// `/`; `""` is the whole repository.
    pub update_path: String,
    /// `spec.suspend`.
    pub suspend: bool,
    /// `spec.sourceRef`.
    pub source_ref: Option<SourceRef>,
    /// `spec.git`.
    pub git: Option<GitSpec>,
    /// The kind of object it was read from.
    pub kind: AutomationKind,
}

/// The kind of object an automation was read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AutomationKind {
    /// A Flux `ImageUpdateAutomation`.
    #[default]
    Flux,
    /// A KubeSphere `ImageUpdater` with `kind: fluxcd` ([`crate::kubesphere`]).
    KubeSphere,
}

impl Automation {
    /// `ImageUpdateAutomation NAMESPACE/NAME` (or `ImageUpdater ...`).
    #[must_use]
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            AutomationKind::Flux => "ImageUpdateAutomation",
            AutomationKind::KubeSphere => crate::kubesphere::KIND,
        };
        format!("{kind} {}/{}", self.namespace, self.name)
    }
}

/// `spec.sourceRef`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceRef {
    pub kind: String,
    pub name: String,
    /// Defaults to the automation's namespace.
    pub namespace: String,
}

/// `spec.git`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitSpec {
    /// `checkout.ref`; `None` means the GitRepository's own ref.
    pub checkout: Option<GitRef>,
    pub commit: CommitSpec,
    pub push: Option<PushSpec>,
}

/// A Flux GitRepositoryRef: which commit to check out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitRef {
    pub branch: Option<String>,
    pub tag: Option<String>,
    pub semver: Option<String>,
    pub name: Option<String>,
    pub commit: Option<String>,
}

/// `spec.git.commit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitSpec {
    pub author_name: String,
    pub author_email: String,
    pub signing_key: Option<SigningKeyRef>,
    /// `messageTemplate`; `None` (or empty) means Flux's default message.
    pub message_template: Option<String>,
    /// `messageTemplateValues`.
    pub message_template_values: BTreeMap<String, String>,
}

/// `spec.git.commit.signingKey`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningKeyRef {
    /// The Secret (in the automation's namespace) holding the key.
    pub secret_name: String,
    pub kind: SigningKind,
}

/// How commits are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SigningKind {
    /// OpenPGP: the Secret holds `git.asc` and an optional `passphrase`.
    Gpg,
    /// SSH: the Secret holds `identity` and an optional `password`.
    Ssh,
}

/// `spec.git.push`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PushSpec {
    pub branch: Option<String>,
    pub refspec: Option<String>,
    /// Git push options (`-o`), in key order.
    pub options: BTreeMap<String, String>,
}

/// Read an ImageUpdateAutomation from `doc`; `origin` names its file and
/// `positions` says whether the document's positions are lines of it.
///
/// # Errors
/// Every problem found, each at its field.
pub fn read(doc: &Document, origin: &str, positions: bool) -> Result<Automation, Vec<Diagnostic>> {
    Reader {
        doc,
        origin,
        positions,
        errors: Vec::new(),
    }
    .read()
}

struct Reader<'a> {
    doc: &'a Document,
    origin: &'a str,
    positions: bool,
    errors: Vec<Diagnostic>,
}

impl Reader<'_> {
    fn at(&self, pointer: &str) -> Location {
        Location::new(self.origin, self.doc.position_if(self.positions, pointer))
    }

    fn fail(&mut self, pointer: &str, message: String) {
        let location = self.at(pointer);
        self.errors.push(Diagnostic::error(message).at(location));
    }

    /// A string field, `None` when absent or null; an error otherwise.
    fn string(&mut self, what: &str, pointer: &str) -> Option<String> {
        match self.doc.value.pointer(pointer) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                let field = pointer.trim_start_matches('/').replace('/', ".");
                self.fail(pointer, format!("{what}: {field} is not a string"));
                None
            }
        }
    }

    fn string_map(&mut self, what: &str, pointer: &str) -> BTreeMap<String, String> {
        match self.doc.value.pointer(pointer) {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| {
                    let text = match v {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    };
                    (k.clone(), text)
                })
                .collect(),
            Some(_) => {
                let field = pointer.trim_start_matches('/').replace('/', ".");
                self.fail(pointer, format!("{what}: {field} is not a map of strings"));
                BTreeMap::new()
            }
        }
    }

    fn read(mut self) -> Result<Automation, Vec<Diagnostic>> {
        let value = &self.doc.value;
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !is_flux_kind(value, "ImageUpdateAutomation") {
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
            self.fail(
                "",
                format!(
                    "{api_version}/{kind} is not an ImageUpdateAutomation ({FLUX_IMAGE_GROUP}/v1)"
                ),
            );
            return Err(self.errors);
        }
        let version = api_version.rsplit('/').next().unwrap_or("");
        let (namespace, name) = crate::yaml::namespace_name(value);
        let mut a = Automation {
            namespace,
            name,
            ..Automation::default()
        };
        let what = a.describe();
        if !VERSIONS.contains(&version) {
            self.fail(
                "/apiVersion",
                format!(
                    "{what}: apiVersion {api_version} is not supported: use {FLUX_IMAGE_GROUP}/v1 or v1beta2"
                ),
            );
        }
        if let Some(selector) = value
            .pointer("/spec/policySelector")
            .filter(|v| !v.is_null())
        {
            match Selector::from_value(selector) {
                Ok(s) => a.selector = Some(s),
                Err(e) => self.fail(
                    "/spec/policySelector",
                    format!("{what}: spec.policySelector: {e}"),
                ),
            }
        }
        if let Some(update) = value.pointer("/spec/update").filter(|v| !v.is_null()) {
            match update.get("strategy") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) if s == "Setters" => {}
                Some(other) => {
                    let shown = other
                        .as_str()
                        .map_or_else(|| other.to_string(), str::to_owned);
                    self.fail(
                        "/spec/update/strategy",
                        format!("{what}: unsupported update strategy: {shown}"),
                    );
                }
            }
            if let Some(path) = self.string(&what, "/spec/update/path") {
                a.update_path = normalise_path(&path);
            }
        }
        match value.pointer("/spec/suspend") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => a.suspend = *b,
            Some(_) => self.fail(
                "/spec/suspend",
                format!("{what}: spec.suspend is not true or false"),
            ),
        }
        if value
            .pointer("/spec/sourceRef")
            .is_some_and(|v| !v.is_null())
        {
            let kind = self
                .string(&what, "/spec/sourceRef/kind")
                .unwrap_or_else(|| "GitRepository".to_owned());
            let name = self
                .string(&what, "/spec/sourceRef/name")
                .unwrap_or_default();
            let namespace = self
                .string(&what, "/spec/sourceRef/namespace")
                .filter(|n| !n.is_empty())
                .unwrap_or_else(|| a.namespace.clone());
            a.source_ref = Some(SourceRef {
                kind,
                name,
                namespace,
            });
        }
        if value.pointer("/spec/git").is_some_and(|v| !v.is_null()) {
            a.git = Some(self.git(&what));
        }
        if self.errors.is_empty() {
            Ok(a)
        } else {
            Err(self.errors)
        }
    }

    fn git(&mut self, what: &str) -> GitSpec {
        let checkout = self
            .doc
            .value
            .pointer("/spec/git/checkout/ref")
            .filter(|v| !v.is_null())
            .map(|_| GitRef {
                branch: self.string(what, "/spec/git/checkout/ref/branch"),
                tag: self.string(what, "/spec/git/checkout/ref/tag"),
                semver: self.string(what, "/spec/git/checkout/ref/semver"),
                name: self.string(what, "/spec/git/checkout/ref/name"),
                commit: self.string(what, "/spec/git/checkout/ref/commit"),
            });
        let signing_key = if self
            .doc
            .value
            .pointer("/spec/git/commit/signingKey")
            .is_some_and(|v| !v.is_null())
        {
            let secret_name = self
                .string(what, "/spec/git/commit/signingKey/secretRef/name")
                .unwrap_or_default();
            let kind = match self
                .string(what, "/spec/git/commit/signingKey/type")
                .as_deref()
            {
                None | Some("" | "gpg") => SigningKind::Gpg,
                Some("ssh") => SigningKind::Ssh,
                Some(other) => {
                    self.fail(
                        "/spec/git/commit/signingKey/type",
                        format!("{what}: spec.git.commit.signingKey.type {other:?} is neither gpg nor ssh"),
                    );
                    SigningKind::Gpg
                }
            };
            if secret_name.is_empty() {
                self.fail(
                    "/spec/git/commit/signingKey",
                    format!("{what}: spec.git.commit.signingKey.secretRef.name is missing"),
                );
            }
            Some(SigningKeyRef { secret_name, kind })
        } else {
            None
        };
        let commit = CommitSpec {
            author_name: self
                .string(what, "/spec/git/commit/author/name")
                .unwrap_or_default(),
            author_email: self
                .string(what, "/spec/git/commit/author/email")
                .unwrap_or_default(),
            signing_key,
            message_template: self
                .string(what, "/spec/git/commit/messageTemplate")
                .filter(|t| !t.is_empty()),
            message_template_values: self
                .string_map(what, "/spec/git/commit/messageTemplateValues"),
        };
        let push = self
            .doc
            .value
            .pointer("/spec/git/push")
            .filter(|v| !v.is_null())
            .map(|_| PushSpec {
                branch: self
                    .string(what, "/spec/git/push/branch")
                    .filter(|b| !b.is_empty()),
                refspec: self
                    .string(what, "/spec/git/push/refspec")
                    .filter(|r| !r.is_empty()),
                options: self.string_map(what, "/spec/git/push/options"),
            });
        GitSpec {
            checkout,
            commit,
            push,
        }
    }
}

/// The automation in `file`: a Flux ImageUpdateAutomation, or a KubeSphere
/// ImageUpdater with `kind: fluxcd` ([`crate::kubesphere`]); the file may
/// hold other objects too, such as its GitRepository; exactly one
/// automation is needed.
///
/// # Errors
/// An unreadable file (or one over `limit`), invalid YAML, no or several
/// automations, or an invalid automation; each at its line and column.
pub(crate) fn read_file(
    file: &std::path::Path,
    limit: crate::input::SizeLimit,
) -> Result<Automation, crate::error::Error> {
    use crate::error::Error;
    use crate::kubesphere::is_image_updater;
    let (origin, documents) = crate::input::read_yaml(file, limit)?;
    let found: Vec<&Document> = documents
        .iter()
        .filter(|d| is_flux_kind(&d.value, "ImageUpdateAutomation") || is_image_updater(&d.value))
        .collect();
    match found.as_slice() {
        [one] if is_image_updater(&one.value) => crate::kubesphere::read(one, &origin, true)
            .map(|u| u.automation)
            .map_err(Error::invalid),
        [one] => read(one, &origin, true).map_err(Error::invalid),
        [] => Err(Error::invalid(vec![
            Diagnostic::error(
                "holds no ImageUpdateAutomation (image.toolkit.fluxcd.io/v1) or ImageUpdater (gitops.kubesphere.io/v1alpha1)",
            )
            .at(Location::new(origin, None)),
        ])),
        [_, second, ..] => Err(Error::invalid(vec![
            Diagnostic::error(format!(
                "holds {} automations (ImageUpdateAutomations or ImageUpdaters); give one",
                found.len()
            ))
            .at(Location::new(origin, second.position(""))),
        ])),
    }
}

/// Where the automation in `file` names its source (`spec.sourceRef`, or an
/// ImageUpdater's `spec.fluxcd.sourceRef`), for an error about it; the file
/// alone when it cannot be read again.
#[cfg_attr(not(feature = "job"), allow(dead_code))] // the Job's check
pub(crate) fn source_ref_location(
    file: &std::path::Path,
    limit: crate::input::SizeLimit,
) -> Location {
    let origin = crate::input::name(file);
    let position = crate::input::read_yaml(file, limit)
        .ok()
        .and_then(|(_, documents)| {
            documents.iter().find_map(|d| {
                if is_flux_kind(&d.value, "ImageUpdateAutomation") {
                    d.position("/spec/sourceRef")
                } else if crate::kubesphere::is_image_updater(&d.value) {
                    d.position("/spec/fluxcd/sourceRef")
                } else {
                    None
                }
            })
        });
    Location::new(origin, position)
}

/// A ResourceList item's path annotation, normalised (`./a//b/../c` ->
/// `a/c`), or `None` when it is absolute or climbs out of the package with
/// `..`: such an item cannot be said to lie under any path, and a path limit
/// must not be fooled into editing it (`../apps/x.yaml` is not in `apps`).
#[must_use]
pub(crate) fn normalise_item_path(path: &str) -> Option<String> {
    if path.starts_with('/') || path.starts_with('\\') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// `./a//b/../c/` -> `a/c`; `..` never climbs above the root, as Flux joins
/// `spec.update.path` securely.
#[must_use]
pub(crate) fn normalise_path(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_paths_that_escape_or_are_absolute_are_refused() {
        assert_eq!(
            normalise_item_path("./apps//x.yaml").as_deref(),
            Some("apps/x.yaml")
        );
        assert_eq!(
            normalise_item_path("a/../apps/x.yaml").as_deref(),
            Some("apps/x.yaml")
        );
        assert_eq!(normalise_item_path("../apps/x.yaml"), None);
        assert_eq!(normalise_item_path("apps/../../apps/x.yaml"), None);
        assert_eq!(normalise_item_path("/apps/x.yaml"), None);
    }

    fn read_text(text: &str) -> Result<Automation, Vec<Diagnostic>> {
        let doc = crate::yaml::parse_one(text).unwrap();
        read(&doc, "auto.yaml", true)
    }

    #[test]
    fn reads_a_flux_v1_automation() {
        let a = read_text(
            r"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 30m
  sourceRef: {kind: GitRepository, name: fleet}
  git:
    checkout: {ref: {branch: main}}
    commit:
      author: {name: fluxcdbot, email: flux@example.com}
      signingKey: {secretRef: {name: sign}, type: ssh}
      messageTemplate: 'Update {{ .AutomationObject }}'
      messageTemplateValues: {env: prod}
    push: {branch: auto, options: {merge_request.create: ''}}
  update: {path: ./clusters/prod/, strategy: Setters}
  policySelector: {matchLabels: {team: a}}
",
        )
        .unwrap();
        assert_eq!(a.describe(), "ImageUpdateAutomation flux-system/apps");
        assert_eq!(a.update_path, "clusters/prod");
        assert!(a.selector.is_some());
        let src = a.source_ref.unwrap();
        assert_eq!(
            (src.name.as_str(), src.namespace.as_str()),
            ("fleet", "flux-system")
        );
        let git = a.git.unwrap();
        assert_eq!(git.checkout.unwrap().branch.as_deref(), Some("main"));
        assert_eq!(git.commit.author_email, "flux@example.com");
        assert_eq!(git.commit.signing_key.unwrap().kind, SigningKind::Ssh);
        assert_eq!(
            git.commit.message_template.as_deref(),
            Some("Update {{ .AutomationObject }}")
        );
        assert_eq!(git.commit.message_template_values["env"], "prod");
        let push = git.push.unwrap();
        assert_eq!(push.branch.as_deref(), Some("auto"));
        assert!(push.options.contains_key("merge_request.create"));
    }

    #[test]
    fn errors_name_the_field_and_line() {
        let errors = read_text(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {name: a}\nspec:\n  update: {strategy: Other}\n  suspend: maybe\n",
        )
        .unwrap_err();
        let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "auto.yaml:5:22: error: ImageUpdateAutomation default/a: unsupported update strategy: Other",
                "auto.yaml:6:12: error: ImageUpdateAutomation default/a: spec.suspend is not true or false",
            ]
        );
        let errors = read_text("apiVersion: v1\nkind: ConfigMap\n").unwrap_err();
        assert!(
            errors[0]
                .to_string()
                .contains("is not an ImageUpdateAutomation")
        );
    }

    #[test]
    fn paths() {
        assert_eq!(normalise_path("./a//b/../c/"), "a/c");
        assert_eq!(normalise_path("../../x"), "x");
        assert_eq!(normalise_path(""), "");
    }
}
