//! What one Application is asked to do, whichever front end said it: the images to follow and how
//! to write them back.

use super::settings::{ManifestTarget, UpdateSettings, WriteBackSettings};
use crate::argo_image::ArgoImage;
use crate::diagnostic::Location;

pub(crate) use crate::limits::{MAX_IMAGES_PER_APPLICATION, over_limit};

/// The error for `count` images listed by `what` (more than [`MAX_IMAGES_PER_APPLICATION`]).
#[must_use]
pub(crate) fn too_many_images(what: &str, count: usize) -> String {
    over_limit(
        what,
        count,
        "images",
        MAX_IMAGES_PER_APPLICATION,
        "Application",
    )
}

/// One image an Application follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageSpec {
    /// The alias it was given (`""` for none).
    pub alias: String,
    /// The entry as written (`web=ghcr.io/acme/web:~2.4`), for messages.
    pub entry: String,
    /// The image without its constraint, as written.
    pub image_text: String,
    /// The image without its constraint, parsed as Argo CD Image Updater parses it (its alias set,
    /// no tag).
    pub image: ArgoImage,
    /// The constraint written after the image (a semver range, or the tag the digest strategy
    /// follows).
    pub constraint: Option<String>,
    /// The settings after every layer is merged.
    pub settings: UpdateSettings,
    pub target: ManifestTarget,
    /// The key its signatures must verify with, when `imagesVerification` is enabled for it (the
    /// supply-chain gate requires it of the fetched candidates: `argocd::definitions`).
    pub verify: Option<CosignKeyRef>,
    /// Its selection, once validated where it was read.
    pub config: Option<crate::reflector::selection::PolicyConfig>,
    pub location: Location,
}

/// `imagesVerification.cosignKey`: the field `key` of the Secret `namespace/secret_name` (the
/// namespace of the ImageUpdater that names it), holding a PEM public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignKeyRef {
    pub namespace: String,
    pub secret_name: String,
    pub key: String,
    /// Where `cosignKey` is written.
    pub location: Location,
}

impl std::fmt::Display for CosignKeyRef {
    /// `KEY of Secret NAMESPACE/NAME`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of Secret {}/{}",
            self.key, self.namespace, self.secret_name
        )
    }
}

impl ImageSpec {
    /// The name that keys it within its Application: its alias, or without one its repository
    /// path (what Argo CD Image Updater itself uses as the alias then).
    #[must_use]
    pub fn key_alias(&self) -> &str {
        if self.alias.is_empty() {
            &self.image.name
        } else {
            &self.alias
        }
    }
}

/// Where an Application's configuration comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// Its own `argocd-image-updater.argoproj.io/*` annotations.
    Annotations,
    /// An `argocd-image-updater.argoproj.io/v1alpha1` `ImageUpdater` (`namespace/name`), by one of
    /// its `applicationRefs`; `use_annotations` when that reference defers to the annotations.
    ImageUpdater {
        updater: String,
        use_annotations: bool,
    },
    /// A KubeSphere `gitops.kubesphere.io` `ImageUpdater` with `kind: argocd` (`namespace/name`).
    KubeSphere { updater: String },
}

impl ConfigOrigin {
    /// `annotations`, `ImageUpdater NS/NAME`, `KubeSphere ImageUpdater NS/NAME`.
    #[must_use]
    pub fn describe(&self) -> String {
        match self {
            Self::Annotations => "its annotations".to_owned(),
            Self::ImageUpdater {
                updater,
                use_annotations: false,
            } => format!("ImageUpdater {updater}"),
            Self::ImageUpdater { updater, .. } => {
                format!("ImageUpdater {updater} (useAnnotations)")
            }
            Self::KubeSphere { updater } => format!("KubeSphere ImageUpdater {updater}"),
        }
    }
}

/// One managed Application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppConfig {
    /// Index into the catalog's Applications.
    pub app: usize,
    pub origin: ConfigOrigin,
    pub images: Vec<ImageSpec>,
    pub write_back: WriteBackSettings,
    /// Where the configuration is (the `image-list` annotation, the `applicationRefs` entry, the
    /// KubeSphere object).
    pub location: Location,
}

impl AppConfig {
    /// A KubeSphere ImageUpdater configures it: KubeSphere spells the Application method
    /// `built-in`.
    #[must_use]
    pub fn kubesphere(&self) -> bool {
        matches!(self.origin, ConfigOrigin::KubeSphere { .. })
    }
}

/// Split an image entry `[ALIAS=]IMAGE[:CONSTRAINT]`: the alias is cut at the first `=`, the
/// constraint at the first `:` after the last `/` (so a registry port stays in the image).
///
/// # Errors
/// An empty image, a digest (`@`), or an alias with a `:`.
pub(crate) fn split_entry(entry: &str) -> Result<(String, String, Option<String>), String> {
    let entry = entry.trim();
    let (alias, rest) = match entry.split_once('=') {
        Some((a, r)) => (a.trim(), r.trim()),
        None => ("", entry),
    };
    if rest.is_empty() {
        return Err(format!("image entry {entry:?} has an empty image name"));
    }
    if rest.contains('@') {
        return Err(format!(
            "image entry {entry:?} holds a digest; follow a tag's digest with the digest strategy and IMAGE:TAG instead"
        ));
    }
    if alias.contains(':') {
        return Err(format!(
            "image entry {entry:?}: the alias {alias:?} cannot contain ':'"
        ));
    }
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (image, constraint) = match rest[slash..].find(':') {
        Some(i) => (
            rest[..slash + i].trim(),
            Some(rest[slash + i + 1..].trim().to_owned()).filter(|c| !c.is_empty()),
        ),
        None => (rest, None),
    };
    if image.is_empty() {
        return Err(format!("image entry {entry:?} has an empty image name"));
    }
    Ok((alias.to_owned(), image.to_owned(), constraint))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries() {
        assert_eq!(
            split_entry(" web = ghcr.io/acme/web:~2.4 ").unwrap(),
            ("web".into(), "ghcr.io/acme/web".into(), Some("~2.4".into()))
        );
        assert_eq!(
            split_entry("registry.local:5000/team/cache").unwrap(),
            ("".into(), "registry.local:5000/team/cache".into(), None)
        );
        assert_eq!(
            split_entry("db=localhost:5000/pg:>=15, <17")
                .unwrap()
                .2
                .as_deref(),
            Some(">=15, <17")
        );
        assert!(split_entry("x=").is_err());
        assert!(split_entry("x=ghcr.io/a@sha256:00").is_err());
        assert!(split_entry("a:b=ghcr.io/a").is_err());
    }
}
