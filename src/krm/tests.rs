//! Where `results` goes, for every shape of root mapping. The golden cases
//! in `testdata/krm/` cover whole runs.

use super::*;
use crate::yaml::parse_values;

fn run_text(text: &str) -> (String, bool) {
    let mut outcome = process(text);
    let out = outcome.output.pieces().unwrap().concat();
    (out, outcome.failed)
}

const ITEM: &str = "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n  data:\n    image: app:1 # {\"$imagepolicy\": \"ns:app\"}\n";
const CONFIG: &str =
    "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data:\n    ns:app: app:2\n";

#[test]
fn appends_after_the_last_entry_even_without_a_final_newline() {
    let text = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n{ITEM}{}",
        CONFIG.trim_end()
    );
    let (out, failed) = run_text(&text);
    assert!(!failed);
    let expected_prefix = text.replace("app:1 #", "app:2 #");
    assert!(
        out.starts_with(&format!(
            "{expected_prefix}\nresults:\n- message: updated 1 field in 1 resource; 0 warnings\n"
        )),
        "{out}"
    );
}

#[test]
fn replaces_results_in_place_and_keeps_what_follows() {
    let text = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nresults:\n- message: stale\n  severity: error # old\n# kept\nitems:\n{ITEM}{CONFIG}"
    );
    let (out, _) = run_text(&text);
    assert!(!out.contains("stale"), "{out}");
    assert!(
        out.contains("\n    setter: ns:app\n# kept\nitems:\n"),
        "{out}"
    );
    // Again: nothing left to change, and the next run is a fixed point.
    let (second, _) = run_text(&out);
    assert!(
        second.contains(
            "message: updated 0 fields in 0 resources; 0 warnings\n  severity: info\n# kept\n"
        ),
        "{second}"
    );
    assert_eq!(run_text(&second).0, second);
}

#[test]
fn flow_root_gets_json_results() {
    let empty = "{}";
    let (out, failed) = run_text(empty);
    assert!(failed, "no kind: not a ResourceList");
    assert!(
        out.starts_with(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n"
        ),
        "{out}"
    );

    let text = "{\"apiVersion\": \"config.kubernetes.io/v1\", \"kind\": \"ResourceList\", \"items\": [], \"results\": [{\"message\": \"old\"}], \"functionConfig\": null}";
    let (out, failed) = run_text(text);
    assert!(!failed);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        value["results"][0]["message"],
        "updated 0 fields in 0 resources; 0 warnings"
    );
    assert!(out.ends_with(", \"functionConfig\": null}"), "{out}");

    let text = "{\"apiVersion\": \"config.kubernetes.io/v1\", \"kind\": \"ResourceList\", \"items\": [],}\n";
    let (out, _) = run_text(text);
    let value = &parse_values(&out).unwrap()[0];
    assert_eq!(value["results"][0]["severity"], "info");
    assert!(out.ends_with("\"items\": [], \"results\": [{\"message\":\"updated 0 fields in 0 resources; 0 warnings\",\"severity\":\"info\"}],}\n"), "{out}");
}

#[test]
fn indented_root_and_document_markers() {
    let text = "---\n  apiVersion: v1\n  kind: List\n  items: []\n...\n";
    let (out, failed) = run_text(text);
    assert!(!failed);
    assert!(
        out.starts_with(
            "---\n  apiVersion: v1\n  kind: List\n  items: []\n  results:\n  - message: "
        ),
        "{out}"
    );
    assert!(out.ends_with("  severity: info\n...\n"), "{out}");
}

#[test]
fn bad_inputs_give_a_complete_list_with_an_error() {
    for (text, needle) in [
        ("", "input is empty"),
        ("a: [", "not valid YAML"),
        ("- a\n", "not a YAML mapping"),
        (
            "kind: ResourceList\n---\nkind: ResourceList\n",
            "2 YAML documents",
        ),
        ("apiVersion: v1\nkind: ConfigMap\n", "input is v1/ConfigMap"),
        (
            "apiVersion: config.kubernetes.io/v2\nkind: ResourceList\n",
            "config.kubernetes.io/v2/ResourceList",
        ),
    ] {
        let (out, failed) = run_text(text);
        assert!(failed, "{text:?}");
        let value = &parse_values(&out).unwrap()[0];
        assert_eq!(value["kind"], "ResourceList");
        assert_eq!(value["items"], serde_json::json!([]));
        let message = value["results"][0]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{text:?}: {message}");
    }
    let (out, failed) =
        run_text("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {a: 1}\n");
    assert!(failed);
    assert!(out.starts_with("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: {a: 1}\nresults:\n- message: items is not a sequence\n  severity: error\n"), "{out}");
}
