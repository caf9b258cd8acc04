//! Commit messages: a Flux `spec.git.commit.messageTemplate` rendered over
//! a run's report, byte for byte as Flux renders it.
//!
//! The engine (Go `text/template` with Sprig's hermetic functions) and
//! Flux's `TemplateData` types live in the `image-update-template` crate;
//! this module builds that data from a [`Report`] and the automation, and is
//! the one place every front end renders a message through. Besides Flux's
//! data, a template can range over `.SupplyChain`: what the supply-chain
//! gate found about each image the commit writes (who signed it, when it was
//! released, the alias, the candidates passed over), from the report's
//! `supplyChain`.

use std::collections::BTreeMap;

use image_update_template::flux::{self, MessageError, ObjectId, TemplateData, UpdateChange};
use image_update_template::{ImageFindings, Signer, Skipped};

use crate::automation::Automation;
use crate::diagnostic::Diagnostic;
use crate::render::report::Report;

/// What a commit message is made of, besides the changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MessageConfig {
    /// The template; `None` (or empty) is Flux's default message.
    pub template: Option<String>,
    /// `.Values` (`messageTemplateValues`).
    pub values: BTreeMap<String, String>,
    /// `.AutomationObject`: namespace and name; empty when there is none.
    pub automation_object: Option<(String, String)>,
}

impl MessageConfig {
    /// The message an automation asks for: its template, its values, and
    /// itself as `.AutomationObject`.
    #[must_use]
    pub fn from_automation(automation: &Automation) -> Self {
        let commit = automation.git.as_ref().map(|g| &g.commit);
        Self {
            template: commit.and_then(|c| c.message_template.clone()),
            values: commit
                .map(|c| c.message_template_values.clone())
                .unwrap_or_default(),
            automation_object: Some((automation.namespace.clone(), automation.name.clone())),
        }
    }

    /// Check that the template parses (Flux finds out only at the first
    /// update; image-update says so before writing anything).
    ///
    /// # Errors
    /// Flux's parse error message.
    pub fn check(&self) -> Result<(), MessageError> {
        match self.template.as_deref() {
            None | Some("") => Ok(()),
            Some(text) => image_update_template::Template::parse(flux::TEMPLATE_NAME, text)
                .map(drop)
                .map_err(MessageError::Parse),
        }
    }

    /// The template's data for `report`.
    #[must_use]
    pub fn data(&self, report: &Report) -> TemplateData {
        let (namespace, name) = self
            .automation_object
            .as_ref()
            .map_or(("", ""), |(ns, n)| (ns.as_str(), n.as_str()));
        let mut data = TemplateData::new(namespace, name);
        for (file, objects) in &report.file_changes {
            for o in objects {
                data.add_change(
                    file,
                    ObjectId {
                        api_version: o.object.api_version.as_str().into(),
                        kind: o.object.kind.as_str().into(),
                        name: o.object.name.as_str().into(),
                        namespace: o.object.namespace.as_str().into(),
                    },
                    o.changes.iter().map(|c| UpdateChange {
                        old_value: c.old_value.as_str().into(),
                        new_value: c.new_value.as_str().into(),
                        setter: c.setter.as_str().into(),
                        provenance: c.provenance.clone().map(std::rc::Rc::new),
                    }),
                );
            }
        }
        for (k, v) in &self.values {
            data.set_value(k, v);
        }
        for (key, image) in &report.observed_policies {
            data.set_policy(key, &image.name, &image.tag, &image.digest);
        }
        data.supply_chain = report
            .supply_chain
            .iter()
            .map(|(policy, e)| ImageFindings {
                policy: policy.clone(),
                image: e.image.clone(),
                signed_by: e
                    .signed_by
                    .iter()
                    .map(|s| Signer {
                        kind: s.kind.clone(),
                        name: s.name.clone(),
                        fingerprint: s.fingerprint.clone(),
                        subject: s.subject.clone(),
                        issuer: s.issuer.clone(),
                        log_index: s.log_index.unwrap_or_default(),
                        integrated_time: s.integrated_time.clone(),
                    })
                    .collect(),
                released: e
                    .released
                    .as_ref()
                    .map(|r| r.at.clone())
                    .unwrap_or_default(),
                release_source: e
                    .released
                    .as_ref()
                    .map(|r| r.source.clone())
                    .unwrap_or_default(),
                builder_controlled: e.released.as_ref().is_some_and(|r| r.builder_controlled),
                alias: e.alias.clone(),
                alias_digest: e.alias_digest.clone(),
                skipped: e
                    .skipped
                    .iter()
                    .map(|k| Skipped {
                        tag: k.tag.clone(),
                        kind: k.kind.clone(),
                        reason: k.reason.clone(),
                    })
                    .collect(),
            })
            .collect();
        data
    }

    /// Warnings about the template: each use of a field Flux v1 removed
    /// (`.Updated`, `.Changed.ImageResult`), which renders here as in Flux
    /// v0.x. A template that does not parse has none (rendering says why).
    #[must_use]
    pub(crate) fn warnings(&self) -> Vec<Diagnostic> {
        match self.template.as_deref() {
            None | Some("") => Vec::new(),
            Some(text) => image_update_template::Template::parse(flux::TEMPLATE_NAME, text)
                .map(|t| {
                    flux::removed_field_uses(&t)
                        .iter()
                        .map(|u| Diagnostic::warning(u.to_string()))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Render the message for `report` (a template using `.Updated` renders
    /// as in Flux v0.x; [`Self::warnings`] says so).
    ///
    /// # Errors
    /// Flux's parse or execution messages; with `.Updated`, a latest image
    /// that does not parse.
    pub fn render(&self, report: &Report) -> Result<String, MessageError> {
        flux::render_commit_message(self.template.as_deref(), &self.data(report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::ObjectId as ReportObject;
    use crate::render::report::{ObjectChanges, ReportChange};
    use image_update_template::flux::DEFAULT_MESSAGE;

    fn report() -> Report {
        let mut r = Report::default();
        r.file_changes.insert(
            "apps/a.yaml".to_owned(),
            vec![ObjectChanges {
                object: ReportObject {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: "a".into(),
                    namespace: "apps".into(),
                },
                changes: vec![ReportChange {
                    old_value: "app:1".into(),
                    new_value: "app:2".into(),
                    setter: "flux-system:a".into(),
                    line: 3,
                    column: 12,
                    field_path: "spec.x".into(),
                    provenance: None,
                }],
            }],
        );
        r
    }

    /// `.Provenance` is a method of each change: the zero struct without provenance (so `if`
    /// works), the gathered one with; printing a change stays as Flux prints it.
    #[test]
    fn provenance_of_each_change() {
        let template = "{{ range .Changed.Changes }}{{ if .Provenance.CompareURL }}{{ .Provenance.CompareURL }} by {{ .Provenance.Signer.Subject }}{{ else }}none {{ len .Provenance.Notes }}{{ end }} {{ . }}{{ end }}";
        let config = MessageConfig {
            template: Some(template.into()),
            ..MessageConfig::default()
        };
        assert_eq!(
            config.render(&report()).unwrap(),
            "none 0 {app:1 app:2 flux-system:a}"
        );
        let mut r = report();
        if let Some(objects) = r.file_changes.get_mut("apps/a.yaml") {
            objects[0].changes[0].provenance =
                Some(image_update_template::provenance::Provenance {
                    compare_url: "https://github.com/acme/a/compare/1...2".into(),
                    signer: image_update_template::provenance::Signer {
                        subject:
                            "https://github.com/acme/a/.github/workflows/release.yml@refs/tags/v2"
                                .into(),
                        ..Default::default()
                    },
                    ..Default::default()
                });
        }
        assert_eq!(
            config.render(&r).unwrap(),
            "https://github.com/acme/a/compare/1...2 by https://github.com/acme/a/.github/workflows/release.yml@refs/tags/v2 {app:1 app:2 flux-system:a}"
        );
    }

    #[test]
    fn renders_flux_templates_over_a_report() {
        let config = MessageConfig {
            template: Some(
                "{{ .AutomationObject }}:{{ range .Changed.Changes }} {{ .OldValue }} -> {{ .NewValue }}{{ end }} ({{ .Values.env }})".into(),
            ),
            values: [("env".to_owned(), "prod".to_owned())].into(),
            automation_object: Some(("flux-system".into(), "apps".into())),
        };
        assert_eq!(
            config.render(&report()).unwrap(),
            "flux-system/apps: app:1 -> app:2 (prod)"
        );
        assert_eq!(
            MessageConfig::default().render(&report()).unwrap(),
            DEFAULT_MESSAGE
        );
    }

    #[test]
    fn supply_chain_findings_of_the_changed_policies() {
        use crate::render::report::{Released, SupplyChainEntry};
        let mut r = report();
        for (policy, image) in [
            ("flux-system:a", "app:2@sha256:ab"),
            ("flux-system:other", "other:1"),
        ] {
            r.supply_chain.insert(
                policy.to_owned(),
                SupplyChainEntry {
                    image: image.to_owned(),
                    signed_by: vec![crate::render::report::Signer {
                        kind: "key".into(),
                        name: "cosign.pub".into(),
                        fingerprint: "sha256:cd".into(),
                        ..Default::default()
                    }],
                    released: Some(Released {
                        at: "2026-01-01T00:00:00Z".into(),
                        source: "registry".into(),
                        builder_controlled: false,
                    }),
                    ..SupplyChainEntry::default()
                },
            );
        }
        let config = MessageConfig {
            template: Some(
                "{{ range .SupplyChain }}{{ .Policy }} {{ .Tag }} {{ .Digest }}: {{ range .SignedBy }}{{ . }}{{ end }}, {{ .Released }}{{ end }}".into(),
            ),
            ..MessageConfig::default()
        };
        assert_eq!(
            config.render(&r).unwrap(),
            "flux-system:a 2 sha256:ab: key cosign.pub (sha256:cd), 2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn broken_templates_fail_as_in_flux() {
        let broken = MessageConfig {
            template: Some("{{ .Changed ".into()),
            ..MessageConfig::default()
        };
        assert!(
            broken
                .check()
                .unwrap_err()
                .to_string()
                .starts_with("unable to create commit message template from spec: ")
        );
        assert!(broken.warnings().is_empty());
    }

    #[test]
    fn flux_v0_fields_render_with_a_warning() {
        let mut report = report();
        report.observed_policies.insert(
            "flux-system:a".to_owned(),
            crate::policies::ImageRef::new("app", "2"),
        );
        let config = MessageConfig {
            template: Some("{{ range .Updated.Images }}{{ .Name }} {{ .Policy }}{{ end }}".into()),
            ..MessageConfig::default()
        };
        assert!(config.check().is_ok());
        assert_eq!(
            config.render(&report).unwrap(),
            "index.docker.io/library/app:2 flux-system/a"
        );
        let warnings = config.warnings();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].severity, crate::diagnostic::Severity::Warning);
        assert!(
            warnings[0].message.starts_with(
                "the commit message template uses '.Updated' (line 1, column 10), which Flux v1 removed"
            ),
            "{}",
            warnings[0].message
        );
        assert!(MessageConfig::default().warnings().is_empty());
    }
}
