//! What Argo CD Image Updater sets in an Application's source, in memory, before it writes
//! anything: the kustomize image (`SetKustomizeImage`), the Helm parameters (`SetHelmImage`) and
//! the plugin environment (`SetPluginImage`), and how it reads the current ones back. Every
//! write-back target starts from these lists.

use super::application::HelmParam;
use super::config::ImageSpec;
use super::image::{ArgoImage, ImageTag, kustomize_match};

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

/// Whether a kustomize image entry is the one `image` manages: same repository path (registry
/// ignored), and when a kustomize name is configured and the entry has one, the same name.
fn manages(entry: &str, image: &ImageSpec) -> bool {
    let curr = ArgoImage::parse(entry);
    let mut matched = curr.name == image.image.name;
    if let Some(k) = &image.target.kustomize_name
        && !curr.alias.is_empty()
    {
        matched = matched && curr.alias == *k;
    }
    matched
}

/// The entry of `images` that `image` manages (`GetKustomizeImage`).
#[must_use]
pub(crate) fn current_kustomize<'l>(images: &'l [String], image: &ImageSpec) -> Option<&'l str> {
    images
        .iter()
        .find(|e| manages(e, image))
        .map(String::as_str)
}

/// Set `image` to `new` in a source's `kustomize.images` (`SetKustomizeImage`): every managed entry
/// is replaced, then the parameter is merged by kustomize's name match (replacing the first match,
/// else appended).
pub(crate) fn set_kustomize(images: &mut Vec<String>, image: &ImageSpec, new: &ArgoImage) {
    let param = kustomize_param(image, new);
    let over = ArgoImage::parse(&param);
    for entry in images.iter_mut() {
        if manages(entry, image) {
            *entry = over.to_string();
        }
    }
    match images.iter().position(|e| kustomize_match(e, &param)) {
        Some(i) => images[i] = param,
        None => images.push(param),
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

/// Merge parameters by name: a parameter of `merge` replaces the one of `list` with its name, in
/// place, or is appended.
pub(crate) fn merge_helm_params(list: &mut Vec<HelmParam>, merge: Vec<HelmParam>) {
    for p in merge {
        match list.iter_mut().find(|q| q.name == p.name) {
            Some(q) => *q = p,
            None => list.push(p),
        }
    }
}

/// The image a source's Helm parameters currently hold for `image` (`name:tag`, or the spec
/// parameter's value), `None` when they do not.
#[must_use]
pub(crate) fn current_helm(params: &[HelmParam], image: &ImageSpec) -> Option<String> {
    let get = |n: &str| params.iter().find(|p| p.name == n).map(|p| p.value.clone());
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

/// The image the plugin environment currently holds for `image`.
#[must_use]
pub(crate) fn current_plugin(env: &[(String, String)], image: &ImageSpec) -> Option<String> {
    let get = |n: &str| {
        env.iter()
            .find(|(k, v)| k == n && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let t = &image.target;
    match (&t.plugin_spec, &t.plugin_name, &t.plugin_tag) {
        (Some(s), _, _) => get(s),
        (None, Some(n), Some(tag)) => Some(format!("{}:{}", get(n)?, get(tag)?)),
        _ => None,
    }
}

/// Merge variables by name (replace in place, else append).
pub(crate) fn merge_env(list: &mut Vec<(String, String)>, merge: Vec<(String, String)>) {
    for (k, v) in merge {
        match list.iter_mut().find(|(q, _)| *q == k) {
            Some(e) => e.1 = v,
            None => list.push((k, v)),
        }
    }
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
            verify: false,
            config: None,
            location: Location::new("a", None),
        }
    }

    fn at(image: &ImageSpec, tag: &str) -> ArgoImage {
        image.image.with_tag(Some(parse_tag_value(tag)))
    }

    #[test]
    fn kustomize_images_are_replaced_and_merged() {
        let web = spec("web=ghcr.io/acme/web:^2", ManifestTarget::default());
        let mut list = vec!["ghcr.io/acme/web:2.0.0".to_owned(), "redis:7".to_owned()];
        set_kustomize(&mut list, &web, &at(&web, "2.3.1"));
        assert_eq!(list, ["ghcr.io/acme/web:2.3.1", "redis:7"]);
        let mut empty = Vec::new();
        set_kustomize(&mut empty, &web, &at(&web, "2.3.1"));
        assert_eq!(empty, ["ghcr.io/acme/web:2.3.1"]);
        let renamed = spec(
            "web=ghcr.io/acme/web",
            ManifestTarget {
                kustomize_name: Some("acme/web-base".into()),
                ..Default::default()
            },
        );
        let mut list = vec![
            "acme/web-base=ghcr.io/acme/web:1".to_owned(),
            "other=ghcr.io/acme/web:9".to_owned(),
        ];
        assert_eq!(
            current_kustomize(&list, &renamed),
            Some("acme/web-base=ghcr.io/acme/web:1")
        );
        set_kustomize(&mut list, &renamed, &at(&renamed, "1.1"));
        assert_eq!(
            list,
            [
                "acme/web-base=ghcr.io/acme/web:1.1",
                "other=ghcr.io/acme/web:9"
            ]
        );
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
            current_helm(&list, &plain).as_deref(),
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
            current_plugin(&env, &p).as_deref(),
            Some("ghcr.io/acme/cache:2")
        );
        assert_eq!(plugin_names(&p), ["CACHE_IMAGE", "CACHE_TAG"]);
    }
}
