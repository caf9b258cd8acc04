//! The default request body of a run updating 20 images, each with full provenance (sources,
//! commit and compare links, a keyless signer, a release time, a note): `Content::from_report`
//! then `Content::body` within GitHub's limit, `BENCH_RUNS` times (default 200), median and
//! spread. The target: under 5 ms; over it fails the bench.
//!
//! Run: `cargo bench -p image-update-forge --bench provenance_body`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use image_update_forge::Content;
use serde_json::json;

fn report(images: usize) -> serde_json::Value {
    let changes: Vec<serde_json::Value> = (0..images)
        .map(|i| {
            let old = format!("{i:07x}3f2a1b0c4d5e6f708192a3b4c5d6e7f8091");
            let new = format!("{i:07x}9c1d2e3f405162738495a6b7c8d9e0f1a2b");
            let repo = format!("https://github.com/acme/app-{i}");
            json!({
                "oldValue": format!("ghcr.io/acme/app-{i}:1.4.2"),
                "newValue": format!("ghcr.io/acme/app-{i}:1.5.0@sha256:{}", "a".repeat(64)),
                "setter": format!("apps:app-{i}"), "line": 1, "column": 8, "fieldPath": "image",
                "provenance": {
                    "old": {"image": format!("ghcr.io/acme/app-{i}:1.4.2"), "source": repo, "revision": old, "version": "1.4.2"},
                    "new": {"image": format!("ghcr.io/acme/app-{i}:1.5.0"), "source": repo, "revision": new, "version": "1.5.0"},
                    "sourceURL": repo, "forge": "github",
                    "commitURL": format!("{repo}/commit/{new}"),
                    "compareURL": format!("{repo}/compare/{old}...{new}"),
                    "compareBy": "revision",
                    "signer": {"kind": "identity",
                               "subject": format!("{repo}/.github/workflows/release.yml@refs/tags/v1.5.0"),
                               "issuer": "https://token.actions.githubusercontent.com",
                               "sourceRepository": repo, "sourceDigest": new, "sourceDigestMatches": true},
                    "released": "2026-11-26T10:00:00Z", "releaseSource": "GitHub Container Registry package version created_at",
                    "notes": ["compared by revision"]
                }
            })
        })
        .collect();
    json!({
        "version": "image-update.dev/v1",
        "fileChanges": {"apps/fleet.yaml": [{"object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "fleet", "namespace": "apps"}, "changes": changes}]},
        "observedPolicies": {}, "warnings": []
    })
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let report = report(20);
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    let mut size = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let mut c = Content::from_report(
            &report,
            Some(("apps", "fleet")),
            &BTreeMap::new(),
            "Update images",
        )
        .unwrap();
        c.base = "main".into();
        c.head = "image-update/apps-fleet".into();
        let body = c.body(None, 65_536).unwrap();
        times.push(start.elapsed());
        size = body.chars().count();
        assert_eq!(body.matches("([compare commits](").count(), 20, "{body}");
    }
    times.sort();
    let median = times[runs / 2];
    println!(
        "request body, 20 images with provenance: {size} characters; median {:.2} ms (min {:.2}, max {:.2}) over {runs} runs",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[runs - 1].as_secs_f64() * 1e3
    );
    assert!(median < Duration::from_millis(5), "over the 5 ms target");
}
