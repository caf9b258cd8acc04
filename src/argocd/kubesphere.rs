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
//! The images' selection (strategy, allow/ignore tags, platforms, secret) is already read by the
//! reflector's definitions ([`crate::reflector::definitions`]), keyed `NAMESPACE:ALIAS`; this module
//! reads the same entries with the same rules for the write-back side (which Application, which
//! method), and a test keeps the two readings equal.

use super::application::{ParsedFile, namespace_name};
use super::config::{ImageSpec, MAX_IMAGES_PER_APPLICATION, too_many_images};
use super::image::ArgoImage;
use super::settings::{Located, ManifestTarget, UpdateSettings};
use crate::diagnostic::{Diagnostic, Location};
use crate::reflector::kubesphere::{Engine, ImageEntry};
use crate::yaml::tree::NodeId;

/// The API group of KubeSphere's ImageUpdater.
pub(crate) const GROUP: &str = crate::reflector::kubesphere::KUBESPHERE_GROUP;

/// A KubeSphere ImageUpdater of kind `argocd`.
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

/// Whether the object at `node` is a KubeSphere ImageUpdater of kind `argocd` (an absent kind
/// means `argocd`, as the reflector reads it).
#[must_use]
pub(crate) fn is_argocd(file: &ParsedFile<'_>, node: NodeId) -> bool {
    let t = &file.tree;
    let (group, kind) = super::application::kind_of(t, node);
    group == GROUP
        && kind == "ImageUpdater"
        && t.at(node, &["spec", "kind"])
            .and_then(|n| t.text_value(n))
            .is_none_or(|k| k == "argocd")
}

/// Read the updater at `node`; `None` when it names no Application (no
/// `spec.argocd.app.name`): it writes nothing back, and its images are
/// policies for `$imagepolicy` markers only (`NAMESPACE:ALIAS`, as the
/// reflector reads them), as `image-update create imageupdater --kind
/// argocd` writes it without `--app`.
///
/// # Errors
/// Every problem found: a malformed image entry, a per-alias map that is
/// not a map of strings.
pub(crate) fn read(
    file: &ParsedFile<'_>,
    node: NodeId,
) -> Result<Option<KubeSphereUpdater>, Vec<Diagnostic>> {
    let t = &file.tree;
    let (namespace, name) = namespace_name(t, node);
    let namespace = namespace.unwrap_or_else(|| "default".to_owned());
    let what = format!("ImageUpdater {namespace}/{name}");
    let mut errors = Vec::new();
    let location = file.location(t.at(node, &["metadata", "name"]).unwrap_or(node));
    let argo = t.at(node, &["spec", "argocd"]);
    let app = argo.and_then(|a| t.get(a, "app"));
    let app_name = app
        .and_then(|a| t.get(a, "name"))
        .and_then(|n| t.text_value(n))
        .unwrap_or("")
        .to_owned();
    let app_namespace = app
        .and_then(|a| t.get(a, "namespace"))
        .and_then(|n| t.text_value(n))
        .filter(|n| !n.is_empty())
        .unwrap_or(&namespace)
        .to_owned();
    let app_location = file.location(app.or(argo).unwrap_or(node));
    if app_name.is_empty() {
        return Ok(None);
    }
    let write = argo.and_then(|a| t.get(a, "write")).and_then(|n| {
        t.text_value(n)
            .map(|v| Located::new(v.to_owned(), file.location(n)))
    });
    // The entry's value of the per-alias map `FIELD` (under one of its setting keys), with its
    // location.
    let per_alias = |field: &str,
                     entry: &ImageEntry|
     -> Result<Option<(Vec<String>, Location)>, Diagnostic> {
        let Some(map) = argo.and_then(|a| t.get(a, field)) else {
            return Ok(None);
        };
        if t.text_value(map).is_none() && !t.is_map(map) {
            return Ok(None);
        }
        if !t.is_map(map) {
            return Err(Diagnostic::error(format!(
                "{what}: spec.argocd.{field} is not a map of alias to value"
            ))
            .at(file.location(map)));
        }
        let mut found = entry
            .setting_keys()
            .filter_map(|k| t.get(map, k).map(|v| (v, k)));
        let Some((v, key)) = found.next() else {
            return Ok(None);
        };
        if let Some((twice, other)) = found.next() {
            return Err(Diagnostic::error(format!(
                "{what}: spec.argocd.{field} gives the image's setting twice, under {key:?} and {other:?}; keep one"
            ))
            .at(file.location(twice)));
        }
        let at = file.location(v);
        if let Some(s) = t.text_value(v) {
            return Ok(Some((vec![s.to_owned()], at)));
        }
        if t.is_seq(v) {
            let items = t
                .items(v)
                .iter()
                .map(|i| {
                    t.text_value(*i).map(str::to_owned).ok_or_else(|| {
                        Diagnostic::error(format!(
                            "{what}: spec.argocd.{field}.{key} holds a non-string"
                        ))
                        .at(file.location(*i))
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Some((items, at)));
        }
        Ok(None)
    };
    let mut images = Vec::new();
    let entries: Vec<NodeId> = t
        .at(node, &["spec", "images"])
        .map(|n| t.items(n).to_vec())
        .unwrap_or_default();
    if entries.is_empty() {
        errors.push(
            Diagnostic::error(format!("{what}: spec.images lists no image")).at(location.clone()),
        );
    }
    if let Some(over) = entries.get(MAX_IMAGES_PER_APPLICATION) {
        let message = too_many_images(&format!("{what}: spec.images"), entries.len());
        return Err(vec![Diagnostic::error(message).at(file.location(*over))]);
    }
    for e in entries {
        let at = file.location(e);
        let Some(text) = t.text_value(e) else {
            errors
                .push(Diagnostic::error(format!("{what}: spec.images holds a non-string")).at(at));
            continue;
        };
        let entry = match ImageEntry::parse(text, Engine::ArgoCd) {
            Ok(entry) => entry,
            Err(m) => {
                errors.push(Diagnostic::error(format!("{what}: image {text:?}: {m}")).at(at));
                continue;
            }
        };
        let alias = entry.alias.clone();
        let mut settings = UpdateSettings::default();
        let mut one = |field: &str| -> Option<(Vec<String>, Location)> {
            per_alias(field, &entry).unwrap_or_else(|d| {
                errors.push(d);
                None
            })
        };
        let single = |v: Option<(Vec<String>, Location)>| {
            v.and_then(|(mut list, at)| list.pop().map(|s| Located::new(s, at)))
        };
        let list = |v: Option<(Vec<String>, Location)>| {
            v.map(|(list, _)| {
                list.iter()
                    .flat_map(|s| s.split(','))
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        };
        settings.update_strategy = single(one("update-strategy"));
        settings.allow_tags = single(one("allow-tags"));
        settings.ignore_tags = list(one("ignore-tags"));
        settings.platforms = list(one("platforms"));
        // `secret` names a dockerconfigjson Secret; the reflector's definitions read it.
        let _ = one("secret");
        let mut image = ArgoImage::parse(&entry.image);
        image.alias.clone_from(&alias);
        image.tag = None;
        images.push(ImageSpec {
            alias,
            entry: text.to_owned(),
            image_text: entry.image,
            image,
            constraint: entry.constraint,
            settings,
            target: ManifestTarget::default(),
            verify: None,
            config: None,
            location: at,
        });
    }
    if errors.is_empty() {
        Ok(Some(KubeSphereUpdater {
            namespace,
            name,
            app_namespace,
            app_name,
            app_location,
            write,
            images,
            location,
        }))
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argocd::settings::policy_config;
    use crate::policies::PolicyDocument;
    use crate::reflector::definitions;

    const SEED: &str = "apiVersion: gitops.kubesphere.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: demo, namespace: demo}\nspec:\n  images:\n  - nginx:^0.1\n  - myalias=some/image\n  - edge=ghcr.io/acme/edge:stable\n  - localhost:5000/acme/api:~1.2\n  - ghcr.io/acme/jobs\n  kind: argocd\n  argocd:\n    app: {name: demo, namespace: demo}\n    write: git\n    update-strategy: {nginx: semver, myalias: latest, edge: digest, ghcr.io/acme/jobs: latest}\n    allow-tags: {nginx: any, acme/api: 'regexp:^1'}\n    ignore-tags: {myalias: '*-dev, *-old', edge: [a, b]}\n    platforms: {nginx: linux/amd64}\n";

    /// The write-back side reads the same configuration, under the same keys, as the reflector's
    /// definitions (which fetch these images).
    #[test]
    fn reads_the_entries_as_the_reflector_does() {
        let file = ParsedFile {
            origin: "ks.yaml".into(),
            tree_path: None,
            tree: crate::yaml::tree::Tree::parse(SEED).unwrap(),
        };
        let root = file.tree.docs()[0].root.unwrap();
        assert!(is_argocd(&file, root));
        let u = read(&file, root).unwrap().unwrap();
        assert_eq!(
            (u.app_namespace.as_str(), u.app_name.as_str()),
            ("demo", "demo")
        );
        // Without an Application it writes nothing back: no updater to plan.
        let no_app = SEED.replace("    app: {name: demo, namespace: demo}\n", "");
        let file_without = ParsedFile {
            origin: "ks.yaml".into(),
            tree_path: None,
            tree: crate::yaml::tree::Tree::parse(&no_app).unwrap(),
        };
        let root_without = file_without.tree.docs()[0].root.unwrap();
        assert!(read(&file_without, root_without).unwrap().is_none());
        assert_eq!(u.write.as_ref().unwrap().value, "git");
        let docs: Vec<PolicyDocument> = crate::yaml::parse_documents(SEED)
            .unwrap()
            .into_iter()
            .map(|document| PolicyDocument {
                document,
                origin: "ks.yaml".into(),
                positions: true,
                dir: None,
                supplies: false,
            })
            .collect();
        let defs = definitions::collect(&docs).unwrap();
        assert_eq!(defs.len(), u.images.len());
        // Images without an alias are keyed by their repository path, their settings found
        // under it or under the image as written.
        let aliases: Vec<&str> = u.images.iter().map(|i| i.alias.as_str()).collect();
        assert_eq!(
            aliases,
            ["nginx", "myalias", "edge", "acme/api", "acme/jobs"]
        );
        assert!(u.images[3].settings.allow_tags.is_some());
        assert!(u.images[4].settings.update_strategy.is_some());
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
