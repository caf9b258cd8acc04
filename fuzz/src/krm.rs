//! Target `krm`: the KRM function over an arbitrary ResourceList text.
//!
//! Input: the function's stdin. Checks that [`process`] never panics and
//! that its edits always apply, and:
//! * its output (the pieces, joined) is valid YAML whenever the input was a
//!   ResourceList (or a `List`) that parses, or the function answered with
//!   a fresh list of its own;
//! * outside `results`, the output's values differ from the input's only
//!   where a result reports a proposed value, and hold that value;
//! * it is idempotent on its own output: a second run changes no value
//!   outside `results`, and a third run gives the second run's bytes back.
//!
//! Inputs whose functionConfig turns on `fetch` are skipped: they would ask
//! registries over the network.

use image_update::api::krm::{
    self as krm, Output, Response, Severity, parse_slice, read_function_config, read_layout,
};
use image_update::api::yaml::parse_documents;
use serde_json::Value;

use crate::tree::differences;

/// Run the target on one input.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        let response = krm::not_utf8("input is not UTF-8");
        assert!(response.failed);
        return;
    };
    if may_fetch(text) {
        return;
    }
    let (first, response) = answer(text);
    let was_list = parse_documents(text).ok().and_then(|docs| list_kind(&docs));
    let first_values = parse_documents(&first);
    if was_list.is_some() || matches!(response.output, Output::Fresh(_)) {
        assert!(
            first_values.is_ok(),
            "the output is not YAML: {:?}\ninput: {text:?}\noutput: {first:?}",
            first_values.err()
        );
    }
    let proposed: Vec<Value> = response
        .results
        .iter()
        .filter_map(|r| r.field.as_ref()?.proposed_value.clone())
        .map(Value::String)
        .collect();
    if was_list.is_some()
        && matches!(response.output, Output::Spliced { .. })
        && let (Ok(old), Ok(new)) = (parse_documents(text), &first_values)
    {
        for difference in differences(&without_results(&old), &without_results(new)) {
            assert!(
                difference
                    .new
                    .as_ref()
                    .is_some_and(|v| proposed.contains(v)),
                "the output changed a value no result reports: {difference:?}\ninput: {text:?}\noutput: {first:?}"
            );
        }
    }
    if may_fetch(&first) {
        return;
    }
    let (second, _) = answer(&first);
    if let Ok(first_values) = &first_values {
        let second_values = parse_documents(&second);
        assert!(
            second_values.is_ok(),
            "the second output is not YAML: {:?}\nfirst: {first:?}\nsecond: {second:?}",
            second_values.err()
        );
        let second_values = second_values.unwrap_or_default();
        assert_eq!(
            without_results(first_values),
            without_results(&second_values),
            "a second run changed values\nfirst: {first:?}\nsecond: {second:?}"
        );
    }
    let (third, _) = answer(&second);
    assert_eq!(
        third, second,
        "a third run changed the output of the second\nfirst: {first:?}"
    );
}

/// The function's output text for `text`, and its response.
fn answer(text: &str) -> (String, Response<'_>) {
    let mut response = krm::process(text);
    assert_eq!(
        response.failed,
        response
            .results
            .iter()
            .any(|r| r.severity == Severity::Error),
        "failed does not match the results"
    );
    let joined = match response.output.pieces() {
        Ok(pieces) => pieces.concat(),
        Err(e) => panic!("the function's edits cannot be applied: {e}\ninput: {text:?}"),
    };
    (joined, response)
}

/// Whether the functionConfig of `text` asks for registries.
fn may_fetch(text: &str) -> bool {
    let Ok(layout) = read_layout(text) else {
        return false;
    };
    let Some(range) = layout.function_config else {
        return false;
    };
    let Ok(value) = parse_slice(text, range) else {
        return false;
    };
    read_function_config(&value).is_ok_and(|c| c.fetch.is_some())
}

/// The kind of a one-document stream whose root is a ResourceList or List.
fn list_kind(docs: &[image_update::api::yaml::Document]) -> Option<String> {
    let [doc] = docs else {
        return None;
    };
    let kind = doc.value.get("kind")?.as_str()?;
    matches!(kind, "ResourceList" | "List").then(|| kind.to_owned())
}

/// The documents' values with the root `results` entry removed.
fn without_results(docs: &[image_update::api::yaml::Document]) -> Value {
    Value::Array(
        docs.iter()
            .map(|d| {
                let mut v = d.value.clone();
                if let Some(map) = v.as_object_mut() {
                    map.shift_remove("results");
                }
                v
            })
            .collect(),
    )
}
