//! What Argo CD Image Updater sets in an Application's source, in memory, before it writes
//! anything: the kustomize image (`SetKustomizeImage`), the Helm parameters (`SetHelmImage`) and
//! the plugin environment (`SetPluginImage`), and how it reads the current ones back. Every
//! write-back target starts from these lists.

use std::collections::{BTreeSet, HashMap};

use super::application::HelmParam;
use super::config::ImageSpec;
use crate::argo_image::{
    ArgoImage, ImageTag, KUSTOMIZE_DELIMITERS, kustomize_cut, kustomize_delimiter,
};

/// Argo CD Image Updater's default Helm parameter names.
pub(crate) const DEFAULT_HELM_NAME: &str = "image.name";
pub(crate) const DEFAULT_HELM_TAG: &str = "image.tag";

/// The kustomize image an image is written as: `[KUSTOMIZE_NAME=]registry/name:tag@digest`.
#[must_use]
pub(crate) fn kustomize_param(image: &ImageSpec, new: &ArgoImage) -> String {
    match &image.target.kustomize_name {
        Some(k) => format!("{k}={}", new.full_name_with_tag()),
        None => new.full_name_with_tag(),
    }
}

/// Whether a kustomize image entry (parsed) is the one `image` manages: same repository path
/// (registry ignored), and when a kustomize name is configured and the entry has one, the same
/// name.
fn manages(entry: &ArgoImage, image: &ImageSpec) -> bool {
    let mut matched = entry.name == image.image.name;
    if let Some(k) = &image.target.kustomize_name
        && !entry.alias.is_empty()
    {
        matched = matched && entry.alias == *k;
    }
    matched
}

/// A source's `kustomize.images`, each entry parsed once and indexed by what Argo CD Image Updater
/// looks entries up by (the repository path; the name up to each kustomize delimiter), so that
/// reading and setting every image of an Application takes time linear in their number (a scan of
/// the list per image, parsing every entry each time, made writing back an Application of 4,000
/// images take 8 s).
#[derive(Debug, Clone, Default)]
pub(crate) struct KustomizeImages {
    items: Vec<String>,
    parsed: Vec<ArgoImage>,
    /// Entries by repository path, in list order.
    by_name: HashMap<String, BTreeSet<usize>>,
    /// Entries by delimiter and name up to it ([`kustomize_cut`]), in list order.
    by_cut: HashMap<(char, String), BTreeSet<usize>>,
}

impl KustomizeImages {
    /// Index `items`.
    #[must_use]
    pub(crate) fn new(items: Vec<String>) -> Self {
        let mut list = Self {
            parsed: Vec::with_capacity(items.len()),
            items: Vec::with_capacity(items.len()),
            ..Self::default()
        };
        for item in items {
            list.push(item);
        }
        list
    }

    /// The entries, in order.
    #[must_use]
    pub(crate) fn into_items(self) -> Vec<String> {
        self.items
    }

    /// The entry `image` manages (`GetKustomizeImage`): the first one.
    #[must_use]
    pub(crate) fn current(&self, image: &ImageSpec) -> Option<&str> {
        self.managed(image).next().map(|i| self.items[i].as_str())
    }

    /// The indexes of the entries `image` manages, in order.
    fn managed<'s>(&'s self, image: &'s ImageSpec) -> impl Iterator<Item = usize> + 's {
        self.by_name
            .get(&image.image.name)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |&i| manages(&self.parsed[i], image))
    }

    fn index(&mut self, i: usize) {
        self.by_name
            .entry(self.parsed[i].name.clone())
            .or_default()
            .insert(i);
        for d in KUSTOMIZE_DELIMITERS {
            self.by_cut
                .entry((d, kustomize_cut(&self.items[i], d).to_owned()))
                .or_default()
                .insert(i);
        }
    }

    fn unindex(&mut self, i: usize) {
        if let Some(set) = self.by_name.get_mut(&self.parsed[i].name) {
            set.remove(&i);
        }
        for d in KUSTOMIZE_DELIMITERS {
            let key = (d, kustomize_cut(&self.items[i], d).to_owned());
            if let Some(set) = self.by_cut.get_mut(&key) {
                set.remove(&i);
            }
        }
    }

    fn push(&mut self, item: String) {
        self.parsed.push(ArgoImage::parse(&item));
        self.items.push(item);
        self.index(self.items.len() - 1);
    }

    fn replace(&mut self, i: usize, item: String) {
        if self.items[i] == item {
            return;
        }
        self.unindex(i);
        self.parsed[i] = ArgoImage::parse(&item);
        self.items[i] = item;
        self.index(i);
    }

    /// Set `image` to `new` (`SetKustomizeImage`): every managed entry is replaced, then the
    /// parameter is merged by kustomize's name match (replacing the first match, else appended).
    pub(crate) fn set(&mut self, image: &ImageSpec, new: &ArgoImage) {
        let param = kustomize_param(image, new);
        let over = ArgoImage::parse(&param).to_string();
        let managed: Vec<usize> = self.managed(image).collect();
        for i in managed {
            self.replace(i, over.clone());
        }
        let delim = kustomize_delimiter(&param);
        let first = self
            .by_cut
            .get(&(delim, kustomize_cut(&param, delim).to_owned()))
            .and_then(|set| set.first())
            .copied();
        match first {
            Some(i) => self.replace(i, param),
            None => self.push(param),
        }
    }
}

/// The Helm parameters an image is written to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HelmNames {
    /// One parameter holding `registry/name:tag@digest`.
    Spec(String),
    /// A name parameter (`registry/name`) and a tag parameter (`tag@digest`).
    NameTag(String, String),
}

impl HelmNames {
    /// The parameter names.
    #[must_use]
    pub(crate) fn all(&self) -> Vec<&str> {
        match self {
            Self::Spec(s) => vec![s],
            Self::NameTag(n, t) => vec![n, t],
        }
    }
}

/// The parameters of `image`: `helm.image-spec` when set, else `helm.image-name` and
/// `helm.image-tag`, each defaulting to `image.name` / `image.tag`.
#[must_use]
pub(crate) fn helm_names(image: &ImageSpec) -> HelmNames {
    let t = &image.target;
    if let Some(spec) = t
        .helm_spec
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        return HelmNames::Spec(spec.to_owned());
    }
    HelmNames::NameTag(
        t.helm_name
            .clone()
            .unwrap_or_else(|| DEFAULT_HELM_NAME.to_owned()),
        t.helm_tag
            .clone()
            .unwrap_or_else(|| DEFAULT_HELM_TAG.to_owned()),
    )
}

/// The parameters `SetHelmImage` merges for `image` at `new` (all with `forceString`; an empty tag
/// is never written).
#[must_use]
pub(crate) fn helm_params(image: &ImageSpec, new: &ArgoImage) -> Vec<HelmParam> {
    let param = |name: &str, value: String| HelmParam {
        name: name.to_owned(),
        value,
        force_string: true,
    };
    match helm_names(image) {
        HelmNames::Spec(s) => vec![param(&s, new.full_name_with_tag())],
        HelmNames::NameTag(n, t) => {
            let mut out = vec![param(&n, new.full_name())];
            let tag = new.tag_with_digest();
            if !tag.is_empty() {
                out.push(param(&t, tag));
            }
            out
        }
    }
}

/// Merge parameters by name: a parameter of `merge` replaces the first one of `list` with its
/// name (one merged before it included), in place, or is appended.
pub(crate) fn merge_helm_params(list: &mut Vec<HelmParam>, merge: Vec<HelmParam>) {
    merge_by_name(list, merge, |p| &p.name);
}

/// Merge `merge` into `list` by `name`: each item replaces the first of its name, in place, or is
/// appended. Linear: the names are indexed once (a scan per item made merging every image of an
/// Application quadratic).
fn merge_by_name<T>(list: &mut Vec<T>, merge: Vec<T>, name: impl Fn(&T) -> &str) {
    let mut first: HashMap<String, usize> = HashMap::with_capacity(list.len() + merge.len());
    for (i, item) in list.iter().enumerate() {
        first.entry(name(item).to_owned()).or_insert(i);
    }
    for item in merge {
        match first.get(name(&item)) {
            Some(&i) => list[i] = item,
            None => {
                first.insert(name(&item).to_owned(), list.len());
                list.push(item);
            }
        }
    }
}

/// Helm parameters' values by name, the first of each (as a scan finds them).
#[must_use]
pub(crate) fn helm_by_name(params: &[HelmParam]) -> HashMap<&str, &str> {
    let mut out = HashMap::with_capacity(params.len());
    for p in params {
        out.entry(p.name.as_str()).or_insert(p.value.as_str());
    }
    out
}

/// Plugin variables' non-empty values by name, the first of each (an empty value counts as
/// unset).
#[must_use]
pub(crate) fn env_by_name(env: &[(String, String)]) -> HashMap<&str, &str> {
    let mut out = HashMap::with_capacity(env.len());
    for (k, v) in env.iter().filter(|(_, v)| !v.is_empty()) {
        out.entry(k.as_str()).or_insert(v.as_str());
    }
    out
}

/// The image a source's Helm parameters (by name, [`helm_by_name`]) currently hold for `image`
/// (`name:tag`, or the spec parameter's value), `None` when they do not.
#[must_use]
pub(crate) fn current_helm(params: &HashMap<&str, &str>, image: &ImageSpec) -> Option<String> {
    let get = |n: &str| params.get(n).map(|v| (*v).to_owned());
    match helm_names(image) {
        HelmNames::Spec(s) => get(&s),
        HelmNames::NameTag(n, t) => Some(format!("{}:{}", get(&n)?, get(&t)?)),
    }
}

/// The plugin environment variables of `image` at `new` (`SetPluginImage`).
#[must_use]
pub(crate) fn plugin_env(image: &ImageSpec, new: &ArgoImage) -> Vec<(String, String)> {
    let t = &image.target;
    if let Some(spec) = &t.plugin_spec {
        return vec![(spec.clone(), new.full_name_with_tag())];
    }
    let mut out = Vec::new();
    if let Some(n) = &t.plugin_name {
        out.push((n.clone(), new.full_name()));
    }
    if let Some(tag_name) = &t.plugin_tag {
        let tag = new.tag_with_digest();
        if !tag.is_empty() {
            out.push((tag_name.clone(), tag));
        }
    }
    out
}

/// The names of the variables an image writes.
#[must_use]
pub(crate) fn plugin_names(image: &ImageSpec) -> Vec<String> {
    let t = &image.target;
    match &t.plugin_spec {
        Some(s) => vec![s.clone()],
        None => t
            .plugin_name
            .iter()
            .chain(t.plugin_tag.iter())
            .cloned()
            .collect(),
    }
}

/// The image the plugin environment (by name, [`env_by_name`]) currently holds for `image`.
#[must_use]
pub(crate) fn current_plugin(env: &HashMap<&str, &str>, image: &ImageSpec) -> Option<String> {
    let get = |n: &str| env.get(n).map(|v| (*v).to_owned());
    let t = &image.target;
    match (&t.plugin_spec, &t.plugin_name, &t.plugin_tag) {
        (Some(s), _, _) => get(s),
        (None, Some(n), Some(tag)) => Some(format!("{}:{}", get(n)?, get(tag)?)),
        _ => None,
    }
}

/// Merge variables by name (replace the first of the name in place, else append).
pub(crate) fn merge_env(list: &mut Vec<(String, String)>, merge: Vec<(String, String)>) {
    merge_by_name(list, merge, |(k, _)| k);
}

/// A tag parameter's value (`tag`, `tag@digest`, `latest@digest`) as a tag.
#[must_use]
pub(crate) fn parse_tag_value(value: &str) -> ImageTag {
    match value.split_once('@') {
        Some((name, digest)) => ImageTag {
            name: name.to_owned(),
            digest: digest.to_owned(),
        },
        None => ImageTag {
            name: value.to_owned(),
            digest: String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argocd::settings::ManifestTarget;
    use crate::diagnostic::Location;

    fn spec(entry: &str, target: ManifestTarget) -> ImageSpec {
        let (alias, text, constraint) = crate::argocd::config::split_entry(entry).unwrap();
        let mut image = ArgoImage::parse(&text);
        image.alias.clone_from(&alias);
        ImageSpec {
            alias,
            entry: entry.into(),
            image_text: text,
            image,
            constraint,
            settings: Default::default(),
            target,
            verify: None,
            config: None,
            location: Location::new("a", None),
        }
    }

    fn at(image: &ImageSpec, tag: &str) -> ArgoImage {
        image.image.with_tag(Some(parse_tag_value(tag)))
    }

    /// `SetKustomizeImage` as Argo CD Image Updater writes it, one scan of the list per image:
    /// what [`KustomizeImages::set`] must agree with.
    fn set_by_scanning(images: &mut Vec<String>, image: &ImageSpec, new: &ArgoImage) {
        let param = kustomize_param(image, new);
        let over = ArgoImage::parse(&param);
        for entry in images.iter_mut() {
            if manages(&ArgoImage::parse(entry), image) {
                *entry = over.to_string();
            }
        }
        match images
            .iter()
            .position(|e| crate::argo_image::kustomize_match(e, &param))
        {
            Some(i) => images[i] = param,
            None => images.push(param),
        }
    }

    fn set(list: &[&str], image: &ImageSpec, new: &ArgoImage) -> Vec<String> {
        let mut indexed = KustomizeImages::new(list.iter().map(|s| (*s).to_owned()).collect());
        indexed.set(image, new);
        let items = indexed.into_items();
        let mut scanned: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        set_by_scanning(&mut scanned, image, new);
        assert_eq!(items, scanned, "{list:?} with {}", image.entry);
        items
    }

    #[test]
    fn kustomize_images_are_replaced_and_merged() {
        let web = spec("web=ghcr.io/acme/web:^2", ManifestTarget::default());
        let list = set(
            &["ghcr.io/acme/web:2.0.0", "redis:7"],
            &web,
            &at(&web, "2.3.1"),
        );
        assert_eq!(list, ["ghcr.io/acme/web:2.3.1", "redis:7"]);
        assert_eq!(
            set(&[], &web, &at(&web, "2.3.1")),
            ["ghcr.io/acme/web:2.3.1"]
        );
        let renamed = spec(
            "web=ghcr.io/acme/web",
            ManifestTarget {
                kustomize_name: Some("acme/web-base".into()),
                ..Default::default()
            },
        );
        let list = [
            "acme/web-base=ghcr.io/acme/web:1",
            "other=ghcr.io/acme/web:9",
        ];
        let indexed = KustomizeImages::new(list.iter().map(|s| (*s).to_owned()).collect());
        assert_eq!(
            indexed.current(&renamed),
            Some("acme/web-base=ghcr.io/acme/web:1")
        );
        assert_eq!(
            set(&list, &renamed, &at(&renamed, "1.1")),
            [
                "acme/web-base=ghcr.io/acme/web:1.1",
                "other=ghcr.io/acme/web:9"
            ]
        );
    }

    /// The index agrees with the scan over lists with duplicates, registries with ports,
    /// kustomize names, digests, and images set one after another.
    #[test]
    fn indexed_kustomize_images_agree_with_the_scan() {
        let d = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
        let entries = [
            "ghcr.io/acme/web:1",
            "acme/web:2",
            "ghcr.io/acme/web:3",
            "registry.local:5000/acme/web:4",
            "registry.local:5000/acme/worker:main",
            "base=ghcr.io/acme/web:5",
            "other=ghcr.io/acme/web",
            "nginx",
            "docker.io/library/nginx:1.25",
            &format!("acme/cart@{d}"),
            "cart=acme/cart:1",
        ];
        let images = [
            spec("web=ghcr.io/acme/web", ManifestTarget::default()),
            spec(
                "web=ghcr.io/acme/web",
                ManifestTarget {
                    kustomize_name: Some("base".into()),
                    ..Default::default()
                },
            ),
            spec(
                "worker=registry.local:5000/acme/worker",
                ManifestTarget::default(),
            ),
            spec("nginx", ManifestTarget::default()),
            spec("cart=acme/cart", ManifestTarget::default()),
            spec(
                "cart=acme/cart",
                ManifestTarget {
                    kustomize_name: Some("cart".into()),
                    ..Default::default()
                },
            ),
        ];
        let tags = ["9", &format!("9@{d}"), &format!("@{d}")];
        for start in 0..entries.len() {
            let list: Vec<String> = entries[start..]
                .iter()
                .chain(&entries[..start])
                .map(|s| (*s).to_owned())
                .collect();
            let mut indexed = KustomizeImages::new(list.clone());
            let mut scanned = list;
            for (n, image) in images.iter().enumerate() {
                let new = at(image, tags[(n + start) % tags.len()]);
                indexed.set(image, &new);
                set_by_scanning(&mut scanned, image, &new);
                assert_eq!(indexed.items, scanned, "start {start}, image {n}");
                let by_scan = scanned
                    .iter()
                    .find(|e| manages(&ArgoImage::parse(e), image))
                    .map(String::as_str);
                assert_eq!(indexed.current(image), by_scan);
            }
        }
    }

    #[test]
    fn helm_parameters() {
        let plain = spec("ghcr.io/acme/api", ManifestTarget::default());
        let digest = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let new = plain.image.with_tag(Some(ImageTag {
            name: "edge".into(),
            digest: digest.into(),
        }));
        let params = helm_params(&plain, &new);
        assert_eq!(params[0].name, "image.name");
        assert_eq!(params[0].value, "ghcr.io/acme/api");
        assert_eq!(params[1].value, format!("edge@{digest}"));
        let full = spec(
            "api=ghcr.io/acme/api",
            ManifestTarget {
                helm_spec: Some("api.image".into()),
                helm_name: Some("ignored".into()),
                ..Default::default()
            },
        );
        assert_eq!(
            helm_params(&full, &at(&full, "3.0"))[0],
            HelmParam {
                name: "api.image".into(),
                value: "ghcr.io/acme/api:3.0".into(),
                force_string: true
            }
        );
        let mut list = vec![
            HelmParam {
                name: "replicas".into(),
                value: "2".into(),
                force_string: false,
            },
            HelmParam {
                name: "image.tag".into(),
                value: "1".into(),
                force_string: false,
            },
        ];
        merge_helm_params(&mut list, helm_params(&plain, &at(&plain, "2")));
        let names: Vec<&str> = list.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["replicas", "image.tag", "image.name"]);
        assert_eq!(
            current_helm(&helm_by_name(&list), &plain).as_deref(),
            Some("ghcr.io/acme/api:2")
        );
        // No tag: never written.
        assert_eq!(helm_params(&plain, &plain.image.with_tag(None)).len(), 1);
    }

    #[test]
    fn plugin_variables() {
        let p = spec(
            "cache=ghcr.io/acme/cache",
            ManifestTarget {
                plugin_name: Some("CACHE_IMAGE".into()),
                plugin_tag: Some("CACHE_TAG".into()),
                ..Default::default()
            },
        );
        let mut env = vec![
            ("OTHER".to_owned(), "x".to_owned()),
            ("CACHE_TAG".to_owned(), "1".to_owned()),
        ];
        merge_env(&mut env, plugin_env(&p, &at(&p, "2")));
        assert_eq!(
            env,
            [
                ("OTHER".into(), "x".into()),
                ("CACHE_TAG".into(), "2".into()),
                ("CACHE_IMAGE".into(), "ghcr.io/acme/cache".into())
            ]
        );
        assert_eq!(
            current_plugin(&env_by_name(&env), &p).as_deref(),
            Some("ghcr.io/acme/cache:2")
        );
        assert_eq!(plugin_names(&p), ["CACHE_IMAGE", "CACHE_TAG"]);
    }
}
