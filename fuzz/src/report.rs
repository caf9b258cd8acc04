//! Target `report`: the report inputs of commit messages.
//!
//! Input: a saved report, JSON or YAML. Checks that neither reader panics
//! and that what they accept renders:
//! * [`TemplateData::from_report_json`] over the input as JSON, then the
//!   commit message of [`TEMPLATE`] over the data;
//! * the `message` command's reader: [`parse_one`], then
//!   `serde_json::from_value::<Report>`, then [`MessageConfig::render`];
//!   an accepted report renders back (JSON and YAML) to text that reads as
//!   the same report.

use image_update::api::report::MessageConfig;
use image_update::api::report::{Format, Report};
use image_update::api::yaml::parse_one;
use image_update_template::TemplateData;
use image_update_template::flux::render_commit_message_with_limits;

use crate::template::limits;

/// A template that walks every part of the data.
pub const TEMPLATE: &str = "{{ .AutomationObject }} {{ .AutomationObject.Namespace }}
{{ range $file, $objects := .Changed.FileChanges -}}
{{ $file }}: {{ range $object, $changes := $objects }}{{ $object.Kind }}/{{ $object.Name }} {{ len $changes }}{{ end }}
{{ end -}}
{{ range $object, $changes := .Changed.Objects -}}
{{ $object }} {{ range $changes }}{{ .OldValue }} -> {{ .NewValue }} ({{ .Setter }}){{ end }}
{{ end -}}
{{ range .Changed.Changes }}{{ .NewValue | quote }} {{ end }}
{{ range $k, $v := .Values }}{{ $k }}={{ $v }} {{ end }}";

/// Run the target on one input.
pub fn run(data: &[u8]) {
    if let Ok(json) = serde_json::from_slice::<serde_json::Value>(data)
        && let Ok(template_data) = TemplateData::from_report_json(&json)
    {
        let rendered = render_commit_message_with_limits(Some(TEMPLATE), &template_data, &limits());
        assert!(rendered.is_ok(), "{rendered:?}");
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(document) = parse_one(text) else {
        return;
    };
    let Ok(report) = serde_json::from_value::<Report>(document.value) else {
        return;
    };
    let config = MessageConfig {
        template: Some(TEMPLATE.to_owned()),
        ..MessageConfig::default()
    };
    let rendered = config.render(&report);
    assert!(rendered.is_ok(), "{rendered:?}");
    for format in [Format::Json, Format::Yaml] {
        let Ok(saved) = report.render(format) else {
            panic!("{format:?}: the report does not render: {report:?}");
        };
        let again = parse_one(&saved)
            .map_err(|e| e.to_string())
            .and_then(|d| serde_json::from_value::<Report>(d.value).map_err(|e| e.to_string()));
        assert_eq!(
            again.as_ref(),
            Ok(&report),
            "{format:?}: a saved report does not read back\nsaved: {saved:?}"
        );
    }
}
