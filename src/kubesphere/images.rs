//! `spec.kind` (the engine) and the entries of `spec.images`, `[ALIAS=]IMAGE[:CONSTRAINT]`.

/// The engine an ImageUpdater names (`spec.kind`, default `argocd`): it decides the name of an
/// image written without an alias.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    ArgoCd,
    FluxCd,
}

impl Engine {
    /// `spec.kind`'s value; `None` for neither engine.
    #[must_use]
    pub(crate) fn from_kind(kind: &str) -> Option<Self> {
        match kind {
            "argocd" => Some(Self::ArgoCd),
            "fluxcd" => Some(Self::FluxCd),
            _ => None,
        }
    }
}

/// One `spec.images` entry: `[ALIAS=]IMAGE[:CONSTRAINT]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageEntry {
    /// The name its policy is keyed by (`NAMESPACE:ALIAS`) and its per-alias settings are found
    /// under: the alias written, else derived from the image ([`ImageEntry::parse`]).
    pub alias: String,
    /// Whether the entry writes its alias (`ALIAS=IMAGE`).
    pub aliased: bool,
    pub image: String,
    pub constraint: Option<String>,
}

impl ImageEntry {
    /// Parse an entry of an updater of `engine`. Without `ALIAS=`, the alias is derived:
    /// * `argocd`: as Argo CD Image Updater names an image without an alias, its repository path
    ///   without the registry (`ghcr.io/acme/web` is `acme/web`, `nginx` stays `nginx`), which is
    ///   always a valid marker name (`NAMESPACE:acme/web`), so a registry with a port needs no
    ///   alias: the write-back uses no marker;
    /// * `fluxcd`: the image as written (seed 002's `nginx` for `nginx:^0.1`): a fluxcd updater's
    ///   images are the policies of `$imagepolicy` markers, named `NAMESPACE:ALIAS`, so an image
    ///   whose name holds a `:` (a registry with a port) needs an alias.
    ///
    /// # Errors
    /// An empty alias or image, a written alias with `:`, spaces or quotes, a fluxcd image
    /// without an alias whose name cannot be a marker's.
    pub(crate) fn parse(entry: &str, engine: Engine) -> Result<Self, String> {
        let entry = entry.trim();
        let (alias, rest) = match entry.split_once('=') {
            Some((a, r)) => (Some(a.trim()), r.trim()),
            None => (None, entry),
        };
        // The constraint follows the first `:` after the last `/`.
        let slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (image, constraint) = match rest[slash..].find(':') {
            Some(i) => (
                &rest[..slash + i],
                Some(rest[slash + i + 1..].trim().to_owned()).filter(|c| !c.is_empty()),
            ),
            None => (rest, None),
        };
        if image.is_empty() {
            return Err(format!("{entry:?}: the image is empty"));
        }
        let aliased = alias.is_some();
        let marker_safe = |name: &str| !name.is_empty() && !name.contains([':', ' ', '"']);
        let alias = match (alias, engine) {
            (Some(alias), _) if marker_safe(alias) => alias.to_owned(),
            (Some(alias), _) => {
                return Err(format!(
                    "{entry:?}: the alias {alias:?} cannot name a policy (NAMESPACE:ALIAS): an alias is not empty and has no `:`, space or quote"
                ));
            }
            (None, Engine::ArgoCd) => {
                let name = crate::argo_image::ArgoImage::parse(image).name;
                if !marker_safe(&name) {
                    return Err(format!(
                        "{entry:?}: no name can be derived from the image ({name:?}); write ALIAS=IMAGE"
                    ));
                }
                name
            }
            (None, Engine::FluxCd) if marker_safe(image) => image.to_owned(),
            (None, Engine::FluxCd) => {
                return Err(format!(
                    "{entry:?}: a fluxcd updater's images are the policies of $imagepolicy markers, named NAMESPACE:ALIAS, and without an alias the image {image:?} would be the name, which cannot hold `:`; write ALIAS=IMAGE"
                ));
            }
        };
        Ok(Self {
            alias,
            aliased,
            image: image.to_owned(),
            constraint,
        })
    }

    /// The keys of the per-alias maps (`spec.argocd.update-strategy`...) that may hold this
    /// entry's settings: its alias, and for an entry written without one, also the image as
    /// written when the alias differs (`ghcr.io/acme/web`, whose alias is `acme/web`).
    pub(crate) fn setting_keys(&self) -> impl Iterator<Item = &str> {
        let written = (!self.aliased && self.image != self.alias).then_some(self.image.as_str());
        std::iter::once(self.alias.as_str()).chain(written)
    }
}
