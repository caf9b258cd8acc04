//! The ResultV2 change report: a view of the run's
//! [`crate::outcome::Outcome`], built by [`Report::of`] from its
//! changes, its warnings and the policies it observed, and rendered as JSON
//! or YAML ([`Report::render`]). The same report is the Action's `changes`
//! output, the Job status's `changes` and the commit message's data.
//!
//! # Schema (ResultV2)
//!
//! `schema/report.schema.json` is the JSON Schema (2020-12) of this
//! report, in both renderings; `tests/report_schema.rs` validates every
//! report the test suite produces against it.
//!
//! ```json
//! {
//!   "version": "image-update.dev/v1",
//!   "fileChanges": {
//!     "apps/podinfo.yaml": [
//!       {"object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "podinfo", "namespace": "default"},
//!        "changes": [{"oldValue": "…:6.5.0", "newValue": "…:6.7.0", "setter": "flux-system:podinfo",
//!                     "line": 21, "column": 16, "fieldPath": "spec.template.spec.containers[0].image"}]}
//!     ]
//!   },
//!   "observedPolicies": {"flux-system:podinfo": {"name": "…", "tag": "6.7.0", "digest": ""}},
//!   "warnings": [{"file": "apps/other.yaml", "line": 3, "column": 12, "message": "…"}],
//!   "supplyChain": {"flux-system:podinfo": {"image": "…:6.7.0@sha256:…",
//!     "signedBy": [{"kind": "key", "name": "cosign.pub", "fingerprint": "sha256:…"}],
//!     "released": {"at": "2026-01-01T00:00:00Z", "source": "…", "builderControlled": false},
//!     "skipped": [{"tag": "6.8.0", "kind": "unsigned", "reason": "no signature found"}]}}
//! }
//! ```
//!
//! * `version`: [`REPORT_VERSION`], the format of this report; it changes
//!   only when a field changes meaning or goes away (new fields may appear
//!   without a new version). Flux's ResultV2 has no such field.
//! * `fileChanges`: files in path order (relative to the update path, `/`
//!   separators); in each file, objects in order of first appearance (one
//!   entry per distinct object), changes in document order. Object fields
//!   absent in the source are `""`.
//! * `observedPolicies`: every policy in scope that has a latest image.
//! * `warnings`: every warning of the run (what stderr, kpt results and
//!   annotations show), sorted by file, line and column. `file` is relative
//!   to the update path for a file of the tree; other inputs (policy files,
//!   an automation) are named as given. `line`/`column` are 1-based
//!   (`column` counts characters) and left out when the warning has no
//!   position (a whole file, a ResourceList item), `file` when it concerns
//!   no file; `hint` says what to do, where there is something.
//! * `supplyChain` (optional, absent when empty): for each fetched policy
//!   the supply-chain gate checked, keyed like `observedPolicies`: the
//!   image chosen (`NAME:TAG@DIGEST`, the digest that was verified), who
//!   signed it (`signedBy`: keys by name and fingerprint, keyless
//!   identities by subject, issuer and transparency-log entry), when it
//!   was released and by whose clock (`released`), the alias it follows
//!   (`alias`, `aliasDigest`), and the better candidates passed over, with
//!   why (`skipped`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::diagnostic::Diagnostic;
use crate::object::ObjectId;
use crate::outcome::Outcome;
use crate::policies::ImageRef;

/// One changed field, as the report writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReportChange {
    pub old_value: String,
    pub new_value: String,
    pub setter: String,
    pub line: usize,
    pub column: usize,
    pub field_path: String,
    /// Where the old and new images were built from, links, signer and
    /// release time (when an output asked for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<image_update_template::provenance::Provenance>,
}

/// The changes of one object in one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectChanges {
    pub object: ObjectId,
    pub changes: Vec<ReportChange>,
}

/// A warning with its place, when it has one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReportWarning {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl ReportWarning {
    /// The report's entry for a warning: the file as the report names it
    /// (its path in the tree, else as given), its position, its message with
    /// causes, its hint.
    #[must_use]
    pub fn of(d: &Diagnostic) -> Self {
        let at = d.location.as_ref();
        Self {
            file: at
                .map(|at| at.tree_path.clone().unwrap_or_else(|| at.path.clone()))
                .filter(|f| !f.is_empty()),
            line: at.and_then(|at| at.position).map(|p| p.line),
            column: at.and_then(|at| at.position).map(|p| p.column),
            message: d.full_message(),
            hint: d.hint.clone(),
        }
    }
}

/// The report format written in [`Report::version`].
pub const REPORT_VERSION: &str = "image-update.dev/v1";

/// The whole report of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Report {
    /// The report format, [`REPORT_VERSION`] (a saved report without one
    /// reads as this version).
    pub version: String,
    pub file_changes: BTreeMap<String, Vec<ObjectChanges>>,
    pub observed_policies: BTreeMap<String, ImageRef>,
    pub warnings: Vec<ReportWarning>,
    /// What the supply-chain gate found, by policy (`NAMESPACE:NAME`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub supply_chain: BTreeMap<String, SupplyChainEntry>,
}

impl Default for Report {
    fn default() -> Self {
        Self {
            version: REPORT_VERSION.to_owned(),
            file_changes: BTreeMap::new(),
            observed_policies: BTreeMap::new(),
            warnings: Vec::new(),
            supply_chain: BTreeMap::new(),
        }
    }
}

/// What the supply-chain gate found out about one policy's chosen image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SupplyChainEntry {
    /// `NAME:TAG@DIGEST`: the image written, with the digest checked.
    pub image: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signed_by: Vec<Signer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released: Option<Released>,
    /// The alias followed (`latest`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub alias: String,
    /// The alias's digest, which the chosen tag shares.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub alias_digest: String,
    /// Better candidates passed over, best first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedCandidate>,
}

/// One signer of a chosen image: a key, or a keyless identity.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Signer {
    /// `key` or `identity`.
    pub kind: String,
    /// The key's name (its file name, or where it was given).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `sha256:` of the key's SubjectPublicKeyInfo.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fingerprint: String,
    /// The certificate identity (SAN).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// The OIDC issuer.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub issuer: String,
    /// The transparency-log entry's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_index: Option<i64>,
    /// When the log integrated the entry (RFC 3339).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub integrated_time: String,
}

impl Signer {
    /// The report's entry for `who`.
    #[must_use]
    pub fn of(who: &image_update_verify::SignedBy) -> Self {
        match who {
            image_update_verify::SignedBy::Key { name, fingerprint } => Self {
                kind: "key".to_owned(),
                name: name.clone(),
                fingerprint: fingerprint.clone(),
                ..Self::default()
            },
            image_update_verify::SignedBy::Identity {
                subject,
                issuer,
                log_index,
                integrated_time,
                ..
            } => Self {
                kind: "identity".to_owned(),
                subject: subject.clone(),
                issuer: issuer.clone(),
                log_index: Some(*log_index),
                integrated_time: integrated_time.clone(),
                ..Self::default()
            },
        }
    }
}

/// When a chosen image was released, and by whose clock.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Released {
    /// RFC 3339.
    pub at: String,
    /// What said so (`Docker Hub tag_last_pushed`, `builder-controlled
    /// image config created`).
    pub source: String,
    /// Set by whoever built the image, not by the registry.
    pub builder_controlled: bool,
}

/// A better candidate the gate passed over.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SkippedCandidate {
    pub tag: String,
    /// `unsigned`, `too-young` or `no-trusted-time`.
    pub kind: String,
    pub reason: String,
}

impl SupplyChainEntry {
    /// The entry of a fetched policy, when the gate checked it.
    #[must_use]
    pub fn of(resolved: &crate::reflector::Resolved) -> Option<Self> {
        let g = resolved.gate.as_ref()?;
        Some(Self {
            image: resolved.latest.to_string(),
            signed_by: g.signed_by.iter().map(Signer::of).collect(),
            released: g.released.as_ref().map(|r| Released {
                at: r.at.clone(),
                source: r.source.clone(),
                builder_controlled: r.builder_controlled,
            }),
            alias: g
                .alias
                .as_ref()
                .map(|a| a.alias.clone())
                .unwrap_or_default(),
            alias_digest: g
                .alias
                .as_ref()
                .map(|a| a.digest.clone())
                .unwrap_or_default(),
            skipped: g
                .skipped
                .iter()
                .map(|k| SkippedCandidate {
                    tag: k.tag.clone(),
                    kind: k.kind.to_owned(),
                    reason: k.reason.clone(),
                })
                .collect(),
        })
    }
}

/// Output formats of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Yaml,
}

impl Outcome {
    /// The ResultV2 report of the run, a view of this outcome.
    #[must_use]
    pub(crate) fn report(&self) -> Report {
        Report::of(self)
    }
}

impl Report {
    /// The report of a run: its changes by file (in path order) and object
    /// (in order of first appearance; an object seen twice in one file is
    /// merged, as Flux does), the policies it observed, and its warnings,
    /// sorted.
    #[must_use]
    pub fn of(outcome: &Outcome) -> Self {
        let mut report = Self {
            observed_policies: outcome
                .observed_policies
                .iter()
                .map(|(key, image)| (key.to_string(), image.clone()))
                .collect(),
            ..Self::default()
        };
        for c in &outcome.changes {
            let objects = report.file_changes.entry(c.file.clone()).or_default();
            let index = match objects.iter().position(|o| o.object == c.object) {
                Some(i) => i,
                None => {
                    objects.push(ObjectChanges {
                        object: c.object.clone(),
                        changes: Vec::new(),
                    });
                    objects.len() - 1
                }
            };
            objects[index].changes.push(ReportChange {
                old_value: c.old_value.clone(),
                new_value: c.new_value.clone(),
                setter: c.setter.clone(),
                line: c.position.line,
                column: c.position.column,
                field_path: c.field_path.clone(),
                provenance: outcome
                    .provenance
                    .get(&(c.old_value.clone(), c.new_value.clone(), c.setter.clone()))
                    .cloned(),
            });
        }
        report.warnings = outcome.warnings().map(ReportWarning::of).collect();
        report.warnings.sort();
        report.supply_chain = outcome
            .fetched
            .iter()
            .chain(&outcome.carried)
            .filter_map(|r| Some((r.key.to_string(), SupplyChainEntry::of(r)?)))
            .collect();
        report
    }

    /// Render as JSON (pretty, newline-terminated; the characters YAML does not allow raw and
    /// those a terminal would act on escaped, [`crate::escape::json`], so that every reader of
    /// reports reads it back and a terminal shows it safely) or YAML.
    ///
    /// # Errors
    /// Only if serialisation fails, which plain data does not.
    pub fn render(&self, format: Format) -> Result<String, String> {
        match format {
            Format::Json => serde_json::to_string_pretty(self)
                .map(|s| {
                    let mut s = crate::escape::json(s);
                    s.push('\n');
                    s
                })
                .map_err(|e| e.to_string()),
            Format::Yaml => serde_saphyr::to_string(self).map_err(|e| e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fuzzing find: a value holding U+FFFF was written raw, and the YAML reader that reads
    /// saved reports refused the file.
    #[test]
    fn characters_yaml_refuses_raw_are_escaped_in_json() {
        let value = "a\u{ffff}b\u{7f}c\u{85}d\u{9f}e\u{fffe}é\u{202e}\u{1b}";
        let report = Report {
            warnings: vec![ReportWarning {
                file: None,
                line: None,
                column: None,
                message: value.to_owned(),
                hint: None,
            }],
            ..Report::default()
        };
        let json = report.render(Format::Json).unwrap();
        assert!(
            json.contains(r#""a\uffffb\u007fc\u0085d\u009fe\ufffeé\u202e\u001b""#),
            "{json}"
        );
        let back: Report =
            serde_json::from_value(crate::yaml::parse_one(&json).unwrap().value).unwrap();
        assert_eq!(back, report);
        let plain: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(plain, report);
    }
}
