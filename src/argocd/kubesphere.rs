//! KubeSphere's `ImageUpdater` (`gitops.kubesphere.io/v1alpha1`) with `kind: argocd` (seed 002):
//!
//! ```yaml
//! spec:
//!   kind: argocd
//!   images: [nginx:^0.1, myalias=some/image]
//!   argocd:
//!     app: {name: demo, namespace: demo}     # the Application; namespace defaults to the updater's
//!     write: built-in | git                  # default built-in (Argo CD Image Updater's `argocd`)
//!     update-strategy: {nginx: semver, myalias: latest}
//!     allow-tags: {nginx: any}
//!     ignore-tags: {myalias: "*-dev"}
//!     platforms: {nginx: linux/amd64}
//!     secret: {nginx: docker-hub-secret}
//! ```
//!
//! The object is read once, by [`crate::kubesphere::read`], for the reflector's definitions (which
//! fetch its images, keyed `NAMESPACE:ALIAS`) and for this write-back side, which takes its Argo CD
//! part: which Application, which method, and each image's settings.

use super::config::ImageSpec;
use super::settings::{Located, ManifestTarget, UpdateSettings};
use crate::argo_image::ArgoImage;
use crate::diagnostic::{Diagnostic, Location};
use crate::kubesphere::{Setting, Updater};

/// A KubeSphere ImageUpdater of kind `argocd`, as the write-back takes it.
#[derive(Debug, Clone)]
pub(crate) struct KubeSphereUpdater {
    pub namespace: String,
    pub name: String,
    /// The Application it names (`namespace`, `name`) and where.
    pub app_namespace: String,
    pub app_name: String,
    pub app_location: Location,
    /// `spec.argocd.write`, when written.
    pub write: Option<Located<String>>,
    pub images: Vec<ImageSpec>,
    pub location: Location,
}

/// The write-back part of `updater`; `None` when it is not of kind `argocd`, or names no
/// Application (no `spec.argocd.app.name`): it writes nothing back, and its images are policies
/// for `$imagepolicy` markers only (`NAMESPACE:ALIAS`, as the reflector reads them), as
/// `image-update create imageupdater --kind argocd` writes it without `--app`.
///
/// # Errors
/// Every problem of the part: no image, a malformed image entry, a per-alias map that is not a
/// map of alias to value, a value that is not a string (or a list of them) where one is meant.
pub(crate) fn write_back(updater: &Updater) -> Result<Option<KubeSphereUpdater>, Vec<Diagnostic>> {
    let what = &updater.what;
    if !updater.is_argocd() {
        return Ok(None);
    }
    let mut errors = updater.argocd.problems.clone();
    let Some(app) = &updater.argocd.app else {
        return if errors.is_empty() {
            Ok(None)
        } else {
            Err(errors)
        };
    };
    let Some(entries) = updater.images_into(&mut errors) else {
        return Err(errors);
    };
    if matches!(&updater.images, Ok(list) if list.is_empty()) {
        errors.push(
            Diagnostic::error(format!("{what}: spec.images lists no image"))
                .at(updater.location.clone()),
        );
    }
    let mut images = Vec::new();
    for image in entries {
        let entry = &image.entry;
        let mut fail = |message: String| {
            errors.push(
                Diagnostic::error(format!("{what}: image {:?}: {message}", image.text))
                    .at(image.location.clone()),
            );
        };
        let single = |field: &str| {
            updater.setting(entry, field).and_then(|s| {
                s.map(|s| s.text().map(|t| Located::new(t, s.location.clone())))
                    .transpose()
            })
        };
        let list = |field: &str| {
            updater
                .setting(entry, field)
                .and_then(|s| s.map(Setting::list).transpose())
        };
        let settings = UpdateSettings {
            update_strategy: reported(single("update-strategy"), &mut fail),
            allow_tags: reported(single("allow-tags"), &mut fail),
            ignore_tags: reported(list("ignore-tags"), &mut fail),
            platforms: reported(list("platforms"), &mut fail),
            ..UpdateSettings::default()
        };
        let mut parsed = ArgoImage::parse(&entry.image);
        parsed.alias.clone_from(&entry.alias);
        parsed.tag = None;
        images.push(ImageSpec {
            alias: entry.alias.clone(),
            entry: image.text.clone(),
            image_text: entry.image.clone(),
            image: parsed,
            constraint: entry.constraint.clone(),
            settings,
            target: ManifestTarget::default(),
            verify: None,
            config: None,
            location: image.location.clone(),
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Some(KubeSphereUpdater {
        namespace: updater.namespace.clone(),
        name: updater.name.clone(),
        app_namespace: app.namespace.clone(),
        app_name: app.name.clone(),
        app_location: updater.argocd.app_location.clone(),
        write: updater
            .argocd
            .write
            .clone()
            .map(|(value, at)| Located::new(value, at)),
        images,
        location: updater.location.clone(),
    }))
}

/// A setting's value, or `None` with its error given to `fail`.
fn reported<T>(result: Result<Option<T>, String>, fail: &mut impl FnMut(String)) -> Option<T> {
    result.unwrap_or_else(|message| {
        fail(message);
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argocd::settings::policy_config;
    use crate::policies::PolicyDocument;
    use crate::reflector::definitions;
    use crate::yaml::Object;

    const SEED: &str = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: demo, namespace: demo}\nspec:\n  images:\n  - nginx:^0.1\n  - myalias=some/image\n  - edge=ghcr.io/acme/edge:stable\n  - localhost:5000/acme/api:~1.2\n  - ghcr.io/acme/jobs\n  kind: argocd\n  argocd:\n    app: {name: demo, namespace: demo}\n    write: git\n    update-strategy: {nginx: semver, myalias: latest, edge: digest, ghcr.io/acme/jobs: latest}\n    allow-tags: {nginx: any, acme/api: 'regexp:^1'}\n    ignore-tags: {myalias: '*-dev, *-old', edge: [a, b]}\n    platforms: {nginx: linux/amd64}\n";

    /// The object is read once; its settings become a selection here and a definition in the
    /// reflector (which fetches it), two translations of one reading into the selection's
    /// configuration, which must agree.
    #[test]
    fn the_write_back_and_the_reflector_translate_one_reading_alike() {
        let doc = crate::yaml::parse_one(SEED).unwrap();
        let updater = crate::kubesphere::read(&Object::root(&doc), "ks.yaml", true);
        let u = write_back(&updater).unwrap().unwrap();
        assert_eq!(
            (u.app_namespace.as_str(), u.app_name.as_str()),
            ("demo", "demo")
        );
        assert_eq!(u.write.as_ref().unwrap().value, "git");
        let no_app = SEED.replace("    app: {name: demo, namespace: demo}\n", "");
        let doc_without = crate::yaml::parse_one(&no_app).unwrap();
        let without = crate::kubesphere::read(&Object::root(&doc_without), "ks.yaml", true);
        assert!(write_back(&without).unwrap().is_none());
        let docs = [PolicyDocument {
            document: doc,
            origin: "ks.yaml".into(),
            positions: true,
            dir: None,
            supplies: false,
        }];
        let defs = definitions::collect(&docs).unwrap();
        assert_eq!(defs.len(), u.images.len());
        for image in &u.images {
            let def = defs
                .iter()
                .find(|d| d.key.name == image.alias && d.key.namespace == u.namespace)
                .unwrap_or_else(|| panic!("no definition for {}", image.alias));
            let mine = policy_config(
                &image.settings,
                image.constraint.as_deref(),
                &image.location,
            )
            .unwrap();
            assert_eq!(mine, def.config, "{}", image.alias);
            assert_eq!(image.image_text, def.image);
        }
    }
}
