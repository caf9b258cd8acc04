//! Target `template`: Go `text/template` + Sprig over arbitrary text.
//!
//! Input: a commit-message template. Checks that
//! [`Template::parse`] and [`Template::execute_with_limits`], over the data
//! of a fixed report ([`REPORT`]), never panic, always end (libFuzzer's
//! `-timeout` is the bound), and keep to [`limits`]: the output is never
//! longer than `max_output`.

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
        max_steps: 1_000_000,
    }
}

thread_local! {
    static DATA: Option<Value> = serde_json::from_str(REPORT)
        .ok()
        .and_then(|json| TemplateData::from_report_json(&json).ok())
        .and_then(|data| data.value(true).ok());
}

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let template = match Template::parse(TEMPLATE_NAME, text) {
        Ok(template) => template,
        Err(e) => {
            assert!(!e.message.is_empty(), "a parse error without a message");
            return;
        }
    };
    DATA.with(|value| {
        let Some(value) = value else {
            panic!("the fixed report does not load");
        };
        let limits = limits();
        match template.execute_with_limits(value, &limits) {
            Ok(out) => assert!(
                out.len() <= limits.max_output,
                "{} bytes of output, over the limit of {}",
                out.len(),
                limits.max_output
            ),
            Err(e) => assert!(!e.message.is_empty(), "an error without a message"),
        }
    });
}
