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

pub(crate) mod fields;
pub(crate) mod git;

use crate::diagnostic::Diagnostic;
use crate::policies::image_policy::{FLUX_IMAGE_GROUP, is_flux_kind};
use crate::policies::selector::Selector;
use crate::yaml::{Document, Object};
use fields::Fields;

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
    /// A KubeSphere `ImageUpdater` with `kind: fluxcd` (`crate::kubesphere`).
    KubeSphere,
}

impl AutomationKind {
    /// The kind of the object, as its manifest writes it.
    #[must_use]
    pub fn object_kind(self) -> &'static str {
        match self {
            Self::Flux => "ImageUpdateAutomation",
            Self::KubeSphere => "ImageUpdater",
        }
    }
}

impl Automation {
    /// `ImageUpdateAutomation NAMESPACE/NAME` (or `ImageUpdater ...`).
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "{} {}/{}",
            self.kind.object_kind(),
            self.namespace,
            self.name
        )
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
    let mut fields = Fields::new(Object::root(doc), origin, positions);
    let value = &doc.value;
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !is_flux_kind(value, "ImageUpdateAutomation") {
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        fields.fail(
            "",
            format!("{api_version}/{kind} is not an ImageUpdateAutomation ({FLUX_IMAGE_GROUP}/v1)"),
        );
        return Err(fields.into_errors());
    }
    let version = api_version.rsplit('/').next().unwrap_or("");
    let (namespace, name) = crate::yaml::namespace_name(value);
    let mut a = Automation {
        namespace,
        name,
        ..Automation::default()
    };
    fields.name(a.describe());
    if !VERSIONS.contains(&version) {
        fields.fail(
            "/apiVersion",
            format!(
                "apiVersion {api_version} is not supported: use {FLUX_IMAGE_GROUP}/v1 or v1beta2"
            ),
        );
    }
    if let Some(selector) = fields.get("/spec/policySelector") {
        match Selector::from_value(selector) {
            Ok(s) => a.selector = Some(s),
            Err(e) => fields.fail("/spec/policySelector", format!("spec.policySelector: {e}")),
        }
    }
    if fields.get("/spec/update").is_some() {
        a.update_path = update(&mut fields, "/spec/update", |shown| {
            format!("unsupported update strategy: {shown}")
        });
    }
    match fields.get("/spec/suspend") {
        None => {}
        Some(Value::Bool(b)) => a.suspend = *b,
        Some(_) => fields.fail("/spec/suspend", "spec.suspend is not true or false"),
    }
    if fields.get("/spec/sourceRef").is_some() {
        a.source_ref = Some(source_ref(&mut fields, "/spec/sourceRef", &a.namespace));
    }
    if fields.get("/spec/git").is_some() {
        a.git = Some(git::read(&mut fields, "/spec/git"));
    }
    if fields.failed() {
        Err(fields.into_errors())
    } else {
        Ok(a)
    }
}

/// The update section at `pointer` (`spec.update`, an ImageUpdater's `spec.fluxcd.update`): its
/// path, normalised; a strategy other than `Setters` is an error, worded by `unsupported` from
/// the strategy as written.
pub(crate) fn update(
    fields: &mut Fields<'_>,
    pointer: &str,
    unsupported: impl Fn(&str) -> String,
) -> String {
    let strategy = format!("{pointer}/strategy");
    match fields.get(&strategy) {
        None => {}
        Some(Value::String(s)) if s == "Setters" => {}
        Some(other) => {
            let shown = other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned);
            fields.fail(&strategy, unsupported(&shown));
        }
    }
    fields
        .string(&format!("{pointer}/path"))
        .map(|p| normalise_path(&p))
        .unwrap_or_default()
}

/// The source reference at `pointer` (`spec.sourceRef`, an ImageUpdater's
/// `spec.fluxcd.sourceRef`): its kind defaults to GitRepository, its namespace to the
/// automation's.
pub(crate) fn source_ref(fields: &mut Fields<'_>, pointer: &str, namespace: &str) -> SourceRef {
    let kind = fields
        .string(&format!("{pointer}/kind"))
        .unwrap_or_else(|| "GitRepository".to_owned());
    let name = fields
        .string(&format!("{pointer}/name"))
        .unwrap_or_default();
    let namespace = fields
        .string(&format!("{pointer}/namespace"))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| namespace.to_owned());
    SourceRef {
        kind,
        name,
        namespace,
    }
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
