//! Provenance read from images pushed to a real `docker-registry`, with the
//! requests counted by a proxy in front of it: labels only, annotations
//! only, an index's annotations only, all of them conflicting (which one
//! wins), Label Schema only, a digest the registry does not have.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use image_update_registry::provenance::{ImageFacts, LS_VCS_REF, LS_VCS_URL, LS_VERSION};
use image_update_registry::{ClientSettings, HostConfig, RegistryClient, Repository};
use image_update_testkit::registry::{Auth, FakeServer, ImageSpec, Registry, registry_proxy};
use image_update_testkit::{self as testkit, trial};

const SOURCE: &str = "org.opencontainers.image.source";
const REVISION: &str = "org.opencontainers.image.revision";
const VERSION: &str = "org.opencontainers.image.version";

struct Bed {
    registry: Registry,
    proxy: FakeServer,
}

impl Bed {
    fn start() -> Self {
        let registry = Registry::start(Auth::Anonymous);
        let proxy = registry_proxy(&registry.authority(), false);
        Self { registry, proxy }
    }

    fn client(&self, remember: bool) -> RegistryClient {
        let mut settings = ClientSettings {
            remember_documents: remember,
            ..ClientSettings::default()
        };
        settings.set_host(
            &self.proxy.authority(),
            HostConfig {
                insecure: Some(true),
                ..HostConfig::default()
            },
        );
        RegistryClient::new(settings).unwrap()
    }

    fn repo(&self, path: &str) -> Repository {
        Repository::parse(&format!("{}/{path}", self.proxy.authority())).unwrap()
    }

    fn gets(&self) -> usize {
        self.proxy
            .count(|r| r.method == "GET" && !r.path().ends_with("/v2/"))
    }
}

fn image() -> ImageSpec {
    ImageSpec::new("linux", "amd64", None, "2024-01-01T00:00:00Z")
}

fn facts(f: &ImageFacts) -> Vec<(String, &'static str, &'static str)> {
    [&f.source, &f.revision, &f.version]
        .into_iter()
        .map(|x| match x {
            Some(x) => (x.value.clone(), x.tier.as_str(), x.key),
            None => (String::new(), "", ""),
        })
        .collect()
}

fn row(value: &str, tier: &'static str, key: &'static str) -> (String, &'static str, &'static str) {
    (value.to_owned(), tier, key)
}

fn labels_only() {
    let bed = Bed::start();
    bed.registry.push_image(
        "acme/web",
        "1.0.0",
        &image().labels(&[
            (SOURCE, "https://github.com/acme/web"),
            (REVISION, "3f2a"),
            (VERSION, "1.0.0"),
        ]),
    );
    let c = bed.client(false);
    let before = bed.gets();
    let f = c.provenance(&bed.repo("acme/web"), "1.0.0", None).unwrap();
    assert_eq!(
        facts(&f),
        [
            row("https://github.com/acme/web", "config", SOURCE),
            row("3f2a", "config", REVISION),
            row("1.0.0", "config", VERSION)
        ]
    );
    // The manifest, then the config.
    assert_eq!((f.requests, bed.gets() - before), (2, 2));
}

fn annotations_only() {
    let bed = Bed::start();
    let (_, digest) = bed.registry.push_image(
        "acme/web",
        "1.0.0",
        &image().labels(&[]).annotations(&[
            (SOURCE, "https://gitlab.com/acme/web"),
            (REVISION, "9c1d"),
            (VERSION, "v1.0.0"),
        ]),
    );
    let c = bed.client(false);
    let before = bed.gets();
    let f = c.provenance(&bed.repo("acme/web"), &digest, None).unwrap();
    assert_eq!(f.digest, digest);
    assert_eq!(
        facts(&f),
        [
            row("https://gitlab.com/acme/web", "manifest", SOURCE),
            row("9c1d", "manifest", REVISION),
            row("v1.0.0", "manifest", VERSION)
        ]
    );
    // Settled by the manifest: the config is not fetched.
    assert_eq!((f.requests, bed.gets() - before), (1, 1));
}

fn index_only() {
    let bed = Bed::start();
    let images = [
        image().labels(&[]),
        ImageSpec::new("linux", "arm64", None, "2024-01-01T00:00:00Z").labels(&[]),
    ];
    let (index, _) = bed.registry.push_annotated_index(
        "acme/web",
        "2.0.0",
        &images,
        &[
            (SOURCE, "https://github.com/acme/web"),
            (REVISION, "abc"),
            (VERSION, "2.0.0"),
        ],
    );
    let c = bed.client(false);
    let before = bed.gets();
    let f = c.provenance(&bed.repo("acme/web"), "2.0.0", None).unwrap();
    assert_eq!(f.digest, index);
    assert_eq!(
        facts(&f),
        [
            row("https://github.com/acme/web", "index", SOURCE),
            row("abc", "index", REVISION),
            row("2.0.0", "index", VERSION)
        ]
    );
    // The index and the platform manifest (more specific, so read first); the index settles
    // every fact, so not the config.
    assert_eq!((f.requests, bed.gets() - before), (2, 2));
}

fn conflicting_precedence() {
    let bed = Bed::start();
    let amd64 = image()
        .labels(&[
            (SOURCE, "https://github.com/config/x"),
            (REVISION, "config"),
            (VERSION, "config"),
        ])
        .annotations(&[(REVISION, "manifest"), (VERSION, "manifest")])
        .descriptor_annotations(&[(REVISION, "descriptor")]);
    let arm64 = ImageSpec::new("linux", "arm64", None, "2024-01-01T00:00:00Z")
        .descriptor_annotations(&[(REVISION, "arm64")]);
    bed.registry.push_annotated_index(
        "acme/web",
        "3.0.0",
        &[arm64, amd64],
        &[(VERSION, "index"), (SOURCE, "https://github.com/index/x")],
    );
    let c = bed.client(false);
    let before = bed.gets();
    let f = c.provenance(&bed.repo("acme/web"), "3.0.0", None).unwrap();
    assert_eq!(
        facts(&f),
        [
            row("https://github.com/index/x", "index", SOURCE),
            row("descriptor", "descriptor", REVISION),
            row("manifest", "manifest", VERSION)
        ]
    );
    assert_eq!((f.requests, bed.gets() - before), (2, 2));
    // The platform asked for chooses the descriptor.
    let f = c
        .provenance(
            &bed.repo("acme/web"),
            "3.0.0",
            Some(&"linux/arm64".parse().unwrap()),
        )
        .unwrap();
    assert_eq!(facts(&f)[1], row("arm64", "descriptor", REVISION));
}

fn label_schema_only() {
    let bed = Bed::start();
    bed.registry.push_image(
        "acme/old",
        "0.9",
        &image().labels(&[
            (LS_VCS_URL, "git@github.com:acme/old.git"),
            (LS_VCS_REF, "0ld"),
            (LS_VERSION, "0.9"),
        ]),
    );
    let c = bed.client(false);
    let f = c.provenance(&bed.repo("acme/old"), "0.9", None).unwrap();
    assert_eq!(
        facts(&f),
        [
            row("git@github.com:acme/old.git", "config", LS_VCS_URL),
            row("0ld", "config", LS_VCS_REF),
            row("0.9", "config", LS_VERSION)
        ]
    );
    assert_eq!(f.requests, 2);
}

fn gone_digest() {
    let bed = Bed::start();
    bed.registry.push_image("acme/web", "1.0.0", &image());
    let c = bed.client(false);
    let gone = format!("sha256:{}", "0".repeat(64));
    let e = c
        .provenance(&bed.repo("acme/web"), &gone, None)
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

/// What the run fetched already (a digest's manifest, a created time's config) is not fetched
/// again: with the documents remembered, the provenance of an image whose created time was read
/// costs nothing more.
fn reuses_what_the_run_fetched() {
    let bed = Bed::start();
    let (_, digest) = bed.registry.push_image(
        "acme/web",
        "1.0.0",
        &image().labels(&[(SOURCE, "https://github.com/acme/web")]),
    );
    let c = bed.client(true);
    let r = bed.repo("acme/web");
    c.created(&r, "1.0.0", None).unwrap();
    let before = bed.gets();
    let f = c.provenance(&r, &digest, None).unwrap();
    assert_eq!(facts(&f)[0].0, "https://github.com/acme/web");
    assert_eq!((f.requests, bed.gets() - before), (0, 0));
    // Off (the default), the same lookup is made again.
    let c = bed.client(false);
    c.created(&r, "1.0.0", None).unwrap();
    let before = bed.gets();
    let f = c.provenance(&r, &digest, None).unwrap();
    assert_eq!((f.requests, bed.gets() - before), (2, 2));
}

/// The cost of a run updating 20 images (the budget: at most 3 requests per side): each
/// new image an index annotated by its builder (revision on the descriptor, source and version on
/// the index), each old one labelled only; the run had looked the new digests up (`HEAD`).
fn twenty_images_within_budget() {
    let bed = Bed::start();
    let mut digests = Vec::new();
    for i in 0..20 {
        let repo = format!("acme/app-{i}");
        bed.registry.push_image(
            &repo,
            "1.0.0",
            &image().labels(&[
                (SOURCE, "https://github.com/acme/app"),
                (REVISION, "1111111"),
                (VERSION, "1.0.0"),
            ]),
        );
        let amd64 = image()
            .labels(&[])
            .descriptor_annotations(&[(REVISION, "2222222")]);
        let (index, _) = bed.registry.push_annotated_index(
            &repo,
            "1.1.0",
            &[amd64],
            &[(SOURCE, "https://github.com/acme/app"), (VERSION, "1.1.0")],
        );
        digests.push(index);
    }
    let c = bed.client(true);
    let mut total = 0;
    for (i, digest) in digests.iter().enumerate() {
        let r = bed.repo(&format!("acme/app-{i}"));
        assert_eq!(&c.digest(&r, "1.1.0", None).unwrap(), digest);
        let before = bed.gets();
        let new = c.provenance(&r, digest, None).unwrap();
        let old = c.provenance(&r, "1.0.0", None).unwrap();
        let sent = bed.gets() - before;
        assert_eq!((new.requests, old.requests, sent), (2, 2, 4));
        assert_eq!(facts(&new)[1], row("2222222", "descriptor", REVISION));
        assert_eq!(facts(&old)[1], row("1111111", "config", REVISION));
        total += sent;
    }
    eprintln!(
        "provenance of 20 image changes: {total} registry requests ({} per image)",
        total / 20
    );
}

fn main() {
    let needs = &["docker-registry"];
    testkit::run(vec![
        trial("labels_only", needs, labels_only),
        trial("annotations_only", needs, annotations_only),
        trial("index_only", needs, index_only),
        trial("conflicting_precedence", needs, conflicting_precedence),
        trial("label_schema_only", needs, label_schema_only),
        trial("gone_digest", needs, gone_digest),
        trial(
            "reuses_what_the_run_fetched",
            needs,
            reuses_what_the_run_fetched,
        ),
        trial(
            "twenty_images_within_budget",
            needs,
            twenty_images_within_budget,
        ),
    ]);
}
