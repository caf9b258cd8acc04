//! The synthetic GitOps repository of the directory benchmark
//! (`benches/pipeline.rs`), shared with the Job benchmark (`benches/job.rs`)
//! so that both measure the same tree: 10,000 deterministic files
//! (Deployments, HelmReleases with values, Kustomizations, Helm values files,
//! Services/ConfigMaps and large CRD bundles), about 15% of them with
//! `$imagepolicy` markers naming `flux-system:app0` .. `app39`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// How many policies the markers name (`flux-system:app0` ..).
pub const POLICIES: usize = 40;

/// A small deterministic generator (64-bit LCG).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn marker(policy: usize, suffix: &str) -> String {
    format!(" # {{\"$imagepolicy\": \"flux-system:app{policy}{suffix}\"}}")
}

fn deployment(r: &mut Rng, i: usize, marked: bool) -> String {
    let p = r.below(POLICIES as u64) as usize;
    let mut s = format!(
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-{i}\n  namespace: team-{}\n  labels:\n    app.kubernetes.io/name: app-{i}\n    app.kubernetes.io/part-of: shop\n\nspec:\n  replicas: {}\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: app-{i}\n  template:\n    metadata:\n      labels:\n        app.kubernetes.io/name: app-{i}\n    spec:\n      containers:\n",
        i % 17,
        1 + r.below(5)
    );
    for c in 0..1 + r.below(3) {
        let m = if marked && c == 0 {
            marker(p, "")
        } else {
            String::new()
        };
        let _ = write!(
            s,
            "        - name: c{c}\n          image: ghcr.io/acme/app{p}:1.{}.{}{m}\n          ports:\n            - containerPort: {}\n          resources:\n            limits: {{cpu: 500m, memory: 256Mi}}\n            requests:\n              cpu: \"100m\"\n              memory: '64Mi'\n          env:\n            - name: LOG_LEVEL\n              value: info\n",
            r.below(20),
            r.below(10),
            8000 + r.below(1000)
        );
    }
    s
}

fn helm_release(r: &mut Rng, i: usize, marked: bool) -> String {
    let p = r.below(POLICIES as u64) as usize;
    let (m1, m2) = if marked {
        (marker(p, ":name"), marker(p, ":tag"))
    } else {
        (String::new(), String::new())
    };
    format!(
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: rel-{i}\n  namespace: flux-system\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: app\n      version: \">=1.0.0\"\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n  values:\n    image:\n      repository: ghcr.io/acme/app{p}{m1}\n      tag: \"1.{}.0\"{m2}\n    ingress:\n      enabled: true\n      hosts:\n        - host: app-{i}.example.com\n          paths: [\"/\"]\n    podAnnotations:\n      prometheus.io/scrape: \"true\"\n",
        r.below(30)
    )
}

fn kustomization(r: &mut Rng, marked: bool) -> String {
    let p = r.below(POLICIES as u64) as usize;
    let m = if marked {
        marker(p, ":tag")
    } else {
        String::new()
    };
    format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: shop\nresources:\n  - deployment.yaml\n  - service.yaml\nimages:\n  - name: ghcr.io/acme/app{p}\n    newTag: 1.{}.0{m}\n",
        r.below(30)
    )
}

fn values(r: &mut Rng, marked: bool) -> String {
    let p = r.below(POLICIES as u64) as usize;
    let m = if marked { marker(p, "") } else { String::new() };
    format!(
        "# Default values.\nreplicaCount: {}\n\nimage: ghcr.io/acme/app{p}:0.{}.1{m}\nservice:\n  type: ClusterIP\n  port: 80\nnodeSelector: {{}}\ntolerations: []\n",
        r.below(4),
        r.below(40)
    )
}

fn plain(r: &mut Rng, i: usize) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-{i}\nspec:\n  selector:\n    app: app-{i}\n  ports:\n  - port: 80\n    targetPort: {}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg-{i}\ndata:\n  config.yaml: |\n    level: info\n    # image: ghcr.io/acme/app:1.0\n",
        8000 + r.below(1000)
    )
}

fn crd_bundle(r: &mut Rng, i: usize) -> String {
    let mut s = String::new();
    for d in 0..3 + r.below(4) {
        let _ = write!(
            s,
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: things{d}.group{i}.example.com\nspec:\n  group: group{i}.example.com\n  names: {{kind: Thing{d}, plural: things{d}}}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n"
        );
        for f in 0..400 + r.below(400) {
            let _ = write!(
                s,
                "          field{f}:\n            description: Field {f} of the thing; set it when the thing needs it.\n            type: string\n"
            );
        }
    }
    s
}

/// Generate the repository under `dir` (replacing it); returns the file of
/// its policies, `policies.yaml` beside `dir`: one ImagePolicy with a
/// `status.latestRef` of tag `2.N.0` for each `flux-system:appN`.
pub fn generate(dir: &Path, files: usize) -> PathBuf {
    if dir.exists() {
        fs_err::remove_dir_all(dir).unwrap();
    }
    let mut r = Rng(42);
    for i in 0..files {
        // 20% of the markable kinds (75% of files) gives about 15% marked files.
        let marked = r.below(100) < 20;
        let group = format!("clusters/c{}/apps/app{}", i % 7, i / 50);
        let (name, text) = match r.below(100) {
            0..=34 => ("deployment.yaml".to_owned(), deployment(&mut r, i, marked)),
            35..=49 => (
                "helmrelease.yaml".to_owned(),
                helm_release(&mut r, i, marked),
            ),
            50..=59 => (
                "kustomization.yaml".to_owned(),
                kustomization(&mut r, marked),
            ),
            60..=74 => ("values.yaml".to_owned(), values(&mut r, marked)),
            75..=97 => ("service.yaml".to_owned(), plain(&mut r, i)),
            _ => ("crds.yaml".to_owned(), crd_bundle(&mut r, i)),
        };
        let path = dir.join(&group).join(format!("{i}-{name}"));
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, text).unwrap();
    }
    let mut policies = String::from("apiVersion: v1\nkind: List\nitems:\n");
    for p in 0..POLICIES {
        let _ = write!(
            policies,
            "- apiVersion: image.toolkit.fluxcd.io/v1\n  kind: ImagePolicy\n  metadata: {{name: app{p}, namespace: flux-system}}\n  status: {{latestRef: {{name: ghcr.io/acme/app{p}, tag: 2.{p}.0}}}}\n"
        );
    }
    let file = dir.parent().unwrap().join("policies.yaml");
    fs_err::write(&file, policies).unwrap();
    file
}

/// Every file below `dir`.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs_err::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
