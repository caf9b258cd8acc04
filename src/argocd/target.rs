//! Where an Application's changes go: the write-back method, the target file, and the source whose
//! type decides what is written.
//!
//! Target paths (Argo CD Image Updater's `parseTarget` and `parseKustomizeBase`), all relative to
//! the repository root (the tree being updated):
//!
//! | write-back target | file or directory |
//! |---|---|
//! | unset | `SOURCE_PATH/.argocd-source-APP.yaml` (`.argocd-source-NAMESPACE_APP.yaml` for an Application outside the controller's namespace) |
//! | `kustomization` | the kustomization in `SOURCE_PATH` |
//! | `kustomization:DIR` | `SOURCE_PATH/DIR`; `/DIR` from the repository root |
//! | `helmvalues` | `SOURCE_PATH/values.yaml` |
//! | `helmvalues:FILE` | `SOURCE_PATH/FILE`; `/FILE` from the repository root |
//! | any other text | that path from the repository root: a Helm values file when it ends in `.yaml`/`.yml` (but not `.argocd-source-*`), else an override file; a kustomization file name is refused |
//!
//! Paths are cleaned (`.` and `..` resolved); one that climbs out of the repository is an error.

use super::application::{Application, Source, SourceForm, SourceType};
use super::settings::{Located, Method};
use crate::diagnostic::Diagnostic;

/// The names a kustomization file may have, in the order kustomize looks for them.
pub(crate) const KUSTOMIZATION_FILES: [&str; 3] =
    ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// What a write-back edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The Application manifest itself (the `argocd` method; KubeSphere's `built-in`).
    Application,
    /// An Argo CD parameter-override file (`.argocd-source-APP.yaml`).
    OverrideFile(String),
    /// The kustomization in this directory.
    Kustomization(String),
    /// A Helm values file.
    HelmValues(String),
}

impl Target {
    /// The target's path (the directory of a kustomization), `None` for the Application.
    #[must_use]
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::Application => None,
            Self::OverrideFile(p) | Self::Kustomization(p) | Self::HelmValues(p) => Some(p),
        }
    }
}

/// Go's `path.Clean` for relative paths (`.` for an empty result): `None` when the path climbs
/// above its root.
#[must_use]
pub(crate) fn clean(path: &str) -> Option<String> {
    let cleaned = crate::automation::normalise_item_path(path.trim_start_matches('/'))?;
    Some(if cleaned.is_empty() {
        ".".to_owned()
    } else {
        cleaned
    })
}

/// `SOURCE_PATH` joined with `rest` (or `rest` from the root when it starts with `/`), cleaned.
fn join(source_path: &str, rest: &str) -> Option<String> {
    match rest.strip_prefix('/') {
        Some(from_root) => clean(from_root),
        None => clean(&format!("{source_path}/{rest}")),
    }
}

/// The default override file of an Application; `None` when its source path climbs out of the
/// repository.
#[must_use]
pub(crate) fn default_target(
    app: &Application,
    source_path: &str,
    controller_namespace: &str,
) -> Option<String> {
    let file = if app.namespace_written
        && app.id.namespace != controller_namespace
        && controller_namespace != "default"
    {
        format!(".argocd-source-{}_{}.yaml", app.id.namespace, app.id.name)
    } else {
        format!(".argocd-source-{}.yaml", app.id.name)
    };
    match clean(source_path)? {
        dir if dir == "." => Some(file),
        dir => Some(format!("{dir}/{file}")),
    }
}

/// Resolve a write-back target for a source at `source_path`.
///
/// # Errors
/// A path that climbs out of the repository, or a kustomization file given as a plain target.
pub(crate) fn resolve(
    method: &Method,
    target: Option<&Located<String>>,
    app: &Application,
    source_path: &str,
    source_location: &crate::diagnostic::Location,
    controller_namespace: &str,
) -> Result<Target, Diagnostic> {
    if *method == Method::Application {
        return Ok(Target::Application);
    }
    let Some(t) = target else {
        return default_target(app, source_path, controller_namespace)
            .map(Target::OverrideFile)
            .ok_or_else(|| {
                Diagnostic::error(format!(
                    "the source path {source_path:?} of Application {} resolves outside the repository, so its override file cannot be written there",
                    app.id
                ))
                .at(source_location.clone())
            });
    };
    let text = t.value.trim();
    let escape = |path: &str| {
        Diagnostic::error(format!(
            "write-back target {text:?} of Application {} resolves outside the repository ({path})",
            app.id
        ))
        .at(t.location.clone())
    };
    if text == "kustomization" || text.starts_with("kustomization:") {
        let rest = text.strip_prefix("kustomization").unwrap_or("");
        let rest = rest.strip_prefix(':').unwrap_or(".");
        let dir =
            join(source_path, rest).ok_or_else(|| escape(&format!("{source_path}/{rest}")))?;
        return Ok(Target::Kustomization(dir));
    }
    if text == "helmvalues" || text.starts_with("helmvalues:") {
        let rest = text.strip_prefix("helmvalues").unwrap_or("");
        let rest = rest.strip_prefix(':').unwrap_or("values.yaml");
        let file =
            join(source_path, rest).ok_or_else(|| escape(&format!("{source_path}/{rest}")))?;
        return Ok(Target::HelmValues(file));
    }
    let file = clean(text.trim_start_matches('/')).ok_or_else(|| escape(text))?;
    let base = file.rsplit('/').next().unwrap_or(&file);
    if KUSTOMIZATION_FILES.contains(&base) {
        return Err(Diagnostic::error(format!(
            "write-back target {text:?} is a kustomization file; writing overrides into it would replace its content"
        ))
        .at(t.location.clone())
        .with_hint("write `kustomization:DIR` to update its images: entries in place"));
    }
    if (file.ends_with(".yaml") || file.ends_with(".yml")) && !base.starts_with(".argocd-source-") {
        Ok(Target::HelmValues(file))
    } else {
        Ok(Target::OverrideFile(file))
    }
}

/// Tells whether a file exists in the tree (for a source's type).
pub trait Exists {
    fn exists(&self, path: &str) -> bool;
}

/// The type Argo CD would detect for a source: its declared block, a `chart`, else a kustomization
/// or a `Chart.yaml` in its directory (kustomize first), else a plain directory.
pub(crate) fn source_type(source: &Source, files: &dyn Exists) -> SourceType {
    if let Some(t) = source.declared {
        return t;
    }
    if !source.chart.is_empty() {
        return SourceType::Helm;
    }
    let dir = clean(&source.path).unwrap_or_else(|| ".".to_owned());
    let at = |name: &str| {
        if dir == "." {
            name.to_owned()
        } else {
            format!("{dir}/{name}")
        }
    };
    if KUSTOMIZATION_FILES.iter().any(|f| files.exists(&at(f))) {
        SourceType::Kustomize
    } else if files.exists(&at("Chart.yaml")) {
        SourceType::Helm
    } else {
        SourceType::Directory
    }
}

/// The source an Application's images are written for, and its type, as Argo CD Image Updater
/// chooses them: a kustomization target makes it Kustomize, a values-file target Helm; a
/// multi-source Application takes the first source whose type is Helm, Kustomize or Plugin, and
/// then the first source of that type (declared before detected).
pub(crate) fn choose_source(
    app: &Application,
    target: &Target,
    files: &dyn Exists,
) -> (usize, SourceType) {
    let forced = match target {
        Target::Kustomization(_) => Some(SourceType::Kustomize),
        Target::HelmValues(_) => Some(SourceType::Helm),
        _ => None,
    };
    let types: Vec<SourceType> = app.sources.iter().map(|s| source_type(s, files)).collect();
    if app.form != SourceForm::Multiple {
        return (0, forced.unwrap_or(types[0]));
    }
    let wanted = forced.or_else(|| {
        types.iter().copied().find(|t| {
            matches!(
                t,
                SourceType::Helm | SourceType::Kustomize | SourceType::Plugin
            )
        })
    });
    let Some(wanted) = wanted else {
        return (0, SourceType::Directory);
    };
    let index = app
        .sources
        .iter()
        .position(|s| s.declared == Some(wanted))
        .or_else(|| types.iter().position(|t| *t == wanted))
        .or_else(|| {
            app.sources.iter().position(|s| {
                matches!(
                    s.declared,
                    Some(SourceType::Helm | SourceType::Kustomize | SourceType::Plugin)
                )
            })
        })
        .unwrap_or(0);
    (index, wanted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Location;

    fn app(ns: Option<&str>) -> Application {
        let text: &'static str = Box::leak(
            format!(
                "kind: Application\nmetadata:\n  name: cart\n{}spec:\n  source: {{path: deploy/cart}}\n",
                ns.map(|n| format!("  namespace: {n}\n")).unwrap_or_default()
            )
            .into_boxed_str(),
        );
        let file = super::super::application::ParsedFile {
            origin: "apps/cart.yaml".into(),
            tree_path: None,
            tree: crate::yaml::tree::Tree::parse(text).unwrap(),
        };
        let node = file.tree.docs()[0].root.unwrap();
        super::super::application::read(
            &file,
            super::super::application::ObjectRef {
                file: 0,
                document: 0,
                node,
            },
            "argocd",
        )
        .unwrap()
    }

    fn target(t: &str, source: &str) -> Result<Target, String> {
        resolve(
            &Method::Git(super::super::settings::GitCredentials::RepoCreds),
            Some(&Located::new(
                t.to_owned(),
                Location::new("apps/cart.yaml", None),
            )),
            &app(None),
            source,
            &Location::new("apps/cart.yaml", None),
            "argocd",
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn target_path_table() {
        use Target::{HelmValues as H, Kustomization as K, OverrideFile as O};
        for (t, source, want) in [
            ("helmvalues", "", H("values.yaml".into())),
            (
                "helmvalues:./cart-values.yaml",
                ".",
                H("cart-values.yaml".into()),
            ),
            (
                "helmvalues",
                "charts/cart",
                H("charts/cart/values.yaml".into()),
            ),
            (
                "helmvalues:/envs/prod/cart.yaml",
                "charts",
                H("envs/prod/cart.yaml".into()),
            ),
            (
                "helmvalues:envs/cart.yaml",
                "charts",
                H("charts/envs/cart.yaml".into()),
            ),
            (
                "helmvalues:../shared/cart.yaml",
                "charts/cart",
                H("charts/shared/cart.yaml".into()),
            ),
            ("kustomization", "", K(".".into())),
            (
                "kustomization:/overlays/prod",
                "base",
                K("overlays/prod".into()),
            ),
            (
                "kustomization:../prod",
                "overlays/dev",
                K("overlays/prod".into()),
            ),
            (
                "envs/prod/override.txt",
                "x",
                O("envs/prod/override.txt".into()),
            ),
            ("/envs/prod/cart.yaml", "x", H("envs/prod/cart.yaml".into())),
            (
                "envs/.argocd-source-cart.yaml",
                "x",
                O("envs/.argocd-source-cart.yaml".into()),
            ),
        ] {
            assert_eq!(target(t, source).unwrap(), want, "{t} with {source:?}");
        }
    }

    #[test]
    fn escapes_and_kustomization_files_are_refused() {
        let e = target("helmvalues:../../../values.yaml", "charts/cart").unwrap_err();
        assert!(e.contains("resolves outside the repository"), "{e}");
        assert!(target("kustomization:/../x", "a").is_err());
        assert!(target("../x.yaml", "a").is_err());
        let e = target("overlays/prod/kustomization.yaml", "").unwrap_err();
        assert!(e.contains("is a kustomization file"), "{e}");
    }

    #[test]
    fn default_override_file_names() {
        assert_eq!(
            default_target(&app(None), "deploy/cart", "argocd").as_deref(),
            Some("deploy/cart/.argocd-source-cart.yaml")
        );
        assert_eq!(
            default_target(&app(Some("argocd")), "deploy/cart/", "argocd").as_deref(),
            Some("deploy/cart/.argocd-source-cart.yaml")
        );
        assert_eq!(
            default_target(&app(Some("shop")), "deploy/cart", "argocd").as_deref(),
            Some("deploy/cart/.argocd-source-shop_cart.yaml")
        );
        assert_eq!(
            default_target(&app(Some("shop")), ".", "default").as_deref(),
            Some(".argocd-source-cart.yaml")
        );
        assert_eq!(
            default_target(&app(Some("shop")), "", "argocd").as_deref(),
            Some(".argocd-source-shop_cart.yaml")
        );
        // A source path out of the repository has no override file (it was written at the root).
        assert_eq!(default_target(&app(None), "../outside", "argocd"), None);
        assert_eq!(default_target(&app(None), "a/../../b", "argocd"), None);
    }

    #[test]
    fn cleaning() {
        assert_eq!(clean("a/./b/../c/").as_deref(), Some("a/c"));
        assert_eq!(clean("").as_deref(), Some("."));
        assert_eq!(clean("a/../.."), None);
    }
}
