//! Argo CD Image Updater's `argocd-image-updater.argoproj.io/*` annotations on an Application.
//!
//! * `image-list`: comma-separated `[ALIAS=]IMAGE[:CONSTRAINT]` entries (trimmed, empty ones
//!   skipped). Only an image with an alias has per-image annotations.
//! * App-wide: `update-strategy`, `allow-tags`, `ignore-tags` (comma list), `force-update` (Go's
//!   `ParseBool`), `pull-secret`.
//! * Per image, `ALIAS.` plus the same keys and `platforms` (comma list), `helm.image-name`,
//!   `helm.image-tag`, `helm.image-spec`, `kustomize.image-name` (Helm and kustomize targets for one
//!   alias are an error).
//! * Write-back: `write-back-method`, `write-back-target`, `git-branch`, `git-repository`.
//!
//! Values are trimmed; an empty value is as if the annotation were absent. An annotation with the
//! prefix that is none of these (a typo, or an alias not in the list) is a warning.

use super::application::Application;
use std::collections::{HashMap, HashSet};

use super::config::{ImageSpec, MAX_IMAGES_PER_APPLICATION, split_entry, too_many_images};
use super::settings::{
    Located, ManifestTarget, PullSecret, UpdateSettings, WriteBackSettings, parse_bool,
    policy_config,
};
use crate::argo_image::ArgoImage;
use crate::diagnostic::{Diagnostic, Location};

/// The annotations' prefix.
pub(crate) const PREFIX: &str = "argocd-image-updater.argoproj.io/";

/// The annotation that lists the images.
pub(crate) const IMAGE_LIST: &str = "argocd-image-updater.argoproj.io/image-list";

const APP_KEYS: [&str; 9] = [
    "image-list",
    "update-strategy",
    "allow-tags",
    "ignore-tags",
    "force-update",
    "pull-secret",
    "write-back-method",
    "write-back-target",
    "git-branch",
];

const IMAGE_KEYS: [&str; 10] = [
    "update-strategy",
    "allow-tags",
    "ignore-tags",
    "force-update",
    "pull-secret",
    "platforms",
    "helm.image-name",
    "helm.image-tag",
    "helm.image-spec",
    "kustomize.image-name",
];

/// What an Application's annotations ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FromAnnotations {
    pub images: Vec<ImageSpec>,
    pub write_back: WriteBackSettings,
    /// The `image-list` annotation.
    pub location: Location,
}

/// Whether an Application carries an image list.
#[must_use]
pub(crate) fn has_image_list(app: &Application) -> bool {
    app.annotations.contains_key(IMAGE_LIST)
}

struct Reader<'a> {
    app: &'a Application,
    origin: &'a str,
}

impl Reader<'_> {
    /// The annotation named by the prefix and `parts`.
    fn get(&self, parts: &[&str]) -> Option<&super::application::Annotation> {
        let mut key =
            String::with_capacity(PREFIX.len() + parts.iter().map(|p| p.len()).sum::<usize>());
        key.push_str(PREFIX);
        for p in parts {
            key.push_str(p);
        }
        self.app.annotations.get(&key)
    }

    /// Whether any annotation's name starts with the prefix and `start`.
    fn any_under(&self, start: &str) -> bool {
        let mut key = String::with_capacity(PREFIX.len() + start.len());
        key.push_str(PREFIX);
        key.push_str(start);
        self.app
            .annotations
            .range::<str, _>((
                std::ops::Bound::Included(key.as_str()),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .is_some_and(|(k, _)| k.starts_with(&key))
    }

    fn value(&self, parts: &[&str]) -> Option<Located<String>> {
        let a = self.get(parts)?;
        let v = a.value.trim();
        (!v.is_empty()).then(|| {
            Located::new(
                v.to_owned(),
                Location::new(self.origin.to_owned(), Some(a.value_position)),
            )
        })
    }

    /// The update settings spelled with `prefix` (`""` app-wide, `ALIAS.` per image).
    fn settings(&self, prefix: &str, errors: &mut Vec<Diagnostic>) -> UpdateSettings {
        if !self.any_under(prefix) {
            return UpdateSettings::default();
        }
        let mut s = UpdateSettings {
            update_strategy: self.value(&[prefix, "update-strategy"]),
            allow_tags: self.value(&[prefix, "allow-tags"]),
            ..UpdateSettings::default()
        };
        if let Some(v) = self.value(&[prefix, "force-update"]) {
            match parse_bool(&v.value) {
                Ok(b) => s.force_update = Some(b),
                Err(e) => errors.push(
                    Diagnostic::error(format!("{PREFIX}{prefix}force-update: {e}")).at(v.location),
                ),
            }
        }
        // Argo keeps the empty items of ignore-tags; they match no tag.
        if let Some(a) = self.get(&[prefix, "ignore-tags"]) {
            s.ignore_tags = Some(a.value.split(',').map(|t| t.trim().to_owned()).collect());
        }
        if let Some(v) = self.value(&[prefix, "pull-secret"]) {
            if let Err(e) = PullSecret::parse(&v.value) {
                errors.push(Diagnostic::error(e).at(v.location.clone()));
            }
            s.pull_secret = Some(v);
        }
        if !prefix.is_empty()
            && let Some(v) = self.value(&[prefix, "platforms"])
        {
            let list: Vec<String> = v
                .value
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect();
            if !list.is_empty() {
                s.platforms = Some(list);
            }
        }
        s
    }

    /// The manifest target of the image `alias` (its annotations under `prefix`, `ALIAS.`); Helm
    /// and kustomize targets for one alias are an error.
    fn target(&self, alias: &str, prefix: &str, errors: &mut Vec<Diagnostic>) -> ManifestTarget {
        let mut target = ManifestTarget::default();
        let v = |k: &str| self.value(&[prefix, k]).map(|l| l.value);
        target.helm_name = v("helm.image-name");
        target.helm_tag = v("helm.image-tag");
        target.helm_spec = v("helm.image-spec");
        target.kustomize_name = v("kustomize.image-name");
        if (target.helm_name.is_some() || target.helm_tag.is_some() || target.helm_spec.is_some())
            && target.kustomize_name.is_some()
        {
            errors.push(
                Diagnostic::error(format!(
                    "image {alias:?} has both Helm and kustomize targets; use one"
                ))
                .at(self.app.annotation_location(
                    self.origin,
                    &format!("{PREFIX}{prefix}kustomize.image-name"),
                )),
            );
        }
        target
    }
}

/// Read the annotations of `app` (found in the file `origin`).
///
/// # Errors
/// Every problem found (a missing or empty image list, a malformed entry, an invalid boolean or
/// pull secret, Helm and kustomize targets for one alias, an alias listed twice).
pub(crate) fn read(
    app: &Application,
    origin: &str,
    warnings: &mut Vec<Diagnostic>,
) -> Result<FromAnnotations, Vec<Diagnostic>> {
    let r = Reader { app, origin };
    let mut errors = Vec::new();
    let list_location = app.annotation_location(origin, IMAGE_LIST);
    let Some(list) = app.annotations.get(IMAGE_LIST) else {
        return Err(vec![
            Diagnostic::error(format!(
                "Application {} has no {IMAGE_LIST} annotation",
                app.id
            ))
            .at(list_location),
        ]);
    };
    let entries = list_entries(&list.value);
    if entries.len() > MAX_IMAGES_PER_APPLICATION {
        let message = too_many_images(IMAGE_LIST, entries.len());
        return Err(vec![Diagnostic::error(message).at(list_location)]);
    }
    let app_settings = r.settings("", &mut errors);
    // Sized for the list: an entry is a kilobyte, and a vector grown by doubling keeps up to twice
    // that.
    let mut images: Vec<ImageSpec> = Vec::with_capacity(entries.len());
    // Looked up once per entry (a scan of either made a long list quadratic): the aliases seen,
    // the images kept by the name that keys them, the errors' texts.
    let mut seen_aliases: HashSet<String> = HashSet::new();
    let mut kept: HashMap<String, usize> = HashMap::new();
    let mut error_texts: HashSet<String> = HashSet::new();
    let mut texts_of = 0;
    for entry in entries {
        let (alias, image_text, constraint) = match split_entry(entry) {
            Ok(parts) => parts,
            Err(e) => {
                errors.push(Diagnostic::error(e).at(list_location.clone()));
                continue;
            }
        };
        let mut settings = app_settings.clone();
        let mut target = ManifestTarget::default();
        if !alias.is_empty() {
            let prefix = format!("{alias}.");
            // An alias listed twice is reported below; its annotations are read once.
            let mut sink = Vec::new();
            let first = seen_aliases.insert(alias.clone());
            settings =
                settings.merged(&r.settings(&prefix, if first { &mut errors } else { &mut sink }));
            target = r.target(&alias, &prefix, &mut errors);
        }
        let mut image = ArgoImage::parse(&image_text);
        image.alias.clone_from(&alias);
        image.tag = None;
        let config = match policy_config(&settings, constraint.as_deref(), &list_location) {
            Ok(c) => Some(c),
            Err(e) => {
                // Reported once: the texts of the errors so far, those added since the last
                // time included.
                error_texts.extend(errors[texts_of..].iter().map(ToString::to_string));
                if error_texts.insert(e.to_string()) {
                    errors.push(e);
                }
                texts_of = errors.len();
                None
            }
        };
        let spec = ImageSpec {
            alias,
            entry: entry.to_owned(),
            image_text,
            image,
            constraint,
            settings,
            target,
            verify: None,
            config,
            location: list_location.clone(),
        };
        if let Some(first) = kept.get(spec.key_alias()).map(|&i| &images[i]) {
            errors.push(
                Diagnostic::error(format!(
                    "{IMAGE_LIST}: {:?} and {:?} both name the image {:?}; give them different aliases (ALIAS=IMAGE)",
                    first.entry,
                    spec.entry,
                    spec.key_alias()
                ))
                .at(list_location.clone()),
            );
            continue;
        }
        kept.insert(spec.key_alias().to_owned(), images.len());
        images.push(spec);
    }
    if images.is_empty() && errors.is_empty() {
        errors.push(
            Diagnostic::error(format!("{IMAGE_LIST} lists no image")).at(list_location.clone()),
        );
    }
    warn_unknown(app, origin, &images, warnings);
    let write_back = WriteBackSettings {
        method: r.value(&["write-back-method"]),
        repository: r.value(&["git-repository"]),
        branch: r.value(&["git-branch"]),
        target: r.value(&["write-back-target"]),
        pull_request: None,
    };
    if errors.is_empty() {
        Ok(FromAnnotations {
            images,
            write_back,
            location: list_location,
        })
    } else {
        Err(errors)
    }
}

/// A warning for every annotation with the prefix that means nothing: neither an Application's
/// key nor an image key of an alias of `images`.
fn warn_unknown(
    app: &Application,
    origin: &str,
    images: &[ImageSpec],
    warnings: &mut Vec<Diagnostic>,
) {
    for (key, a) in &app.annotations {
        let Some(rest) = key.strip_prefix(PREFIX) else {
            continue;
        };
        let known = APP_KEYS.contains(&rest)
            || rest == "git-repository"
            || images.iter().any(|i| {
                !i.alias.is_empty()
                    && rest
                        .strip_prefix(&i.alias)
                        .and_then(|r| r.strip_prefix('.'))
                        .is_some_and(|k| IMAGE_KEYS.contains(&k))
            });
        if !known {
            warnings.push(
                Diagnostic::warning(format!(
                    "annotation {key} means nothing to Argo CD Image Updater (a typo, or an alias that is not in {IMAGE_LIST}?)"
                ))
                .at(Location::new(origin.to_owned(), Some(a.key_position))),
            );
        }
    }
}

/// The entries of an `image-list` annotation: comma-separated, trimmed, empty ones dropped.
fn list_entries(list: &str) -> Vec<&str> {
    list.split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect()
}
