//! Renders Flux's documented "methods" template (`testdata/templates/cases/flux-methods.tmpl`) over a
//! generated report of 10,000 changes: 1,000 files, 2 objects each, 5 changes each.
//! Target: under 20 ms per render in release. Run with `cargo bench -p image-update-template --bench render`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use image_update_template::{
    ObjectId, Template, TemplateData, UpdateChange, render_commit_message,
};

const TEMPLATE: &str = include_str!("../../../testdata/templates/cases/flux-methods.tmpl");

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
    println!("{name}: median {median:?}, best {best:?} over {runs} runs ({bytes} bytes of output)");
}

fn main() {
    let d = data();
    assert_eq!(d.changes().len(), 10_000);
    measure("render_commit_message (parse + data + execute)", 30, || {
        render_commit_message(Some(TEMPLATE), &d)
            .map(|s| s.len())
            .unwrap_or(0)
    });
    pieces(&d);
    let value = d.to_value();
    let tmpl = Template::parse("commit message", TEMPLATE).map_err(|e| e.to_string());
    let Ok(tmpl) = tmpl else { return };
    measure("Template::execute only", 30, || {
        tmpl.execute(&value).map(|b| b.len()).unwrap_or(0)
    });
    measure("TemplateData::to_value only", 30, || {
        black_box(d.to_value());
        0
    });
}

fn pieces(d: &TemplateData) {
    let s = Instant::now();
    black_box(d.changes());
    println!("changes {:?}", s.elapsed());
    let s = Instant::now();
    black_box(d.objects());
    println!("objects {:?}", s.elapsed());
}
