//! Target `template`: Go `text/template` + Sprig over arbitrary text.
//!
//! Input: a commit-message template. Checks that
//! [`Template::parse`] and [`Template::execute_with_limits`], over the data
//! of a fixed report ([`REPORT`]), never panic, always end (libFuzzer's
//! `-timeout` is the bound), and keep to [`limits`]: the output is never
//! longer than `max_output`. Also that
//! * every error names the template and its line, as Go's do
//!   (`template: commit message:LINE...`);
//! * rendering is deterministic: a second execution, and an execution of
//!   the same text parsed again, give the same bytes or the same error;
//! * text is copied verbatim: an output without `{{`, read back as a
//!   template, renders to itself.

use image_update_template::flux::TEMPLATE_NAME;
use image_update_template::{Limits, Template, TemplateData, Value};

/// The report the templates render: several files, objects and changes,
/// an automation object, and the policies' latest images, so that Flux
/// v0.x's `.Updated` (image references, with go-containerregistry's
/// methods) is there too.
pub const REPORT: &str = include_str!("../../testdata/templates/reports/v0.json");

/// Limits tighter than the defaults, so that one run stays short.
#[must_use]
pub fn limits() -> Limits {
    Limits {
        max_output: 1 << 20,
        max_template_depth: 50,
        max_value_len: 1 << 16,
        max_built: 1 << 20,
        max_steps: 1_000_000,
    }
}

thread_local! {
    static DATA: Option<Value> = serde_json::from_str(REPORT)
        .ok()
        .and_then(|json| TemplateData::from_report_json(&json).ok())
        .and_then(|data| data.value(true).ok());
}

/// The prefix of every error Go's `text/template` raises for this template:
/// the template's name, then the line (`template: commit message:3: ...`
/// when parsing, `template: commit message:3:14: executing ...` when
/// executing, or `... is an incomplete or empty template`).
fn error_prefix() -> String {
    format!("template: {TEMPLATE_NAME}:")
}

/// One execution's result, comparable.
fn execute(template: &Template, value: &Value, limits: &Limits) -> Result<Vec<u8>, String> {
    template.execute_with_limits(value, limits).map_err(|e| {
        assert!(
            e.message.starts_with(&error_prefix()),
            "an execution error that does not name the template and its line: {:?}",
            e.message
        );
        e.message
    })
}

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let template = match Template::parse(TEMPLATE_NAME, text) {
        Ok(template) => template,
        Err(e) => {
            assert!(
                e.message.starts_with(&error_prefix()),
                "a parse error that does not name the template and its line: {:?}",
                e.message
            );
            return;
        }
    };
    DATA.with(|value| {
        let Some(value) = value else {
            panic!("the fixed report does not load");
        };
        let limits = limits();
        let first = execute(&template, value, &limits);
        if let Ok(out) = &first {
            assert!(
                out.len() <= limits.max_output,
                "{} bytes of output, over the limit of {}",
                out.len(),
                limits.max_output
            );
        }
        // Deterministic: the same template again, and the same text parsed
        // again, give the same bytes or the same error.
        assert_eq!(
            first,
            execute(&template, value, &limits),
            "a second execution differs"
        );
        let again = Template::parse(TEMPLATE_NAME, text)
            .unwrap_or_else(|e| panic!("parsed once, refused the second time: {e}"));
        assert_eq!(
            first,
            execute(&again, value, &limits),
            "the same text parsed again renders differently"
        );
        // Text is copied verbatim: an output without delimiters, read back
        // as a template, renders to itself.
        if let Ok(out) = &first
            && let Ok(out) = std::str::from_utf8(out)
            && !out.contains("{{")
        {
            let plain = Template::parse(TEMPLATE_NAME, out)
                .unwrap_or_else(|e| panic!("an output without delimiters does not parse: {e}"));
            match plain.execute_with_limits(value, &limits) {
                Ok(back) => assert_eq!(
                    back,
                    out.as_bytes(),
                    "an output without delimiters does not render to itself"
                ),
                // The empty template is Go's "incomplete or empty" error.
                Err(e) => assert!(
                    out.is_empty() && e.message.contains("incomplete or empty template"),
                    "an output without delimiters fails to render: {e}"
                ),
            }
        }
    });
}
