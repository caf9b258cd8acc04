//! KubeSphere `ImageUpdater` objects (`gitops.kubesphere.io/v1alpha1`, the
//! API of the KubeSphere image update design, `deploy/crds/`) read as
//! automations.
//!
//! An ImageUpdater with `kind: fluxcd` is a Flux image automation in one
//! object: `spec.images` and `spec.fluxcd.policy`/`secret` are its image
//! policies (read by the reflector, `reflector::definitions`), and the rest
//! is an ImageUpdateAutomation: `fluxcd.sourceRef` (the GitRepository),
//! `git.checkout.ref`, `git.commit` (author, `messageTemplate`,
//! `messageTemplateValues`), `git.push.branch`, `update.path` and
//! `update.strategy`, and `interval` (the schedule). [`read`] turns it into
//! the [`Automation`] every mode follows. Every field is read or refused: a
//! field image-update cannot honour is an error at its line, never ignored.
//! `kind: argocd` (Argo CD Image Updater's write-back to an Application) is
//! not run yet, and says so.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::automation::{
    Automation, AutomationKind, CommitSpec, GitRef, GitSpec, PushSpec, SourceRef, normalise_path,
};
use crate::diagnostic::{Diagnostic, Location};
use crate::yaml::Document;

/// The group of the ImageUpdater API.
pub(crate) const GROUP: &str = "gitops.kubesphere.io";
/// Its only version.
pub(crate) const API_VERSION: &str = "gitops.kubesphere.io/v1alpha1";
/// Its kind.
pub(crate) const KIND: &str = "ImageUpdater";

/// The `spec` fields of an ImageUpdater read as an automation, dotted
/// (the CRD must declare each: `tests/crd.rs`). `images`, `argocd` and the
/// `fluxcd` fields `secret` and `policy` belong to the reflector.
pub const FIELDS: &[&str] = &[
    "kind",
    "images",
    "argocd",
    "fluxcd",
    "fluxcd.interval",
    "fluxcd.secret",
    "fluxcd.policy",
    "fluxcd.sourceRef",
    "fluxcd.sourceRef.kind",
    "fluxcd.sourceRef.name",
    "fluxcd.sourceRef.namespace",
    "fluxcd.git",
    "fluxcd.git.checkout",
    "fluxcd.git.checkout.ref",
    "fluxcd.git.checkout.ref.branch",
    "fluxcd.git.checkout.ref.tag",
    "fluxcd.git.checkout.ref.semver",
    "fluxcd.git.checkout.ref.name",
    "fluxcd.git.checkout.ref.commit",
    "fluxcd.git.commit",
    "fluxcd.git.commit.author",
    "fluxcd.git.commit.author.email",
    "fluxcd.git.commit.author.name",
    "fluxcd.git.commit.messageTemplate",
    "fluxcd.git.commit.messageTemplateValues",
    "fluxcd.git.push",
    "fluxcd.git.push.branch",
    "fluxcd.update",
    "fluxcd.update.path",
    "fluxcd.update.strategy",
];

/// Fields whose contents are free (maps of the user's keys) or read by the
/// reflector.
const OPAQUE: &[&str] = &[
    "images",
    "argocd",
    "fluxcd.secret",
    "fluxcd.policy",
    "fluxcd.git.commit.messageTemplateValues",
];

/// Whether `value` is a KubeSphere ImageUpdater (any version of the group).
#[must_use]
pub(crate) fn is_image_updater(value: &Value) -> bool {
    value.get("kind").and_then(Value::as_str) == Some(KIND)
        && value
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.split('/').next() == Some(GROUP))
}

/// An ImageUpdater read as an automation.
#[derive(Debug, Clone)]
pub(crate) struct Updater {
    /// What every mode follows (`kind` [`AutomationKind::KubeSphere`]).
    pub automation: Automation,
    /// `spec.fluxcd.interval`.
    pub interval: Interval,
    /// `spec.fluxcd.secret`: the registry credentials' Secret, if any.
    pub registry_secret: Option<String>,
}

/// A Kubernetes duration as Flux's CRDs accept it: `1m`, `1h30m`, `0.5s`
/// (`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`), with the text as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Interval {
    /// As written.
    pub text: String,
    /// Its length.
    pub duration: Duration,
}

impl Interval {
    /// Parse a duration; `None` when it is not one.
    #[must_use]
    pub(crate) fn parse(text: &str) -> Option<Interval> {
        let mut rest = text;
        let mut nanos: u128 = 0;
        if rest.is_empty() {
            return None;
        }
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if digits == 0 {
                return None;
            }
            let (whole, after) = rest.split_at(digits);
            let (fraction, after) = match after.strip_prefix('.') {
                Some(f) => {
                    let n = f.find(|c: char| !c.is_ascii_digit()).unwrap_or(f.len());
                    if n == 0 {
                        return None;
                    }
                    f.split_at(n)
                }
                None => ("", after),
            };
            let (unit, after): (u128, &str) = if let Some(a) = after.strip_prefix("ms") {
                (1_000_000, a)
            } else if let Some(a) = after.strip_prefix('s') {
                (1_000_000_000, a)
            } else if let Some(a) = after.strip_prefix('m') {
                (60_000_000_000, a)
            } else if let Some(a) = after.strip_prefix('h') {
                (3_600_000_000_000, a)
            } else {
                return None;
            };
            let whole: u128 = whole.parse().ok()?;
            let mut part = whole.checked_mul(unit)?;
            if !fraction.is_empty() {
                // At most nanosecond precision, as Go keeps.
                let digits: String = fraction.chars().take(18).collect();
                let scale = 10u128.pow(u32::try_from(digits.len()).ok()?);
                part = part.checked_add(digits.parse::<u128>().ok()?.checked_mul(unit)? / scale)?;
            }
            nanos = nanos.checked_add(part)?;
            rest = after;
        }
        let secs = u64::try_from(nanos / 1_000_000_000).ok()?;
        let sub = u32::try_from(nanos % 1_000_000_000).ok()?;
        Some(Interval {
            text: text.to_owned(),
            duration: Duration::new(secs, sub),
        })
    }
}

/// Read the ImageUpdater of `doc` as an automation; `origin` names its file
/// and `positions` says whether the document's positions are lines of it.
///
/// # Errors
/// Every problem found, each at its field: not an ImageUpdater, another
/// version, `kind: argocd` (not run yet), both engines' sections, a field
/// that cannot be honoured, a wrong type, an interval that does not parse, a
/// source that is not a GitRepository, an update strategy other than
/// `Setters`.
pub(crate) fn read(
    doc: &Document,
    origin: &str,
    positions: bool,
) -> Result<Updater, Vec<Diagnostic>> {
    let mut r = Reader {
        doc,
        origin,
        positions,
        errors: Vec::new(),
        what: String::new(),
    };
    let updater = r.read();
    match updater {
        Some(u) if r.errors.is_empty() => Ok(u),
        _ => {
            r.errors.sort_by_key(|d| {
                d.location
                    .as_ref()
                    .and_then(|l| l.position)
                    .map(|p| (p.line, p.column))
            });
            Err(r.errors)
        }
    }
}

struct Reader<'a> {
    doc: &'a Document,
    origin: &'a str,
    positions: bool,
    errors: Vec<Diagnostic>,
    what: String,
}

impl Reader<'_> {
    fn at(&self, pointer: &str) -> Location {
        Location::new(self.origin, self.doc.position_if(self.positions, pointer))
    }

    fn fail(&mut self, pointer: &str, message: impl std::fmt::Display) {
        let location = self.at(pointer);
        let message = format!("{}: {message}", self.what);
        self.errors.push(Diagnostic::error(message).at(location));
    }

    fn get(&self, pointer: &str) -> Option<&Value> {
        self.doc.value.pointer(pointer).filter(|v| !v.is_null())
    }

    /// A string field; a non-string is an error.
    fn string(&mut self, pointer: &str) -> Option<String> {
        match self.get(pointer) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.fail(pointer, format!("{} is not a string", field_name(pointer)));
                None
            }
        }
    }

    /// A map of strings; anything else is an error.
    fn string_map(&mut self, pointer: &str) -> BTreeMap<String, String> {
        let Some(value) = self.get(pointer) else {
            return BTreeMap::new();
        };
        let Some(map) = value.as_object() else {
            self.fail(
                pointer,
                format!("{} is not a map of strings", field_name(pointer)),
            );
            return BTreeMap::new();
        };
        let mut out = BTreeMap::new();
        let mut bad = Vec::new();
        for (k, v) in map {
            match v {
                Value::String(s) => {
                    out.insert(k.clone(), s.clone());
                }
                _ => bad.push(k.clone()),
            }
        }
        for k in bad {
            let p = format!("{pointer}/{}", k.replace('~', "~0").replace('/', "~1"));
            self.fail(&p, format!("{}.{k} is not a string", field_name(pointer)));
        }
        out
    }

    /// Every field below `pointer` (a mapping) must be one of [`FIELDS`].
    fn known_fields(&mut self, pointer: &str, dotted: &str) {
        let Some(value) = self.get(pointer) else {
            return;
        };
        let Some(map) = value.as_object() else {
            self.fail(pointer, format!("{} is not a mapping", field_name(pointer)));
            return;
        };
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            let child = if dotted.is_empty() {
                key.clone()
            } else {
                format!("{dotted}.{key}")
            };
            let p = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
            if !FIELDS.contains(&child.as_str()) {
                self.fail(
                    &p,
                    format!(
                        "spec.{child} is not a field of the ImageUpdater API that image-update can honour (deploy/crds/)"
                    ),
                );
            } else if !OPAQUE.contains(&child.as_str())
                && self.get(&p).is_some_and(Value::is_object)
            {
                self.known_fields(&p, &child);
            }
        }
    }

    fn read(&mut self) -> Option<Updater> {
        let value = &self.doc.value;
        let api_version = value
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let (namespace, name) = crate::yaml::namespace_name(value);
        self.what = format!("{KIND} {namespace}/{name}");
        if !is_image_updater(value) {
            let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
            self.fail(
                "",
                format!("{api_version}/{kind} is not an {KIND} ({API_VERSION})"),
            );
            return None;
        }
        if api_version != API_VERSION {
            self.fail(
                "/apiVersion",
                format!("apiVersion {api_version} is not supported: use {API_VERSION}"),
            );
        }
        if self.get("/spec").is_none() {
            self.fail("", "spec is missing");
            return None;
        }
        self.known_fields("/spec", "");
        let kind = self.string("/spec/kind");
        let has_argo = self.get("/spec/argocd").is_some();
        let has_flux = self.get("/spec/fluxcd").is_some();
        if has_argo && has_flux {
            self.fail(
                "/spec/argocd",
                "has both spec.argocd and spec.fluxcd: an ImageUpdater uses one engine, the one spec.kind names",
            );
            return None;
        }
        match kind.as_deref() {
            Some("fluxcd") => {}
            Some("argocd") | None => {
                self.fail(
                    if kind.is_some() { "/spec/kind" } else { "/spec" },
                    "kind argocd (the default) updates an Argo CD Application (spec.argocd.app, write: built-in or git), which is not an automation: its write-back is done by `update --fetch` over the repository and by `job --url REPOSITORY --fetch` (the ImageUpdater and its Application in the repository, or in --policies files; docs/argocd.md); an automation needs kind fluxcd with spec.fluxcd (interval, sourceRef, git, update)",
                );
                return None;
            }
            Some(other) => {
                self.fail(
                    "/spec/kind",
                    format!("spec.kind {other:?} is neither argocd nor fluxcd"),
                );
                return None;
            }
        }
        if !has_flux {
            self.fail(
                "/spec",
                "kind fluxcd needs spec.fluxcd (interval, sourceRef, git, update)",
            );
            return None;
        }
        let interval = match self.string("/spec/fluxcd/interval") {
            Some(text) => match Interval::parse(&text) {
                Some(i) => Some(i),
                None => {
                    self.fail(
                        "/spec/fluxcd/interval",
                        format!("spec.fluxcd.interval {text:?} is not a duration such as 1m, 30m or 1h30m (units ms, s, m, h)"),
                    );
                    None
                }
            },
            None => {
                self.fail(
                    "/spec/fluxcd",
                    "spec.fluxcd.interval is missing (how often to run, e.g. 5m)",
                );
                None
            }
        };
        let source_ref = self.source_ref(&namespace);
        let git = self.get("/spec/fluxcd/git").is_some().then(|| self.git());
        let mut update_path = String::new();
        if self.get("/spec/fluxcd/update").is_some() {
            if let Some(strategy) = self.string("/spec/fluxcd/update/strategy")
                && strategy != "Setters"
            {
                self.fail(
                    "/spec/fluxcd/update/strategy",
                    format!("unsupported update strategy {strategy:?}: only Setters"),
                );
            }
            if let Some(path) = self.string("/spec/fluxcd/update/path") {
                update_path = normalise_path(&path);
            }
        }
        let registry_secret = self.string("/spec/fluxcd/secret").filter(|s| !s.is_empty());
        let automation = Automation {
            namespace,
            name,
            selector: None,
            update_path,
            suspend: false,
            source_ref,
            git,
            kind: AutomationKind::KubeSphere,
        };
        Some(Updater {
            automation,
            interval: interval?,
            registry_secret,
        })
    }

    fn source_ref(&mut self, namespace: &str) -> Option<SourceRef> {
        if self.get("/spec/fluxcd/sourceRef").is_none() {
            self.fail(
                "/spec/fluxcd",
                "spec.fluxcd.sourceRef is missing: name the GitRepository to update",
            );
            return None;
        }
        let kind = self
            .string("/spec/fluxcd/sourceRef/kind")
            .unwrap_or_else(|| "GitRepository".to_owned());
        if kind != "GitRepository" {
            self.fail(
                "/spec/fluxcd/sourceRef/kind",
                format!("spec.fluxcd.sourceRef.kind {kind:?} is not GitRepository"),
            );
        }
        let name = self
            .string("/spec/fluxcd/sourceRef/name")
            .unwrap_or_default();
        if name.is_empty() {
            self.fail(
                "/spec/fluxcd/sourceRef",
                "spec.fluxcd.sourceRef.name is missing",
            );
        }
        let namespace = self
            .string("/spec/fluxcd/sourceRef/namespace")
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| namespace.to_owned());
        Some(SourceRef {
            kind,
            name,
            namespace,
        })
    }

    fn git(&mut self) -> GitSpec {
        let checkout = self
            .get("/spec/fluxcd/git/checkout/ref")
            .is_some()
            .then(|| GitRef {
                branch: self.string("/spec/fluxcd/git/checkout/ref/branch"),
                tag: self.string("/spec/fluxcd/git/checkout/ref/tag"),
                semver: self.string("/spec/fluxcd/git/checkout/ref/semver"),
                name: self.string("/spec/fluxcd/git/checkout/ref/name"),
                commit: self.string("/spec/fluxcd/git/checkout/ref/commit"),
            });
        let commit = CommitSpec {
            author_name: self
                .string("/spec/fluxcd/git/commit/author/name")
                .unwrap_or_default(),
            author_email: self
                .string("/spec/fluxcd/git/commit/author/email")
                .unwrap_or_default(),
            signing_key: None,
            message_template: self
                .string("/spec/fluxcd/git/commit/messageTemplate")
                .filter(|t| !t.is_empty()),
            message_template_values: self
                .string_map("/spec/fluxcd/git/commit/messageTemplateValues"),
        };
        let push = self
            .get("/spec/fluxcd/git/push")
            .is_some()
            .then(|| PushSpec {
                branch: self
                    .string("/spec/fluxcd/git/push/branch")
                    .filter(|b| !b.is_empty()),
                refspec: None,
                options: BTreeMap::new(),
            });
        GitSpec {
            checkout,
            commit,
            push,
        }
    }
}

/// `/spec/fluxcd/interval` -> `spec.fluxcd.interval`.
fn field_name(pointer: &str) -> String {
    pointer
        .trim_start_matches('/')
        .split('/')
        .map(|p| p.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 002's sample with `kind: fluxcd`.
    const SEED: &str = include_str!("../testdata/crd/valid/seed-002-fluxcd.yaml");

    fn read_text(text: &str) -> Result<Updater, Vec<String>> {
        let doc = crate::yaml::parse_one(text).unwrap();
        read(&doc, "updater.yaml", true).map_err(|e| e.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn seed_002_is_an_automation() {
        let u = read_text(SEED).unwrap();
        let a = &u.automation;
        assert_eq!(a.describe(), "ImageUpdater default/demo");
        assert_eq!(a.update_path, "clusters/my-cluster");
        assert_eq!(
            a.source_ref,
            Some(SourceRef {
                kind: "GitRepository".into(),
                name: "podinfo".into(),
                namespace: "default".into()
            })
        );
        let git = a.git.as_ref().unwrap();
        assert_eq!(
            git.checkout.as_ref().unwrap().branch.as_deref(),
            Some("main")
        );
        assert_eq!(git.commit.author_name, "fluxcdbot");
        assert_eq!(
            git.commit.author_email,
            "fluxcdbot@users.noreply.github.com"
        );
        assert_eq!(
            git.commit.message_template.as_deref(),
            Some("{{range .Updated.Images}}{{println .}}{{end}}")
        );
        assert_eq!(git.push.as_ref().unwrap().branch.as_deref(), Some("main"));
        assert_eq!(u.interval.duration, Duration::from_secs(60));
        assert_eq!(u.registry_secret.as_deref(), Some("docker-hub-secret"));
    }

    #[test]
    fn intervals() {
        let d = |s: &str| Interval::parse(s).map(|i| i.duration);
        assert_eq!(d("1m"), Some(Duration::from_secs(60)));
        assert_eq!(d("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(d("0.5s"), Some(Duration::from_millis(500)));
        assert_eq!(d("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(d("250ms"), Some(Duration::from_millis(250)));
        assert_eq!(d("10m10s"), Some(Duration::from_secs(610)));
        for bad in [
            "", "1", "m", "1 minute", "5d", "1.m", ".5s", "-1m", "1mm", "1m ",
        ] {
            assert_eq!(d(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn errors_are_at_their_line() {
        let errors = read_text(
            "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: u, namespace: apps}\nspec:\n  kind: fluxcd\n  images: [nginx]\n  fluxcd:\n    interval: 1 minute\n    sourceRef: {kind: Bucket, name: b}\n    suspend: true\n    update: {strategy: Regex}\n",
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "updater.yaml:8:15: error: ImageUpdater apps/u: spec.fluxcd.interval \"1 minute\" is not a duration such as 1m, 30m or 1h30m (units ms, s, m, h)",
                "updater.yaml:9:23: error: ImageUpdater apps/u: spec.fluxcd.sourceRef.kind \"Bucket\" is not GitRepository",
                "updater.yaml:10:14: error: ImageUpdater apps/u: spec.fluxcd.suspend is not a field of the ImageUpdater API that image-update can honour (deploy/crds/)",
                "updater.yaml:11:24: error: ImageUpdater apps/u: unsupported update strategy \"Regex\": only Setters",
            ]
        );
    }

    #[test]
    fn both_sections_and_argocd_are_refused() {
        let both = SEED.replace(
            "  kind: fluxcd\n",
            "  kind: fluxcd\n  argocd: {write: git}\n",
        );
        let errors = read_text(&both).unwrap_err();
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].starts_with("updater.yaml:13:11: error: ImageUpdater default/demo: has both spec.argocd and spec.fluxcd"),
            "{}",
            errors[0]
        );
        let argo = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: a}\nspec:\n  kind: argocd\n  images: [nginx]\n  argocd: {app: {name: demo}}\n";
        let errors = read_text(argo).unwrap_err();
        assert!(
            errors[0].starts_with("updater.yaml:5:9: error: ImageUpdater default/a: kind argocd (the default) updates an Argo CD Application"),
            "{}",
            errors[0]
        );
        assert!(errors[0].contains("needs kind fluxcd with spec.fluxcd"));
        let no_source = SEED.replace(
            "    sourceRef:\n      kind: GitRepository\n      name: podinfo\n",
            "",
        );
        let errors = read_text(&no_source).unwrap_err();
        assert!(
            errors[0].contains("spec.fluxcd.sourceRef is missing"),
            "{errors:?}"
        );
        let errors = read_text("apiVersion: v1\nkind: ConfigMap\n").unwrap_err();
        assert!(errors[0].contains("is not an ImageUpdater"), "{errors:?}");
    }
}
