//! Renders Flux's documented "methods" template (`testdata/templates/cases/flux-methods.tmpl`) over a
//! generated report of 10,000 changes: 1,000 files, 2 objects each, 5 changes each.
//! Target: under 20 ms per render in release. Then the Flux v0.x template of the Flux documentation
//! (`testdata/templates/cases/flux-v1beta1-updated.tmpl`: `.Updated.Files`, `.Updated.Objects`,
//! `.Updated.Images`) over the same report: 10,000 image references to parse and order. Run with `cargo bench -p image-update-template --bench render`.
//! Each measurement prints its run count (`BENCH_RUNS`, default 30), median, best and worst; a template
//! that does not parse or render stops the benchmark. `BENCH_ONLY=render|execute|values` runs one
//! measurement: under a loaded machine, the instructions of one render are the difference between
//! callgrind's totals with `BENCH_RUNS=3` and `BENCH_RUNS=1`, halved (BENCHMARKS.md gives the commands).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::hint::black_box;
use std::time::{Duration, Instant};

use image_update_template::{
    ObjectId, Template, TemplateData, UpdateChange, render_commit_message,
};

const TEMPLATE: &str = include_str!("../../../testdata/templates/cases/flux-methods.tmpl");
const V0_TEMPLATE: &str =
    include_str!("../../../testdata/templates/cases/flux-v1beta1-updated.tmpl");

fn data() -> TemplateData {
    let mut d = TemplateData::new("flux-system", "bench");
    for f in 0..1000 {
        let file = format!("apps/app-{f:04}/deployment.yaml");
        for o in 0..2 {
            let id = ObjectId {
                api_version: "apps/v1".into(),
                kind: if o == 0 { "Deployment" } else { "CronJob" }.into(),
                name: format!("app-{f:04}-{o}").into(),
                namespace: format!("team-{}", f % 17).into(),
            };
            let changes = (0..5).map(|c| UpdateChange {
                old_value: format!("ghcr.io/acme/app-{f}-{o}-{c}:1.0.{c}").into(),
                new_value: format!("ghcr.io/acme/app-{f}-{o}-{c}:1.1.{c}").into(),
                setter: format!("flux-system:app-{f}-{o}-{c}").into(),
                provenance: None,
            });
            d.add_change(&file, id, changes);
        }
    }
    d
}

fn measure(name: &str, runs: usize, mut f: impl FnMut() -> usize) {
    let mut times: Vec<Duration> = Vec::with_capacity(runs);
    let mut bytes = 0;
    for _ in 0..runs {
        let start = Instant::now();
        bytes = black_box(f());
        times.push(start.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    let best = times[0];
    let worst = times[times.len() - 1];
    println!(
        "{name}: median {median:?}, best {best:?}, worst {worst:?} over {runs} runs ({bytes} bytes of output)"
    );
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .map(|v| v.parse().expect("BENCH_RUNS is a number"))
        .unwrap_or(30)
        .max(1);
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |name: &str| only.as_deref().is_none_or(|o| o == name);
    let d = data();
    assert_eq!(d.changes().len(), 10_000);
    if wanted("render") {
        measure(
            "render_commit_message (parse + data + execute)",
            runs,
            || {
                render_commit_message(Some(TEMPLATE), &d)
                    .unwrap_or_else(|e| panic!("the template does not render: {e}"))
                    .len()
            },
        );
        measure(
            "render_commit_message, Flux v0.x .Updated template (parse + data + execute)",
            runs,
            || {
                render_commit_message(Some(V0_TEMPLATE), &d)
                    .unwrap_or_else(|e| panic!("the v0.x template does not render: {e}"))
                    .len()
            },
        );
        pieces(&d);
    }
    if wanted("execute") {
        let value = d.to_value();
        let tmpl = Template::parse("commit message", TEMPLATE)
            .unwrap_or_else(|e| panic!("the template does not parse: {e}"));
        measure("Template::execute only", runs, || {
            tmpl.execute(&value)
                .unwrap_or_else(|e| panic!("the template does not execute: {e}"))
                .len()
        });
        let legacy = d
            .value(true)
            .unwrap_or_else(|e| panic!("the v0.x data does not build: {e}"));
        let v0 = Template::parse("commit message", V0_TEMPLATE)
            .unwrap_or_else(|e| panic!("the v0.x template does not parse: {e}"));
        measure("Template::execute only, Flux v0.x template", runs, || {
            v0.execute(&legacy)
                .unwrap_or_else(|e| panic!("the v0.x template does not execute: {e}"))
                .len()
        });
    }
    if wanted("values") {
        measure("TemplateData::to_value only", runs, || {
            black_box(d.to_value());
            0
        });
        measure("TemplateData::value(legacy: true) only", runs, || {
            black_box(d.value(true).is_ok());
            0
        });
    }
}

fn pieces(d: &TemplateData) {
    let s = Instant::now();
    black_box(d.changes());
    println!("changes {:?}", s.elapsed());
    let s = Instant::now();
    black_box(d.objects());
    println!("objects {:?}", s.elapsed());
}
