//! A hostile image publisher's provenance: labels and annotations are whatever the builder wrote.
//! Terminal escapes, Markdown and HTML, a huge value, a `javascript:` source must neither reach a
//! terminal raw, nor become a link, nor make the run fail or grow: the source is not linked, each
//! value is cut at 1 KiB, and the run succeeds with notes.

use std::time::Duration;

use image_update_testkit::registry::{Auth, ImageSpec, Registry};

use super::support::{bin, bounded, stderr, stdout};

const SOURCE: &str = "org.opencontainers.image.source";
const REVISION: &str = "org.opencontainers.image.revision";
const VERSION: &str = "org.opencontainers.image.version";

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![image_update_testkit::trial(
        "provenance::hostile_labels",
        &["docker-registry", "prlimit"],
        hostile_labels,
    )]
}

fn hostile_labels() {
    let reg = Registry::start(Auth::Anonymous);
    let huge = "A".repeat(4 * 1024 * 1024);
    reg.push_image(
        "acme/web",
        "1.0.0",
        &ImageSpec::new("linux", "amd64", None, "2026-01-01T00:00:00Z").labels(&[
            (SOURCE, "javascript:alert(1)//github.com/acme/web"),
            (
                REVISION,
                "\u{1b}]8;;https://evil.test\u{1b}\\click\u{1b}]8;;\u{1b}\\ <!-- x --> @admin",
            ),
            (VERSION, &huge),
        ]),
    );
    let image = format!("{}/acme/web", reg.authority());
    for output in ["text", "json"] {
        let out = bounded(
            bin().args([
                "policy",
                &image,
                "--semver",
                ">=0",
                "--provenance",
                "--output",
                output,
            ]),
            Duration::from_secs(60),
        );
        assert!(out.status.success(), "{output}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(!text.contains('\u{1b}'), "{output}: a raw escape: {text}");
        assert!(text.len() < 16 * 1024, "{output}: {} bytes", text.len());
        if output == "json" {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let p = &v["provenance"];
            assert_eq!(p["sourceURL"], "", "{p}");
            assert_eq!(p["commitURL"], "", "{p}");
            assert_eq!(p["new"]["version"].as_str().unwrap().len(), 1024, "{p}");
            assert!(
                p["notes"][0]
                    .as_str()
                    .unwrap()
                    .contains("names no repository"),
                "{p}"
            );
        } else {
            assert!(text.contains("provenance of "), "{text}");
            assert!(text.contains("\\x1b]8;;https://evil.test"), "{text}");
            assert!(!text.contains("\n  repository: "), "{text}");
        }
    }
}
