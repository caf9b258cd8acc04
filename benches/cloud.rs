//! Cloud logins' cost: `image-update update --fetch` over 100 ImageRepositories with
//! `provider: aws` in one ECR registry makes **one** `ecr:GetAuthorizationToken` call, and what
//! the login adds to a run's time.
//!
//! Starts moto (`moto_server`, from PyPI: its ECR checks every request's Signature Version 4 and
//! the key's IAM permissions), a counting forwarder in front of it, Debian's `docker-registry`
//! (htpasswd, accepting the password moto's ECR hands out) reached under the name
//! `123456789012.dkr.ecr.eu-west-1.amazonaws.com` through a loopback CONNECT proxy, pushes
//! `BENCH_IMAGES` (100) repositories, and then alternates, after one warm-up of each,
//! `BENCH_RUNS` (11) runs of:
//!
//! * `image-update update --fetch --dry-run TREE` with the AWS keys in the environment (the
//!   login: `GetAuthorizationToken`, signed), counting the calls moto received in each run;
//! * the same definitions without a provider, the registry's password given as
//!   `IMAGE_UPDATE_REGISTRY_<HOST>_*` variables (no login): the baseline.
//!
//! Run: `cargo bench --bench cloud` (needs `docker-registry` and `moto_server`; fails, naming
//! them, when they are missing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benchmark code

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use image_update_testkit::cloud::{ConnectProxy, MOTO_ACCOUNT, Moto, forwarder, moto_ecr_password};
use image_update_testkit::registry::{Auth, ImageSpec, Registry};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const ECR: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
const TARGET: &str = "AmazonEC2ContainerRegistry_V20150921.GetAuthorizationToken";

#[path = "common/measure.rs"]
mod measure;

use measure::{checked, env_number, load, summary};

fn main() {
    let missing = image_update_testkit::missing(&["docker-registry", "moto_server"]);
    assert!(
        missing.is_empty(),
        "the cloud benchmark needs {} (apt-get install docker-registry; pip install 'moto[server]')",
        missing.join(" and ")
    );
    let images = env_number("BENCH_IMAGES", 100);
    let runs = env_number("BENCH_RUNS", 11);
    println!("load average before: {}", load());

    let moto = Moto::start();
    let (id, secret) = moto.user("bench", &["ecr:GetAuthorizationToken"]);
    moto.require_auth(0);
    let front = forwarder(&format!("127.0.0.1:{}", moto.port));
    let password = moto_ecr_password(MOTO_ACCOUNT);
    let reg = Registry::start(Auth::Htpasswd {
        user: "AWS".to_owned(),
        password: password.clone(),
    });
    let spec = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let push_start = Instant::now();
    let mut definitions = String::new();
    let mut markers = String::from("containers:\n");
    for i in 0..images {
        let name = format!("app{i:03}");
        let (manifest, _) = reg.push_image(&format!("team/{name}"), "1.0.0", &spec);
        reg.push_tags(
            &format!("team/{name}"),
            spec.media_type(),
            &manifest,
            &["1.1.0".to_owned(), "2.0.0".to_owned()],
        );
        let _ = write!(
            definitions,
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: flux-system}}\nspec: {{image: {ECR}/team/{name}, interval: 5m, provider: aws}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: {name}}}\n  policy: {{semver: {{range: '^1'}}}}\n---\n"
        );
        let _ = writeln!(
            markers,
            "- image: {ECR}/team/{name}:1.0.0 # {{\"$imagepolicy\": \"flux-system:{name}\"}}"
        );
    }
    println!(
        "pushed {images} repositories in {:.1} s",
        push_start.elapsed().as_secs_f64()
    );
    let proxy = ConnectProxy::start(&[(ECR, reg.authority())]);
    let work = tempfile::tempdir().unwrap();
    let home = work.path().join("home");
    let root = work.path().join("repo");
    fs_err::create_dir_all(&home).unwrap();
    fs_err::create_dir_all(root.join("flux")).unwrap();
    fs_err::create_dir_all(root.join("apps")).unwrap();
    fs_err::write(root.join("flux/images.yaml"), &definitions).unwrap();
    fs_err::write(root.join("apps/pods.yaml"), &markers).unwrap();
    let settings = work.path().join("registries.yaml");
    fs_err::write(
        &settings,
        format!(
            "registries:\n  {ECR}:\n    insecure: true\n    proxy: {}\n",
            proxy.url()
        ),
    )
    .unwrap();
    let variable = format!(
        "IMAGE_UPDATE_REGISTRY_{}",
        ECR.to_ascii_uppercase().replace(['.', '-'], "_")
    );

    // The baseline's tree: the same definitions without a provider.
    let plain = work.path().join("plain");
    fs_err::create_dir_all(plain.join("flux")).unwrap();
    fs_err::create_dir_all(plain.join("apps")).unwrap();
    fs_err::write(
        plain.join("flux/images.yaml"),
        definitions.replace(", provider: aws}", "}"),
    )
    .unwrap();
    fs_err::write(plain.join("apps/pods.yaml"), &markers).unwrap();
    let base = |c: &mut Command, tree: &Path| {
        c.env("HOME", &home)
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .args(["update", "--fetch", "--dry-run", "--registry-config"])
            .arg(&settings)
            .arg(tree);
    };
    let expect_all = |out: &Output| {
        let text = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            text.matches("chose ").count(),
            images,
            "every policy chose a tag: {text}"
        );
    };
    let login = || {
        let before = front.count(|r| r.header("x-amz-target") == Some(TARGET));
        let mut c = Command::new(BIN);
        base(&mut c, &root);
        c.env("AWS_ACCESS_KEY_ID", &id)
            .env("AWS_SECRET_ACCESS_KEY", &secret)
            .env("AWS_ENDPOINT_URL_ECR", front.url(""));
        let out = checked("image-update update --fetch (aws login)", c.output());
        expect_all(&out);
        front.count(|r| r.header("x-amz-target") == Some(TARGET)) - before
    };
    let password_env = || {
        let mut c = Command::new(BIN);
        base(&mut c, &plain);
        c.env(format!("{variable}_USERNAME"), "AWS")
            .env(format!("{variable}_PASSWORD"), &password);
        let out = checked("image-update update --fetch (password)", c.output());
        expect_all(&out);
    };
    path_check(&root);
    path_check(&plain);

    // One warm-up of each.
    assert_eq!(login(), 1);
    password_env();
    let (mut t_login, mut t_password, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        let start = Instant::now();
        calls.push(login());
        t_login.push(start.elapsed());
        let start = Instant::now();
        password_env();
        t_password.push(start.elapsed());
    }
    let (login_median, login_text) = summary(&t_login);
    let (password_median, password_text) = summary(&t_password);
    println!(
        "{images} ImageRepositories (provider: aws) in one ECR registry; {runs} runs each, alternating; median (min to max)"
    );
    println!(
        "GetAuthorizationToken calls per run: {:?} (max {})",
        calls,
        calls.iter().max().unwrap()
    );
    println!("update --fetch --dry-run, aws login:        {login_text}");
    println!("update --fetch --dry-run, password in env:  {password_text}");
    println!(
        "the login's share: {:+.1} ms ({:.2}x)",
        login_median - password_median,
        login_median / password_median
    );
    println!("load average after: {}", load());
    assert!(calls.iter().all(|&c| c == 1), "{calls:?}");
}

/// The tree holds what the harness wrote (a guard against measuring an empty run).
fn path_check(root: &Path) {
    assert!(root.join("flux/images.yaml").is_file());
}
