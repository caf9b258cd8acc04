//! Property: rendering arbitrary template text against the suite's reports never panics, keeps to the
//! engine's limits and gives the same result every time, whether the text is random or a mutation of a
//! real case.
//!
//! Not timed: the engine bounds every execution by its step limit, so a render always ends; how fast
//! it ends depends on the machine, not on the property. A watchdog turns a render that never ends (a
//! bug in that bound) into a failure naming the template, instead of a test run that hangs: it fires
//! after [`HANG`], far beyond any render here (milliseconds, even in a debug build on a loaded machine).

// Test support code: a broken fixture directory should stop the run loudly.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use image_update_template::{Limits, Template, TemplateData, Value};
use proptest::prelude::*;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates")
}

fn load_dir(dir: &str, ext: &str) -> Vec<String> {
    let mut paths: Vec<PathBuf> = fs_err::read_dir(root().join(dir))
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| fs_err::read_to_string(p).expect("read"))
        .collect()
}

fn reports() -> Vec<Value> {
    load_dir("reports", "json")
        .iter()
        .map(|text| {
            let json: serde_json::Value = serde_json::from_str(text).expect("json");
            TemplateData::from_report_json(&json)
                .expect("report")
                .to_value()
        })
        .collect()
}

const LIMITS: Limits = Limits {
    max_output: 1 << 20,
    max_template_depth: 100,
    max_value_len: 1 << 20,
    max_built: 16 << 20,
    max_steps: 2_000_000,
};
/// How long one template may render before the watchdog calls it a hang.
const HANG: Duration = Duration::from_secs(300);

/// The template each test thread is rendering, and since when.
static RENDERING: Mutex<Option<HashMap<ThreadId, (Instant, String)>>> = Mutex::new(None);

/// Watch the current thread's render of `text` until the guard drops.
fn watch(text: &str) -> impl Drop {
    static WATCHDOG: Once = Once::new();
    WATCHDOG.call_once(|| {
        std::thread::spawn(|| {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let rendering = RENDERING.lock().unwrap_or_else(|e| e.into_inner());
                for (start, text) in rendering.iter().flat_map(HashMap::values) {
                    if start.elapsed() > HANG {
                        eprintln!("a render did not end within {HANG:?} (a hang): {text:?}");
                        std::process::abort();
                    }
                }
            }
        });
    });
    struct Guard(ThreadId);
    impl Drop for Guard {
        fn drop(&mut self) {
            let mut rendering = RENDERING.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(map) = rendering.as_mut() {
                map.remove(&self.0);
            }
        }
    }
    let id = std::thread::current().id();
    RENDERING
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashMap::new)
        .insert(id, (Instant::now(), text.to_owned()));
    Guard(id)
}

/// One execution's result, comparable.
fn execute(t: &Template, data: &Value) -> Result<Vec<u8>, String> {
    t.execute_with_limits(data, &LIMITS)
        .map_err(|e| e.to_string())
}

fn render_all(text: &str, data: &[Value]) {
    let _watch = watch(text);
    let Ok(t) = Template::parse("commit message", text) else {
        return;
    };
    for d in data {
        let first = execute(&t, d);
        if let Ok(out) = &first {
            assert!(
                out.len() <= LIMITS.max_output,
                "{} bytes of output, over the limit: {text:?}",
                out.len()
            );
        }
        assert_eq!(first, execute(&t, d), "two renders differ: {text:?}");
    }
}

/// Pieces that make random text likely to hit the lexer, parser and evaluator in interesting ways.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{{".to_owned()),
        Just("}}".to_owned()),
        Just("{{- ".to_owned()),
        Just(" -}}".to_owned()),
        Just("{{/*".to_owned()),
        Just("*/}}".to_owned()),
        Just(" | ".to_owned()),
        Just("(".to_owned()),
        Just(")".to_owned()),
        Just(" $x := ".to_owned()),
        Just(" $x = ".to_owned()),
        Just("$x".to_owned()),
        Just("$".to_owned()),
        Just(".".to_owned()),
        Just("{{ end }}".to_owned()),
        Just("{{ else }}".to_owned()),
        Just("{{ break }}".to_owned()),
        Just("{{ continue }}".to_owned()),
        Just("{{ range $k, $v := .Changed.Objects }}".to_owned()),
        Just("{{ range .Changed.Changes }}".to_owned()),
        Just("{{ range until 50 }}".to_owned()),
        Just("{{ range 40 }}".to_owned()),
        Just("{{ if .Values }}".to_owned()),
        Just("{{ with .AutomationObject }}".to_owned()),
        Just("{{ else with .Values }}".to_owned()),
        Just("{{ define \"t\" }}".to_owned()),
        Just("{{ template \"t\" . }}".to_owned()),
        Just("{{ block \"b\" . }}".to_owned()),
        Just(".Changed.FileChanges".to_owned()),
        Just(".Changed.Changes".to_owned()),
        Just(".AutomationObject.Name".to_owned()),
        Just(".Values.cluster".to_owned()),
        Just("\"str\"".to_owned()),
        Just("`raw`".to_owned()),
        Just("'c'".to_owned()),
        Just("0x1F".to_owned()),
        Just("1.5e3".to_owned()),
        Just("-7".to_owned()),
        Just("nil".to_owned()),
        Just("true".to_owned()),
        Just(" printf \"%v %5.2f %q %x %-8s %[2]d %*d\" ".to_owned()),
        Just(" repeat 1000 ".to_owned()),
        Just(" indent 1000 ".to_owned()),
        Just(" list 1 2 ".to_owned()),
        Just(" dict \"a\" ".to_owned()),
        Just(" set ".to_owned()),
        Just(" append ".to_owned()),
        Just(" toJson ".to_owned()),
        Just(" index ".to_owned()),
        Just(" slice ".to_owned()),
        Just(" regexReplaceAll \"(a*)*\" ".to_owned()),
        Just(" and ".to_owned()),
        Just(" eq ".to_owned()),
        Just(" len ".to_owned()),
        Just(" default ".to_owned()),
        Just(" substr 1 ".to_owned()),
        Just(" trunc -3 ".to_owned()),
        Just(" camelcase ".to_owned()),
        "[ -~]{0,6}".prop_map(|s| s),
        "\\PC{0,3}".prop_map(|s| s),
    ]
}

fn mutated_case() -> impl Strategy<Value = String> {
    let cases = load_dir("cases", "tmpl");
    let n = cases.len();
    (
        0..n,
        prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, fragment()), 1..6),
    )
        .prop_map(move |(i, edits)| {
            let mut text = cases[i].clone();
            for (at, op, frag) in edits {
                let mut pos = if text.is_empty() {
                    0
                } else {
                    at.index(text.len() + 1)
                };
                while !text.is_char_boundary(pos) {
                    pos -= 1;
                }
                match op {
                    0 => text.insert_str(pos, &frag),
                    1 => {
                        let mut end = (pos + frag.len().max(1)).min(text.len());
                        while !text.is_char_boundary(end) {
                            end += 1;
                        }
                        text.replace_range(pos..end, "");
                    }
                    _ => {
                        let mut end = (pos + 2).min(text.len());
                        while !text.is_char_boundary(end) {
                            end += 1;
                        }
                        text.replace_range(pos..end, &frag);
                    }
                }
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics_and_finishes(parts in prop::collection::vec(fragment(), 0..40)) {
        render_all(&parts.concat(), &reports());
    }

    #[test]
    fn mutated_cases_never_panic_and_finish(text in mutated_case()) {
        render_all(&text, &reports());
    }
}
