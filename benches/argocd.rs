//! Argo CD write-back benchmark (run with `cargo bench --bench argocd`).
//!
//! 1. Generates a deterministic repository under `target/bench-data/argocd`: 1,000 Argo CD
//!    Applications with three images each (`BENCH_APPS=N` changes the count), and each
//!    Application's source directory with its manifests. A third are Kustomize Applications
//!    written to `.argocd-source-APP.yaml` (half of which exist already), a third Helm charts
//!    written to `values.yaml` (`helmvalues`), a third Kustomize overlays written to their
//!    `kustomization.yaml` (`kustomization`).
//! 2. Times, warm cache, the median of `BENCH_RUNS` (default 11) runs in this session:
//!    * `grep -rl argocd-image-updater DIR` (a process, as a user would run it);
//!    * in this process, with the binary's allocator (mimalloc): walk the tree and read the
//!      candidate files (the directory mode's walker), parse every Application and its
//!      annotations (`argocd::catalog::collect`), and plan the write-back of every image with
//!      supplied policies (`argocd::plan::plan`, reading each target file), without writing;
//!    * the command: `image-update update DIR --dry-run` with the 3,000 results as `--policy`
//!      values, a process (the binary this bench builds).
//! 3. Prints each, the ratios to grep (target: the command within 2x) and the spread (min..max)
//!    of each.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use image_update::api::argocd::{
    CollectOptions, DirFiles, InputFile, KnownFiles, SizeLimit, collect, plan, read_candidates,
};
use image_update::api::plan::{ImageRef, PolicyKey};

// The in-process share runs with the binary's allocator (src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn time(runs: usize, mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    f(); // warm-up (page cache)
    stats(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn write(root: &Path, rel: &str, text: &str) {
    if WRITE.with(|w| !w.get()) {
        return;
    }
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

const ALIASES: [&str; 3] = ["web", "worker", "cron"];

/// Bumped when the generated tree changes.
const GENERATOR: u32 = 1;

/// User plus system CPU time of this process (all threads) and of its waited-for children, from
/// `/proc/self/stat` (in clock ticks of 10 ms: Linux's `USER_HZ` is 100).
fn cpu() -> (Duration, Duration) {
    let stat = fs_err::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<u64> = stat
        .rsplit_once(") ")
        .unwrap()
        .1
        .split(' ')
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // After the command: state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    let tick = |n: u64| Duration::from_millis(n * 10);
    (tick(fields[11] + fields[12]), tick(fields[13] + fields[14]))
}

thread_local! {
    /// Whether `generate` writes files (not when a tree of the same size is there already).
    static WRITE: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn deployment(name: &str, images: &[String]) -> String {
    let mut s = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  labels:\n    app.kubernetes.io/name: {name}\n    app.kubernetes.io/part-of: bench\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: {name}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: {name}\n    spec:\n      containers:\n"
    );
    for (alias, image) in ALIASES.iter().zip(images) {
        let _ = write!(
            s,
            "        - name: {alias}\n          image: {image}\n          ports:\n            - containerPort: 8080\n          resources:\n            requests: {{cpu: 50m, memory: 64Mi}}\n            limits: {{memory: 256Mi}}\n          readinessProbe:\n            httpGet: {{path: /healthz, port: 8080}}\n"
        );
    }
    s
}

/// Generate the repository; returns the chosen image of every policy key.
fn generate(root: &Path, apps: usize) -> BTreeMap<PolicyKey, ImageRef> {
    // Creating 4,500 files takes longer than everything measured; a tree generated for the same
    // count by this code is reused.
    let stamp = root.join(".generated");
    let want = format!("{apps} generator {GENERATOR}\n");
    let reuse = fs_err::read_to_string(&stamp).is_ok_and(|s| s == want);
    WRITE.with(|w| w.set(!reuse));
    if !reuse && root.exists() {
        fs_err::remove_dir_all(root).unwrap();
    }
    let mut chosen = BTreeMap::new();
    for i in 0..apps {
        let name = format!("svc-{i:04}");
        let repos: Vec<String> = ALIASES
            .iter()
            .map(|a| format!("registry.example.test/team-{}/{name}-{a}", i % 17))
            .collect();
        let old: Vec<String> = repos
            .iter()
            .enumerate()
            .map(|(k, r)| format!("{r}:1.{}.{k}", i % 9))
            .collect();
        for (alias, repo) in ALIASES.iter().zip(&repos) {
            chosen.insert(
                PolicyKey::parse(&format!("argocd:{name}/{alias}")).unwrap(),
                ImageRef::parse(&format!("{repo}:1.{}.9", i % 9)).unwrap(),
            );
        }
        let image_list: Vec<String> = ALIASES
            .iter()
            .zip(&repos)
            .map(|(a, r)| format!("{a}={r}:^1"))
            .collect();
        let kind = i % 3;
        let (path, extra_annotations, source_extra) = match kind {
            0 => (
                format!("services/{name}"),
                String::new(),
                "    kustomize:\n      commonLabels: {tier: backend}\n".to_owned(),
            ),
            1 => {
                let mut helm = String::new();
                for a in ALIASES {
                    let _ = write!(
                        helm,
                        "    argocd-image-updater.argoproj.io/{a}.helm.image-name: {a}.image.repository\n    argocd-image-updater.argoproj.io/{a}.helm.image-tag: {a}.image.tag\n"
                    );
                }
                helm.push_str(
                    "    argocd-image-updater.argoproj.io/write-back-target: helmvalues\n",
                );
                (
                    format!("charts/{name}"),
                    helm,
                    "    helm:\n      releaseName: bench\n      valueFiles: [values.yaml]\n"
                        .to_owned(),
                )
            }
            _ => (
                format!("overlays/{name}"),
                "    argocd-image-updater.argoproj.io/write-back-target: kustomization\n"
                    .to_owned(),
                String::new(),
            ),
        };
        write(
            root,
            &format!("argocd/apps/{name}.yaml"),
            &format!(
                "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: {name}\n  namespace: argocd\n  labels:\n    team: team-{}\n  finalizers:\n  - resources-finalizer.argocd.argoproj.io\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: {}\n    argocd-image-updater.argoproj.io/web.update-strategy: semver\n    argocd-image-updater.argoproj.io/worker.ignore-tags: \"*-rc*, *-dev\"\n    argocd-image-updater.argoproj.io/write-back-method: git\n    argocd-image-updater.argoproj.io/git-branch: main\n{extra_annotations}spec:\n  project: team-{}\n  source:\n    repoURL: https://git.example.test/acme/fleet.git\n    targetRevision: main\n    path: {path}\n{source_extra}  destination:\n    server: https://kubernetes.default.svc\n    namespace: {name}\n  syncPolicy:\n    automated: {{prune: true, selfHeal: true}}\n    syncOptions: [CreateNamespace=true]\n",
                i % 17,
                image_list.join(", "),
                i % 17,
            ),
        );
        let service = format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\nspec:\n  selector:\n    app.kubernetes.io/name: {name}\n  ports:\n  - port: 80\n    targetPort: 8080\n"
        );
        match kind {
            0 => {
                write(
                    root,
                    &format!("{path}/deployment.yaml"),
                    &deployment(&name, &old),
                );
                write(root, &format!("{path}/service.yaml"), &service);
                write(
                    root,
                    &format!("{path}/kustomization.yaml"),
                    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- deployment.yaml\n- service.yaml\n",
                );
                if i % 2 == 0 {
                    let mut o = String::from("kustomize:\n  images:\n");
                    for image in &old {
                        let _ = writeln!(o, "  - {image}");
                    }
                    write(root, &format!("{path}/.argocd-source-{name}.yaml"), &o);
                }
            }
            1 => {
                write(
                    root,
                    &format!("{path}/Chart.yaml"),
                    &format!("apiVersion: v2\nname: {name}\nversion: 0.1.{i}\n"),
                );
                let mut values = String::from("# Values for the bench chart.\nreplicaCount: 2\n\n");
                for (a, image) in ALIASES.iter().zip(&old) {
                    let (repo, tag) = image.rsplit_once(':').unwrap();
                    let _ = write!(
                        values,
                        "{a}:\n  image:\n    repository: {repo}\n    tag: {tag}   # updated by image-update\n    pullPolicy: IfNotPresent\n  resources:\n    limits: {{memory: 256Mi}}\n\n"
                    );
                }
                write(root, &format!("{path}/values.yaml"), &values);
                write(
                    root,
                    &format!("{path}/templates/deployment.yaml"),
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  template:\n    spec:\n      containers:\n      - name: web\n        image: \"{{ .Values.web.image.repository }}:{{ .Values.web.image.tag }}\"\n",
                );
            }
            _ => {
                write(
                    root,
                    &format!("base/{name}/deployment.yaml"),
                    &deployment(&name, &old),
                );
                write(root, &format!("base/{name}/service.yaml"), &service);
                write(
                    root,
                    &format!("base/{name}/kustomization.yaml"),
                    "resources:\n- deployment.yaml\n- service.yaml\n",
                );
                let mut k = format!(
                    "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../../base/{name}\nnamespace: {name}\n\nimages:\n"
                );
                for (repo, image) in repos.iter().zip(&old) {
                    let tag = image.rsplit_once(':').unwrap().1;
                    let _ = write!(k, "- name: {repo}\n  newTag: {tag}\n");
                }
                write(root, &format!("{path}/kustomization.yaml"), &k);
            }
        }
    }
    if !reuse {
        fs_err::write(&stamp, want).unwrap();
    }
    chosen
}

/// The size of every YAML file under `dir`.
fn file_sizes(dir: &Path) -> Vec<u64> {
    let mut out = Vec::new();
    for entry in fs_err::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            out.extend(file_sizes(&entry.path()));
        } else if entry
            .path()
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml")
        {
            out.push(meta.len());
        }
    }
    out
}

/// Read the candidate files and plan every write-back; returns (files planned, changes) and the
/// time of each phase (walk and read, collect, plan).
fn run(
    root: &Path,
    chosen: &BTreeMap<PolicyKey, ImageRef>,
) -> (usize, usize, [Duration; 3], [Duration; 3]) {
    let limit = SizeLimit(64 << 20);
    let c0 = cpu().0;
    let t0 = Instant::now();
    // The walk reads every file once: Argo CD objects are parsed, likely targets kept for the plan.
    let walked = read_candidates(root, limit).unwrap();
    let mut known = std::collections::HashMap::new();
    let mut argo = Vec::new();
    for (rel, holds, text) in walked {
        if holds {
            argo.push((rel, text));
        } else {
            known.insert(rel, text);
        }
    }
    let inputs: Vec<InputFile<'_>> = argo
        .iter()
        .map(|(rel, text)| InputFile {
            origin: rel.clone(),
            tree_path: Some(rel.clone()),
            text,
        })
        .collect();
    let t1 = Instant::now();
    let c1 = cpu().0;
    let catalog = collect(&inputs, &CollectOptions::default()).unwrap();
    let t2 = Instant::now();
    let c2 = cpu().0;
    // The bench's tree holds no symlinks: every file read is a regular one.
    let regular = known.keys().cloned().collect();
    let files = KnownFiles::new(known, regular, DirFiles::new(root, limit).unwrap());
    let lookup = |k: &PolicyKey| chosen.get(k).cloned();
    let wb = plan(&catalog, &lookup, &files).unwrap();
    let t3 = Instant::now();
    let c3 = cpu().0;
    (
        wb.files.len(),
        wb.files.iter().map(|f| f.changes.len()).sum(),
        [t1 - t0, t2 - t1, t3 - t2],
        [c1 - c0, c2 - c1, c3 - c2],
    )
}

fn main() {
    let apps: usize = std::env::var("BENCH_APPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(11);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-data/argocd");
    let chosen = generate(&root, apps);
    let sizes = file_sizes(&root);
    let bytes: u64 = sizes.iter().sum();
    println!(
        "repository: {apps} Applications, {} images; {} YAML files, {:.1} MB",
        chosen.len(),
        sizes.len(),
        bytes as f64 / 1e6
    );
    let (files, changes, _, _) = run(&root, &chosen);
    println!("plan: {files} files to write, {changes} changed values");
    // The parser alone, on one thread, over the Applications (what collect parses).
    let apps_text: Vec<String> = read_candidates(&root, SizeLimit(64 << 20))
        .unwrap()
        .into_iter()
        .filter_map(|(_, holds, text)| holds.then_some(text))
        .collect();
    let app_bytes: usize = apps_text.iter().map(String::len).sum();
    let (parse, _, _) = time(5, || {
        for t in &apps_text {
            let _ = image_update::api::argocd::Tree::parse(t).unwrap();
        }
    });
    println!(
        "parse alone: {} Application files, {:.2} MB in {:.1} ms on one thread ({:.0} MB/s)",
        apps_text.len(),
        app_bytes as f64 / 1e6,
        parse.as_secs_f64() * 1e3,
        app_bytes as f64 / 1e6 / parse.as_secs_f64()
    );
    let grep_cpu0 = cpu().1;
    let grep = time(runs, || {
        let _ = Command::new("grep")
            .args(["-rl", "argocd-image-updater"])
            .arg(&root)
            .stdout(Stdio::null())
            .status();
    });
    let grep_cpu = (cpu().1 - grep_cpu0) / (runs as u32 + 1);
    let mut phases: Vec<[Duration; 3]> = Vec::new();
    let mut phase_cpu = [Duration::ZERO; 3];
    let ours_cpu0 = cpu().0;
    let ours = time(runs, || {
        let (_, _, wall, cpu) = run(&root, &chosen);
        phases.push(wall);
        for (total, c) in phase_cpu.iter_mut().zip(cpu) {
            *total += c;
        }
    });
    let ours_cpu = (cpu().0 - ours_cpu0) / (runs as u32 + 1);
    // The command a user runs: `image-update update DIR --dry-run`, the 3,000 results given as
    // `--policy` values, a process as grep is (its marker scan, report and output included).
    let policy_args: Vec<String> = chosen
        .iter()
        .map(|(k, v)| format!("--policy={k}={v}"))
        .collect();
    let cli_cpu0 = cpu().1;
    let cli = time(runs, || {
        let status = Command::new(env!("CARGO_BIN_EXE_image-update"))
            .arg("update")
            .arg(&root)
            .arg("--dry-run")
            .args(&policy_args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "image-update update --dry-run failed");
    });
    let cli_cpu = (cpu().1 - cli_cpu0) / (runs as u32 + 1);
    let phase = |i: usize| {
        let mut v: Vec<Duration> = phases.iter().map(|p| p[i]).collect();
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    let show = |(m, lo, hi): (Duration, Duration, Duration)| {
        format!(
            "{:.1} ms (min {:.1}, max {:.1})",
            m.as_secs_f64() * 1e3,
            lo.as_secs_f64() * 1e3,
            hi.as_secs_f64() * 1e3
        )
    };
    println!("median of {runs} runs, warm cache:");
    println!("  grep -rl argocd-image-updater DIR   {}", show(grep));
    println!("  walk + read + collect + plan         {}", show(ours));
    println!(
        "    of which walk + read {:.1} ms, collect {:.1} ms, plan {:.1} ms (medians)",
        phase(0),
        phase(1),
        phase(2)
    );
    println!(
        "  ratio: {:.2}x grep",
        ours.0.as_secs_f64() / grep.0.as_secs_f64()
    );
    println!("  image-update update DIR --dry-run      {}", show(cli));
    println!(
        "  ratio: {:.2}x grep (target: at most 2x)",
        cli.0.as_secs_f64() / grep.0.as_secs_f64()
    );
    println!(
        "  CPU time per run (user + system, all threads): grep {:.1} ms, ours {:.1} ms ({:.2}x)",
        grep_cpu.as_secs_f64() * 1e3,
        ours_cpu.as_secs_f64() * 1e3,
        ours_cpu.as_secs_f64() / grep_cpu.as_secs_f64()
    );
    println!(
        "  CPU time per run of the command: {:.1} ms ({:.2}x grep)",
        cli_cpu.as_secs_f64() * 1e3,
        cli_cpu.as_secs_f64() / grep_cpu.as_secs_f64()
    );
    let per = |d: Duration| d.as_secs_f64() * 1e3 / (runs + 1) as f64;
    println!(
        "    of which walk + read {:.1} ms, collect {:.1} ms, plan {:.1} ms",
        per(phase_cpu[0]),
        per(phase_cpu[1]),
        per(phase_cpu[2])
    );
}
