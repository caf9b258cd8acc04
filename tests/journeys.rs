//! Journeys: what users chain, end to end, on the git bed (lighttpd + `git-http-backend`, a bare
//! `github.com/acme/fleet`) with a real `docker-registry` as `ghcr.io` and the fake GitHub, all
//! behind [`image_update_testkit::world`]. Each journey runs its last step twice: the second run
//! has nothing to do, exits 0 and pushes nothing.
//!
//! * `flux`: a Flux fleet repository (`testdata/journeys/flux/`: `gotk-sync.yaml`, the
//!   ImageRepositories and ImagePolicies, an ImageUpdateAutomation, all committed). `deploy`
//!   (one CronJob, then `--fleet`), then the CronJob's container run exactly as written (its
//!   arguments, its environment from the git Secret, its ConfigMap files laid out as the kubelet
//!   lays them out: [`image_update_testkit::job::Pod`]), pushing; then the same with
//!   `--pull-request`, opening one request.
//! * `argocd`: an Argo CD Image Updater repository (`testdata/journeys/argocd/`: an Application
//!   with annotations and a Kustomize write-back, one named by an `ImageUpdater` CR with a Helm
//!   write-back and a pull request, one whose `repoURL` is another repository): the Job writes
//!   the first back to `main`, opens the request for the second, and warns about the third.
//! * `kubesphere`: a KubeSphere repository (`testdata/journeys/kubesphere/`): `create
//!   imageupdater` for both kinds, committed and pushed, then `update --automation` (a
//!   preview), `job` and `deploy`'s CronJob.
//!
//! The README's section "Journeys" walks through the first two as a newcomer types them; those
//! blocks run in `tests/docs.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fs_err as fs;
use image_update_testkit::forge::Flavor;
use image_update_testkit::job::{Pod, Ran};
use image_update_testkit::world::{REPOSITORY, TOKEN, World};
use image_update_testkit::{Unmet, gated};
use libtest_mimic::{Failed, Trial};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn main() {
    let trials: Vec<Trial> = vec![
        gated("flux", || gate(true), |()| flux()),
        gated("argocd", || gate(true), |()| argocd()),
        gated("kubesphere", || gate(false), |()| kubesphere()),
    ];
    image_update_testkit::run(trials);
}

/// The programs of the bed, and the fake GitHub's API description for pull requests.
fn gate(pull_request: bool) -> Result<(), Unmet> {
    Unmet::programs(&["git", "docker-registry", "lighttpd"])?;
    let description = Flavor::GitHub.description_path();
    if pull_request && !description.is_file() {
        return Err(Unmet::Missing(format!(
            "needs {} (bash scripts/api-descriptions.sh)",
            description.display()
        )));
    }
    Ok(())
}

/// A journey's world, with the images it finds and a scratch directory.
struct Bed {
    world: World,
    temp: tempfile::TempDir,
    ca: PathBuf,
}

impl Bed {
    fn start() -> Result<Bed, Failed> {
        let world = World::start()?;
        world
            .registry
            .push_one_image("acme/web", &["2.4.0", "2.4.1", "2.5.0"]);
        world
            .registry
            .push_one_image("acme/api", &["1.0.0", "1.1.0", "1.1.2", "2.0.0"]);
        let temp = tempfile::Builder::new()
            .prefix("image-update-journey")
            .tempdir()?;
        let ca = world.ca_file(temp.path())?;
        Ok(Bed { world, temp, ca })
    }

    /// A fresh directory under the scratch directory.
    fn dir(&self, name: &str) -> Result<PathBuf, Failed> {
        let dir = self.temp.path().join(name);
        fs::create_dir_all(&dir)?;
        Ok(dir)
    }

    /// `image-update ARGS` in `dir`, on this bed's network, with the documents' token.
    fn image_update(&self, dir: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(dir)
            .env_clear()
            .env("HOME", self.temp.path())
            .env("TMPDIR", self.temp.path())
            .env("IMAGE_UPDATE_GIT_TOKEN", TOKEN)
            .stdin(Stdio::null());
        self.world.network(&mut command, &self.ca);
        command
    }

    /// The content of `path` on `main` of `github.com/acme/fleet`.
    fn file(&self, path: &str) -> Result<String, Failed> {
        self.world.git(&["show", &format!("main:{path}")])
    }

    /// A work tree of `github.com/acme/fleet` (a local clone of its bare repository).
    fn clone(&self, name: &str) -> Result<PathBuf, Failed> {
        let dir = self.temp.path().join(name);
        let bare = self.world.bare();
        self.world.git.git_out(
            self.temp.path(),
            &[
                "clone",
                "-q",
                &bare.to_string_lossy(),
                &dir.to_string_lossy(),
            ],
        )?;
        Ok(dir)
    }
}

fn output(command: &mut Command) -> Result<Output, Failed> {
    Ok(command.output()?)
}

fn success(what: &str, out: &Output) -> Result<String, Failed> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{what}: {}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into())
    }
}

fn ensure(condition: bool, message: impl FnOnce() -> String) -> Result<(), Failed> {
    if condition {
        Ok(())
    } else {
        Err(message().into())
    }
}

fn objects(yaml: &str) -> Result<Vec<Value>, Failed> {
    Ok(image_update::api::yaml::parse_values(yaml)
        .map_err(|e| format!("deploy's output: {e}"))?
        .into_iter()
        .filter(|v| !v.is_null())
        .collect())
}

fn names_of(objects: &[Value], kind: &str) -> Vec<String> {
    objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_owned))
        .collect()
}

/// Runs `command` twice: the first run ends with `first` (exit 0) and moves a ref of the
/// repository; the second has nothing to do, exits 0 and moves none. The first run's outcome.
fn twice(bed: &Bed, first: &str, mut command: impl FnMut(u32) -> Command) -> Result<Ran, Failed> {
    let before = bed.world.refs()?;
    let ran = Ran::run(&mut command(1))?;
    ran.expect(0, first)?;
    let after = bed.world.refs()?;
    ensure(after != before, || {
        format!("the first run moved no ref of {REPOSITORY}: {after:?}")
    })?;
    let again = Ran::run(&mut command(2))?;
    again.expect(0, "nothingToDo")?;
    let last = bed.world.refs()?;
    ensure(last == after, || {
        format!(
            "the second run moved a ref: {after:?} -> {last:?}\n{}",
            again.stderr
        )
    })?;
    Ok(ran)
}

// ------------------------------------------------------------ flux

/// The git Secret `flux-system` that `gotk-sync.yaml`'s GitRepository names, as the cluster holds it.
const FLUX_SECRET: &[(&str, &[(&str, &str)])] = &[(
    "flux-system",
    &[("username", "x-access-token"), ("password", TOKEN)],
)];

const FLUX_INPUTS: [&str; 4] = [
    "clusters/prod/flux-system/gotk-sync.yaml",
    "clusters/prod/image-automation.yaml",
    "clusters/prod/web.yaml",
    "clusters/prod/api.yaml",
];

fn flux_updated(bed: &Bed, branch: &str) -> Result<(), Failed> {
    for (path, image) in [
        ("apps/web/deployment.yaml", "ghcr.io/acme/web:2.4.1"),
        ("apps/api/deployment.yaml", "ghcr.io/acme/api:1.1.2"),
    ] {
        let text = bed.world.git(&["show", &format!("{branch}:{path}")])?;
        ensure(text.contains(image), || {
            format!("{branch}:{path} does not name {image}:\n{text}")
        })?;
    }
    Ok(())
}

fn flux() -> Result<(), Failed> {
    let bed = Bed::start()?;
    let tree = root().join("testdata/journeys/flux");
    for fleet in [None, Some("fleet")] {
        bed.world.seed(&tree)?;
        let mut args = vec!["deploy"];
        if let Some(fleet) = fleet {
            args.extend(["--fleet", fleet]);
        }
        args.extend(FLUX_INPUTS);
        let out = output(&mut bed.image_update(&tree, &args))?;
        let yaml = success("deploy", &out)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        // gotk-sync.yaml's Kustomization is passed over, with a note.
        ensure(
            stderr.contains("passed over Kustomization flux-system/flux-system"),
            || format!("deploy's stderr has no note on the Kustomization:\n{stderr}"),
        )?;
        let objects = objects(&yaml)?;
        let workloads = names_of(&objects, "CronJob");
        let [workload] = workloads.as_slice() else {
            return Err(format!("deploy wrote CronJobs {workloads:?}, not one").into());
        };
        let label = fleet.unwrap_or("single");
        twice(&bed, "pushed", |round| {
            let pod_root = bed.dir(&format!("{label}-pod-{round}")).unwrap();
            let pod =
                Pod::of(&objects, workload, &pod_root, FLUX_SECRET, fleet.map(|_| 0)).unwrap();
            let mut command = pod.command(Path::new(BIN));
            bed.world.network(&mut command, &bed.ca);
            command
        })?;
        flux_updated(&bed, "main")?;
    }

    // The CronJob's command with --pull-request: the commit goes to a branch of its own, and
    // one request is opened; the second run finds it up to date.
    bed.world.seed(&tree)?;
    let out = output(&mut bed.image_update(&tree, &[&["deploy"], &FLUX_INPUTS[..]].concat()))?;
    let objects = objects(&success("deploy", &out)?)?;
    let forge = bed.world.forge.as_ref().ok_or("no fake GitHub")?;
    let ran = twice(&bed, "pushed", |round| {
        let pod_root = bed.dir(&format!("pull-request-pod-{round}")).unwrap();
        let pod = Pod::of(
            &objects,
            "image-update-flux-system",
            &pod_root,
            FLUX_SECRET,
            None,
        )
        .unwrap();
        let mut command = pod.command(Path::new(BIN));
        command.arg("--pull-request");
        bed.world.network(&mut command, &bed.ca);
        command
    })?;
    let pulls = forge.pulls();
    ensure(pulls.len() == 1, || {
        format!("{} requests: {pulls:#?}", pulls.len())
    })?;
    let head = &pulls[0].head;
    ensure(pulls[0].base == "main", || {
        format!("base {}", pulls[0].base)
    })?;
    flux_updated(&bed, head)?;
    ensure(
        bed.file("apps/web/deployment.yaml")?.contains("web:2.4.0"),
        || "main was changed".to_owned(),
    )?;
    ensure(forge.violations().is_empty(), || {
        format!("{:?}", forge.violations())
    })?;
    // The request's page under the name users see (the fake forge names pages as github.com).
    let request = &ran.status["pullRequest"];
    ensure(
        request["action"] == "created"
            && request["url"] == "https://github.com/acme/fleet/pull/1"
            && request["head"] == head.as_str(),
        || format!("the status's pullRequest: {request:#}"),
    )?;
    Ok(())
}

// ------------------------------------------------------------ argocd

fn argocd() -> Result<(), Failed> {
    let bed = Bed::start()?;
    let tree = root().join("testdata/journeys/argocd");
    bed.world.seed(&tree)?;
    let forge = bed.world.forge.as_ref().ok_or("no fake GitHub")?;
    let work = bed.dir("argocd")?;
    let job = || {
        bed.image_update(
            &work,
            &[
                "job",
                "--url",
                "https://github.com/acme/fleet",
                "--fetch",
                "--author-name",
                "image-updater",
                "--author-email",
                "bot@acme.example",
            ],
        )
    };
    // The annotated Application pushes to main, the ImageUpdater's asks for a request: one run
    // pushes one branch, so the first run writes back the first (base branch first) and leaves
    // the second for the next run, with a warning.
    let before = bed.world.refs()?;
    let first = Ran::run(&mut job())?;
    first.expect(0, "pushed")?;
    ensure(bed.world.refs()? != before, || {
        "the first run moved no ref".to_owned()
    })?;
    ensure(forge.pulls().is_empty(), || {
        "the first run opened a request".to_owned()
    })?;
    let warnings = &first.stderr;
    ensure(
        warnings.contains("Application argocd/api pushes to branch image-updater-")
            && warnings.contains("left for the next run"),
        || format!("no warning about argocd/api: {warnings}"),
    )?;
    let ran = twice(&bed, "pushed", |_| job())?;
    // The annotated Application's Kustomize write-back, on main.
    let kustomization = bed.file("apps/web/kustomization.yaml")?;
    ensure(kustomization.contains("2.4.1"), || {
        format!("apps/web/kustomization.yaml:\n{kustomization}")
    })?;
    ensure(ran.status["pullRequest"]["action"] == "created", || {
        format!("the status's pullRequest: {:#}", ran.status["pullRequest"])
    })?;
    // The ImageUpdater CR's Helm write-back, in a pull request.
    let pulls = forge.pulls();
    ensure(pulls.len() == 1, || {
        format!("{} requests: {pulls:#?}", pulls.len())
    })?;
    let values = bed
        .world
        .git(&["show", &format!("{}:charts/api/values.yaml", pulls[0].head)])?;
    ensure(values.contains("tag: 1.1.2"), || {
        format!("values.yaml:\n{values}")
    })?;
    ensure(
        bed.file("charts/api/values.yaml")?.contains("tag: 1.0.0"),
        || "main's values.yaml was changed".to_owned(),
    )?;
    ensure(pulls[0].labels == ["images"], || {
        format!("labels {:?}", pulls[0].labels)
    })?;
    // The Application of another repository: a warning naming it, its repoURL and the clone's.
    let warnings = &ran.stderr;
    ensure(
        // At the file's path in the repository, not in the run's temporary work tree.
        warnings.contains("\nargocd/legacy.yaml:12:14: warning: Application argocd/legacy")
            && warnings.contains("https://github.com/acme/legacy"),
        || {
            format!(
                "no warning about Application argocd/legacy: {warnings}\n{}",
                ran.stderr
            )
        },
    )?;
    ensure(forge.violations().is_empty(), || {
        format!("{:?}", forge.violations())
    })?;
    Ok(())
}

// ------------------------------------------------------------ kubesphere

/// The git Secret `fleet-git` that the KubeSphere repository's GitRepository names.
const FLEET_SECRET: &[(&str, &[(&str, &str)])] = &[(
    "fleet-git",
    &[("username", "x-access-token"), ("password", TOKEN)],
)];

fn kubesphere() -> Result<(), Failed> {
    let bed = Bed::start()?;
    let tree = root().join("testdata/journeys/kubesphere");
    bed.world.seed(&tree)?;
    let clone = bed.clone("kubesphere")?;
    // Both kinds, written by `create imageupdater` and committed.
    let created = [
        (
            "clusters/my-cluster/imageupdater.yaml",
            vec![
                "create",
                "imageupdater",
                "web",
                "--namespace",
                "demo",
                "--kind",
                "fluxcd",
                "--image",
                "web=ghcr.io/acme/web",
                "--select-semver",
                "~2.4",
                "--git-repo-ref",
                "fleet",
                "--git-repo-path",
                "./clusters/my-cluster",
                "--checkout-branch",
                "main",
                "--author-name",
                "fluxbot",
                "--author-email",
                "fluxbot@acme.example",
            ],
        ),
        (
            "argocd/imageupdater.yaml",
            vec![
                "create",
                "imageupdater",
                "shop",
                "--namespace",
                "demo",
                "--kind",
                "argocd",
                "--image",
                "ghcr.io/acme/api:^1",
                "--app",
                "shop",
                "--write",
                "built-in",
            ],
        ),
    ];
    for (path, args) in &created {
        let out = output(&mut bed.image_update(&clone, args))?;
        fs::write(clone.join(path), success("create imageupdater", &out)?)?;
    }
    let git = |args: &[&str]| bed.world.git.git_out(&clone, args);
    git(&["add", "-A"])?;
    git(&["commit", "-q", "-m", "Image updaters"])?;
    git(&["push", "-q", "origin", "HEAD:main"])?;

    // update --automation: a preview of the automation's change, in the clone.
    let out = output(&mut bed.image_update(
        &clone,
        &[
            "update",
            ".",
            "--automation",
            "clusters/my-cluster/imageupdater.yaml",
            "--fetch",
            "--dry-run",
        ],
    ))?;
    let preview = success("update --automation", &out)? + &String::from_utf8_lossy(&out.stderr);
    ensure(preview.contains("ghcr.io/acme/web:2.4.1"), || {
        format!("update --automation --dry-run shows no change to 2.4.1:\n{preview}")
    })?;

    // job: the fluxcd automation and the argocd write-back, both from the repository; the
    // argocd updater named with --policies too (its Application only in the clone).
    twice(&bed, "pushed", |_| {
        bed.image_update(
            &clone,
            &[
                "job",
                "--url",
                "https://github.com/acme/fleet",
                "--policies",
                "argocd/imageupdater.yaml",
                "--fetch",
                "--author-name",
                "fluxbot",
                "--author-email",
                "fluxbot@acme.example",
            ],
        )
    })?;
    let web = bed.file("clusters/my-cluster/web.yaml")?;
    ensure(web.contains("ghcr.io/acme/web:2.4.1"), || {
        format!("web.yaml:\n{web}")
    })?;
    let shop = bed.file("argocd/shop.yaml")?;
    ensure(shop.contains("ghcr.io/acme/api:1.1.2"), || {
        format!("shop.yaml:\n{shop}")
    })?;

    // deploy: the fluxcd ImageUpdater's CronJob, run as the kubelet runs it: nothing left to do.
    let out = output(&mut bed.image_update(
        &clone,
        &[
            "deploy",
            "clusters/my-cluster/imageupdater.yaml",
            "clusters/my-cluster/gitrepository.yaml",
        ],
    ))?;
    let objects = objects(&success("deploy", &out)?)?;
    let workloads = names_of(&objects, "CronJob");
    let [workload] = workloads.as_slice() else {
        return Err(format!("deploy wrote CronJobs {workloads:?}, not one").into());
    };
    bed.world.seed(&tree)?;
    git(&["push", "-q", "--force", "origin", "HEAD:main"])?;
    twice(&bed, "pushed", |round| {
        let pod_root = bed.dir(&format!("kubesphere-pod-{round}")).unwrap();
        let pod = Pod::of(&objects, workload, &pod_root, FLEET_SECRET, None).unwrap();
        let mut command = pod.command(Path::new(BIN));
        bed.world.network(&mut command, &bed.ca);
        command
    })?;
    let web = bed.file("clusters/my-cluster/web.yaml")?;
    ensure(web.contains("ghcr.io/acme/web:2.4.1"), || {
        format!("web.yaml:\n{web}")
    })?;
    // The argocd updater's write-back (argocd/shop.yaml) is outside the automation's update path:
    // not written, and not in the commit message.
    let message = bed.world.git(&["log", "-1", "--format=%B", "main"])?;
    ensure(!message.contains("shop"), || {
        format!("the commit message names Application shop, which was not written:\n{message}")
    })?;
    ensure(bed.file("argocd/shop.yaml")?.contains("api:1.0.0"), || {
        "argocd/shop.yaml was written".to_owned()
    })?;
    Ok(())
}
