//! Cloud registries through every front end that fetches, end to end: a
//! Flux `ImageRepository` with `provider: aws` (or gcp, azure), nothing
//! else but the identity in the environment, against a real
//! `docker-registry` under the cloud registry's name (a CONNECT proxy
//! reaches it; `HTTPS_PROXY`, as a corporate network sets it, or the
//! settings' `proxy`), moto's real ECR (`moto_server`, from PyPI) and loopback
//! fakes of the metadata servers. Trials are ignored with the reason when
//! a program is missing, failed when `CI` is set.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use image_update_testkit::cloud::{
    ConnectProxy, EcrBed, MOTO_ACCOUNT, MOTO_BIN, Moto, isolate, moto_ecr_password,
};
use image_update_testkit::registry::{
    Auth, FakeServer, ImageSpec, Recorded, Registry, Reply, TestCa,
};
use image_update_testkit::{self as testkit, trial};

const BIN: &str = env!("CARGO_BIN_EXE_image-update");
const ECR: &str = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
const GAR: &str = "europe-west4-docker.pkg.dev";

/// The binary, isolated from the user's credentials and cloud identity.
fn cmd(home: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env("HOME", home)
        .env_remove("DOCKER_CONFIG")
        .env_remove("REGISTRY_AUTH_FILE")
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1");
    isolate(&mut c);
    c
}

fn run(c: &mut Command) -> Output {
    c.stdin(Stdio::null()).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(root: &Path, rel: &str, text: &str) -> PathBuf {
    let path = root.join(rel);
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(&path, text).unwrap();
    path
}

fn push(reg: &Registry, repo: &str, tags: &[&str]) {
    let image = ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z");
    let (manifest, _) = reg.push_image(repo, tags[0], &image);
    let rest: Vec<String> = tags[1..].iter().map(|t| (*t).to_owned()).collect();
    reg.push_tags(repo, image.media_type(), &manifest, &rest);
}

/// An ImageRepository with `provider` and its ImagePolicy, `NAME` for
/// `HOST/team/NAME`, semver `^1`.
fn definition(name: &str, host: &str, provider: &str) -> String {
    let provider = if provider.is_empty() {
        String::new()
    } else {
        format!(", provider: {provider}")
    };
    format!(
        "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {{name: {name}, namespace: flux-system}}\nspec: {{image: {host}/team/{name}, interval: 5m{provider}}}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {{name: {name}, namespace: flux-system}}\nspec:\n  imageRepositoryRef: {{name: {name}}}\n  policy: {{semver: {{range: '^1'}}}}\n---\n"
    )
}

fn marked(name: &str, host: &str) -> String {
    format!("  - image: {host}/team/{name}:1.0.0 # {{\"$imagepolicy\": \"flux-system:{name}\"}}\n")
}

/// A tree with `names` on `host` (definitions with `provider`, one file of
/// markers): `(root, the marked file)`.
fn tree(dir: &Path, names: &[&str], host: &str, provider: &str) -> (PathBuf, PathBuf) {
    let root = dir.join("repo");
    let defs: String = names
        .iter()
        .map(|n| definition(n, host, provider))
        .collect();
    write(&root, "flux/images.yaml", &defs);
    let markers: String = names.iter().map(|n| marked(n, host)).collect();
    let file = write(&root, "apps/pods.yaml", &format!("containers:\n{markers}"));
    (root, file)
}

/// `update --fetch` over a tree of ImageRepositories with `provider: aws`,
/// nothing but the keys in the environment: the registry is reached under
/// its ECR name through `HTTPS_PROXY` with TLS (the test CA in
/// `SSL_CERT_FILE`), moto signs the password off, one login for all.
fn update_fetch_provider_aws_over_tls() {
    let ca = TestCa::for_names(&[ECR, "127.0.0.1"]);
    let bed = EcrBed::start(Some(&ca));
    let (front, id, secret, reg) = (&bed.front, &bed.id, &bed.secret, &bed.registry);
    let names = ["web", "api", "worker"];
    for n in names {
        push(reg, &format!("team/{n}"), &["1.0.0", "1.4.0", "2.0.0"]);
    }
    let proxy = ConnectProxy::start(&[(ECR, reg.authority())]);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = write(dir.path(), "ca.pem", &ca.ca_pem);
    let (root, file) = tree(dir.path(), &names, ECR, "aws");
    let out = run(cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .env("HTTPS_PROXY", proxy.url())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("SSL_CERT_FILE", &ca_file)
        .env("AWS_ACCESS_KEY_ID", id)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_ENDPOINT_URL_ECR", front.url("")));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = fs_err::read_to_string(&file).unwrap();
    for n in names {
        assert!(text.contains(&format!("{ECR}/team/{n}:1.4.0 #")), "{text}");
    }
    assert_eq!(bed.logins(), 1);
    assert!(proxy.connects().iter().all(|c| c == &format!("{ECR}:443")));
    // The same definitions with provider: generic get no login (no guessing from the host).
    let (root, _) = tree(&dir.path().join("generic"), &names, ECR, "generic");
    let out = run(cmd(dir.path())
        .args(["update", "--fetch", "--dry-run"])
        .arg(&root)
        .env("HTTPS_PROXY", proxy.url())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("SSL_CERT_FILE", &ca_file)
        .env("AWS_ACCESS_KEY_ID", id)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_ENDPOINT_URL_ECR", front.url("")));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("401"), "{}", stderr(&out));
    assert_eq!(bed.logins(), 1);
}

/// moto, a registry (plain HTTP) accepting moto's ECR password with
/// `team/web` at `tags`, and a proxy taking the ECR name to it.
fn ecr_bed(tags: &[&str]) -> (Moto, Registry, ConnectProxy) {
    let moto = Moto::start();
    let reg = Registry::start(Auth::Htpasswd {
        user: "AWS".to_owned(),
        password: moto_ecr_password(MOTO_ACCOUNT),
    });
    push(&reg, "team/web", tags);
    let proxy = ConnectProxy::start(&[(ECR, reg.authority())]);
    (moto, reg, proxy)
}

/// `--registry-provider` for definitions that name none, and the settings
/// file's `proxy` and `provider`; a failed login writes nothing.
fn update_fetch_registry_provider_flag_and_settings() {
    let (moto, _reg, proxy) = ecr_bed(&["1.0.0", "1.2.0"]);
    let dir = tempfile::tempdir().unwrap();
    let (root, file) = tree(dir.path(), &["web"], ECR, "");
    let settings = write(
        dir.path(),
        "registries.yaml",
        &format!(
            "registries:\n  {ECR}:\n    insecure: true\n    proxy: {}\n",
            proxy.url()
        ),
    );
    let base = |c: &mut Command| {
        c.args(["update", "--fetch", "--registry-config"])
            .arg(&settings)
            .arg(&root)
            .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_ENDPOINT_URL", moto.url());
    };
    // Without a provider: the registry refuses, nothing is written.
    let mut c = cmd(dir.path());
    base(&mut c);
    let out = run(&mut c);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(fs_err::read_to_string(&file).unwrap().contains(":1.0.0 #"));
    // A failed login: the error names the provider and the source, nothing written.
    let mut c = cmd(dir.path());
    base(&mut c);
    c.arg("--registry-provider")
        .arg(format!("{ECR}=aws"))
        .env_remove("AWS_ACCESS_KEY_ID");
    let out = run(&mut c);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("aws login failed")
            && stderr(&out).contains("AWS_EC2_METADATA_DISABLED"),
        "{}",
        stderr(&out)
    );
    assert!(fs_err::read_to_string(&file).unwrap().contains(":1.0.0 #"));
    // With the flag.
    let mut c = cmd(dir.path());
    base(&mut c);
    c.arg("--registry-provider").arg(format!("{ECR}=aws"));
    let out = run(&mut c);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fs_err::read_to_string(&file).unwrap().contains(":1.2.0 #"));
    // With the settings file's provider.
    fs_err::write(
        &settings,
        format!(
            "registries:\n  {ECR}:\n    insecure: true\n    proxy: {}\n    provider: aws\n",
            proxy.url()
        ),
    )
    .unwrap();
    let out = run(cmd(dir.path())
        .args([
            "policy",
            &format!("{ECR}/team/web"),
            "--semver",
            "^1",
            "--registry-config",
        ])
        .arg(&settings)
        .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
        .env("AWS_SECRET_ACCESS_KEY", "secret")
        .env("AWS_ENDPOINT_URL", moto.url()));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("1.2.0"));
    // Misspelt: a usage error before anything runs.
    let out = run(cmd(dir.path()).args([
        "update",
        "--fetch",
        "--registry-provider",
        "x.io=amazon",
        ".",
    ]));
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("is not a registry provider"),
        "{}",
        stderr(&out)
    );
}

fn metadata_server() -> FakeServer {
    FakeServer::start(|r: &Recorded| {
        if r.header("metadata-flavor") != Some("Google") {
            return Reply::status(403).with_header("Metadata-Flavor", "Google");
        }
        Reply::json(
            200,
            r#"{"access_token":"ya29.gke-token","expires_in":3599,"token_type":"Bearer"}"#,
        )
        .with_header("Metadata-Flavor", "Google")
    })
}

/// The KRM function with `fetch: true`: an ImageRepository with
/// `provider: gcp` among the items, the GKE metadata server's token, the
/// registry over TLS through `HTTPS_PROXY` (the function has no settings
/// file: the environment is all it has).
fn function_provider_gcp() {
    let metadata = metadata_server();
    let ca = TestCa::for_names(&[GAR, "127.0.0.1"]);
    let reg = Registry::start_with(
        Auth::Htpasswd {
            user: "oauth2accesstoken".to_owned(),
            password: "ya29.gke-token".to_owned(),
        },
        Some(&ca),
    );
    push(&reg, "team/web", &["1.0.0", "1.3.0"]);
    let proxy = ConnectProxy::start(&[(GAR, reg.authority())]);
    let dir = tempfile::tempdir().unwrap();
    let ca_file = write(dir.path(), "ca.pem", &ca.ca_pem);
    let input = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImageRepository\n  metadata:\n    name: web\n    namespace: flux-system\n    annotations: {{config.kubernetes.io/path: flux/images.yaml, config.kubernetes.io/index: '0'}}\n  spec: {{image: {GAR}/team/web, provider: gcp}}\n- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImagePolicy\n  metadata:\n    name: web\n    namespace: flux-system\n    annotations: {{config.kubernetes.io/path: flux/images.yaml, config.kubernetes.io/index: '1'}}\n  spec:\n    imageRepositoryRef: {{name: web}}\n    policy: {{semver: {{range: '^1'}}}}\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: web\n    annotations: {{config.kubernetes.io/path: apps/web.yaml}}\n  spec:\n    template:\n      spec:\n        containers:\n        - name: web\n          image: {GAR}/team/web:1.0.0 # {{\"$imagepolicy\": \"flux-system:web\"}}\nfunctionConfig:\n  apiVersion: fn.image-update.dev/v1alpha1\n  kind: ImageUpdate\n  metadata: {{name: fetch}}\n  fetch: true\n"
    );
    let function = |extra: &[(&str, &str)]| {
        let mut c = cmd(dir.path());
        c.arg("fn")
            .env("HTTPS_PROXY", proxy.url())
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("SSL_CERT_FILE", &ca_file)
            .env("GCE_METADATA_HOST", metadata.authority());
        for (k, v) in extra {
            c.env(k, v);
        }
        testkit::output_with_stdin(&mut c, input.as_bytes())
    };
    let out = function(&[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(
        text.contains(&format!("image: {GAR}/team/web:1.3.0 #")),
        "{text}"
    );
    assert_eq!(metadata.requests().len(), 1);
    // Without the test CA the registry's certificate is not trusted: SSL_CERT_FILE is what
    // made it so, for the registry as for every token service.
    let empty = write(dir.path(), "empty.pem", "");
    let out = function(&[("SSL_CERT_FILE", empty.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(1));
}

/// The Action: the `registry-provider` input, the identity in the step's
/// environment (as aws-actions/configure-aws-credentials leaves it).
fn action_registry_provider_input() {
    let (moto, _reg, proxy) = ecr_bed(&["1.0.0", "1.5.0"]);
    let dir = tempfile::tempdir().unwrap();
    let (root, file) = tree(dir.path(), &["web"], ECR, "");
    write(
        &root,
        "registries.yaml",
        &format!(
            "registries:\n  {ECR}:\n    insecure: true\n    proxy: {}\n",
            proxy.url()
        ),
    );
    let home = dir.path().join("home");
    fs_err::create_dir_all(&home).unwrap();
    let action = |provider: &str| {
        run(Command::new(BIN)
            .arg("action")
            .env_clear()
            .env("HOME", &home)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_WORKSPACE", &root)
            .env("INPUT_PATH", ".")
            .env("INPUT_FETCH", "true")
            .env("INPUT_REGISTRY-CONFIG", "registries.yaml")
            .env("INPUT_REGISTRY-PROVIDER", provider)
            .env("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
            .env("AWS_SECRET_ACCESS_KEY", "secret")
            .env("AWS_ENDPOINT_URL_ECR", moto.url())
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .current_dir(&root))
    };
    let out = action(&format!("{ECR}=amazon"));
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("input registry-provider"),
        "{}",
        stderr(&out)
    );
    let out = action(&format!("\n{ECR}=aws\n"));
    assert!(
        out.status.success(),
        "{}{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(fs_err::read_to_string(&file).unwrap().contains(":1.5.0 #"));
}

/// An Argo CD `pull-secret: ext:PATH` the operator allowed: the program's
/// `USER:PASSWORD` logs in to the registry, once for every image naming it.
fn update_fetch_allowed_credential_program() {
    use std::os::unix::fs::PermissionsExt;
    let reg = Registry::start(Auth::Htpasswd {
        user: "robot".to_owned(),
        password: "from-the-program".to_owned(),
    });
    let host = reg.authority();
    for n in ["web", "api"] {
        push(&reg, &format!("team/{n}"), &["1.0.0", "1.1.0"]);
    }
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let creds = write(
        &dir.path().join("bin"),
        "creds",
        &format!(
            "#!/bin/sh
echo x >> '{}'
echo robot:from-the-program
",
            runs.display()
        ),
    );
    fs_err::set_permissions(&creds, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("repo");
    write(
        &root,
        "apps/shop.yaml",
        &format!(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  namespace: argocd\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web={host}/team/web:^1, api={host}/team/api:^1\n    argocd-image-updater.argoproj.io/web.pull-secret: ext:{c}\n    argocd-image-updater.argoproj.io/api.pull-secret: ext:{c}\nspec:\n  source: {{repoURL: https://git.example.test/fleet.git, path: shop, kustomize: {{}}}}\n  destination: {{namespace: shop}}\n",
            c = creds.display()
        ),
    );
    write(&root, "shop/kustomization.yaml", "resources: []\n");
    let out = run(cmd(dir.path())
        .args(["update", "--fetch"])
        .arg(&root)
        .arg("--allow-credential-program")
        .arg(format!("{host}={}", creds.display())));
    assert!(out.status.success(), "{}", stderr(&out));
    // The Application's own override (write-back-method argocd).
    let written = fs_err::read_to_string(root.join("apps/shop.yaml")).unwrap();
    assert!(
        written.contains(&format!("{host}/team/web:1.1.0"))
            && written.contains(&format!("{host}/team/api:1.1.0")),
        "{written}"
    );
    assert_eq!(fs_err::read_to_string(&runs).unwrap().lines().count(), 1);
}

fn main() {
    let both = &["docker-registry", MOTO_BIN];
    testkit::run(vec![
        trial(
            "update_fetch_provider_aws_over_tls",
            both,
            update_fetch_provider_aws_over_tls,
        ),
        trial(
            "update_fetch_registry_provider_flag_and_settings",
            both,
            update_fetch_registry_provider_flag_and_settings,
        ),
        trial(
            "function_provider_gcp",
            &["docker-registry"],
            function_provider_gcp,
        ),
        trial(
            "action_registry_provider_input",
            both,
            action_registry_provider_input,
        ),
        trial(
            "update_fetch_allowed_credential_program",
            &["docker-registry"],
            update_fetch_allowed_credential_program,
        ),
    ]);
}
