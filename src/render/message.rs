//! Commit messages: a Flux `spec.git.commit.messageTemplate` rendered over
//! a run's report, byte for byte as Flux renders it.
//!
//! The engine (Go `text/template` with Sprig's hermetic functions) and
//! Flux's `TemplateData` types live in the `image-update-template` crate;
//! this module builds that data from a [`Report`] and the automation, and is
//! the one place every front end renders a message through.

use std::collections::BTreeMap;

use image_update_template::flux::{self, MessageError, ObjectId, TemplateData, UpdateChange};

use crate::automation::Automation;
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
                    }),
                );
            }
        }
        for (k, v) in &self.values {
            data.set_value(k, v);
        }
        data
    }

    /// Render the message for `report`.
    ///
    /// # Errors
    /// Flux's parse, execution or removed-field messages.
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
                }],
            }],
        );
        r
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
    fn broken_and_removed_fields_fail_as_in_flux() {
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
        let removed = MessageConfig {
            template: Some("{{ .Updated }}".into()),
            ..MessageConfig::default()
        };
        assert!(removed.check().is_ok());
        assert!(
            removed
                .render(&report())
                .unwrap_err()
                .to_string()
                .starts_with(
                    "template uses removed '.Updated' field. Please use '.Changed' instead."
                )
        );
    }
}
