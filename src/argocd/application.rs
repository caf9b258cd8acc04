//! Argo CD `Application` manifests (`argoproj.io/v1alpha1`), read from their span trees.
//!
//! What write-back needs of an Application: its name, namespace, labels and annotations, and each
//! source (`spec.source`, every `spec.sources[]`, or `spec.sourceHydrator.drySource`) with its
//! `repoURL`, `path`, `targetRevision`, `chart`, the block that declares its type (`kustomize`,
//! `helm`, `plugin`, `directory`) and the image overrides it already carries
//! (`kustomize.images`, `helm.parameters`, `plugin.env`). Every value is read as text, and every
//! field keeps its node, so errors point at `file:line:col` and the `argocd` write-back method can
//! splice the manifest itself.

use std::collections::BTreeMap;
use std::fmt;

use crate::diagnostic::{Diagnostic, Location};
use crate::text::Position;
use crate::yaml::tree::{NodeId, Tree};

/// The API group of Applications.
pub(crate) const APPLICATION_GROUP: &str = "argoproj.io";

/// A file that may hold Applications or image updater configuration.
#[derive(Debug, Clone)]
pub struct InputFile<'a> {
    /// The file as the user knows it (a path as given, `stdin`).
    pub origin: String,
    /// Its path relative to the tree being updated (`/` separators), when it lies in that tree;
    /// `None` for a policy file from elsewhere (its Applications cannot be patched in place).
    pub tree_path: Option<String>,
    pub text: &'a str,
}

/// A parsed input file.
#[derive(Debug)]
pub struct ParsedFile<'a> {
    pub origin: String,
    pub tree_path: Option<String>,
    pub tree: Tree<'a>,
}

impl ParsedFile<'_> {
    /// The location of a node of this file.
    #[must_use]
    pub fn location(&self, node: NodeId) -> Location {
        Location::new(self.origin.clone(), Some(self.tree.node_position(node)))
    }
}

/// Where an object is: its file, document and root node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectRef {
    pub file: usize,
    pub document: usize,
    pub node: NodeId,
}

/// `NAMESPACE/NAME` of an Application.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AppId {
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// How Argo CD renders a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceType {
    Kustomize,
    Helm,
    Plugin,
    Directory,
}

impl fmt::Display for SourceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Kustomize => "Kustomize",
            Self::Helm => "Helm",
            Self::Plugin => "Plugin",
            Self::Directory => "Directory",
        })
    }
}

/// A `helm.parameters` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelmParam {
    pub name: String,
    pub value: String,
    pub force_string: bool,
}

/// One source of an Application.
#[derive(Debug, Clone)]
pub struct Source {
    /// The source's node (`spec.source`, `spec.sources[i]`, `spec.sourceHydrator.drySource`).
    pub node: NodeId,
    /// The field path of the source in the object (`spec.source`, `spec.sources[1]`).
    pub field: String,
    pub repo_url: String,
    pub path: String,
    pub target_revision: String,
    pub chart: String,
    /// The type its spec declares (`kustomize:`, `helm:`, `plugin:` or `directory:` present).
    pub declared: Option<SourceType>,
    pub kustomize_images: Vec<String>,
    pub helm_parameters: Vec<HelmParam>,
    pub plugin_env: Vec<(String, String)>,
}

/// One annotation: its value and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub value: String,
    pub key_position: Position,
    pub value_position: Position,
}

/// How an Application names its sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceForm {
    /// `spec.source`.
    Single,
    /// `spec.sources` (several sources).
    Multiple,
    /// `spec.sourceHydrator` (its `drySource`).
    Hydrator,
}

/// An Argo CD Application.
#[derive(Debug, Clone)]
pub struct Application {
    pub id: AppId,
    /// `metadata.namespace` was written (else the controller's namespace is assumed).
    pub namespace_written: bool,
    pub object: ObjectRef,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, Annotation>,
    pub sources: Vec<Source>,
    /// Where its sources are written.
    pub form: SourceForm,
    /// The object (its `metadata.name`).
    pub location: Location,
}

impl Application {
    /// The location of an annotation's value (the object's when it has no such annotation).
    #[must_use]
    pub fn annotation_location(&self, origin: &str, key: &str) -> Location {
        self.annotations.get(key).map_or_else(
            || self.location.clone(),
            |a| Location::new(origin.to_owned(), Some(a.value_position)),
        )
    }
}

/// `apiVersion`'s group and `kind` of an object node.
#[must_use]
pub(crate) fn kind_of<'t>(tree: &'t Tree<'_>, node: NodeId) -> (&'t str, &'t str) {
    let api = tree
        .get(node, "apiVersion")
        .and_then(|n| tree.text_value(n))
        .unwrap_or("");
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = tree
        .get(node, "kind")
        .and_then(|n| tree.text_value(n))
        .unwrap_or("");
    (group, kind)
}

/// `metadata.namespace` and `metadata.name` (`None` for an absent namespace).
#[must_use]
pub(crate) fn namespace_name(tree: &Tree<'_>, node: NodeId) -> (Option<String>, String) {
    let text = |k: &str| {
        tree.at(node, &["metadata", k])
            .and_then(|n| tree.text_value(n))
            .map(str::to_owned)
    };
    (
        text("namespace").filter(|n| !n.is_empty()),
        text("name").unwrap_or_default(),
    )
}

/// A mapping of strings (`metadata.labels`), values as text.
#[must_use]
pub(crate) fn string_map(tree: &Tree<'_>, node: Option<NodeId>) -> BTreeMap<String, String> {
    node.map(|n| {
        tree.entries(n)
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    tree.scalar(*k)?.to_owned(),
                    tree.text_value(*v).unwrap_or("").to_owned(),
                ))
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Read the Application at `object`. `namespace` is the namespace assumed when the manifest has
/// none (the Argo CD controller's).
///
/// # Errors
/// A manifest without a name, or whose `spec` has no source.
pub(crate) fn read(
    file: &ParsedFile<'_>,
    object: ObjectRef,
    default_namespace: &str,
) -> Result<Application, Diagnostic> {
    let tree = &file.tree;
    let node = object.node;
    let (namespace, name) = namespace_name(tree, node);
    let location = file.location(tree.at(node, &["metadata", "name"]).unwrap_or(node));
    if name.is_empty() {
        return Err(Diagnostic::error("an Argo CD Application has no metadata.name").at(location));
    }
    // The name and namespace become file names (`.argocd-source-NAMESPACE_NAME.yaml`), policy
    // keys and branch names: only what Kubernetes itself accepts is read.
    if let Some(problem) = crate::object::name_problem("metadata.name", &name) {
        return Err(
            Diagnostic::error(format!("an Argo CD Application's {problem}"))
                .at(location)
                .with_hint(
                    "Argo CD refuses such an Application too; the write-back is not planned",
                ),
        );
    }
    if let Some(problem) = namespace
        .as_deref()
        .and_then(|ns| crate::object::namespace_problem("metadata.namespace", ns))
    {
        let at = file.location(tree.at(node, &["metadata", "namespace"]).unwrap_or(node));
        return Err(Diagnostic::error(format!("Application {name}'s {problem}")).at(at));
    }
    let id = AppId {
        namespace: namespace
            .clone()
            .unwrap_or_else(|| default_namespace.to_owned()),
        name,
    };
    let mut annotations = BTreeMap::new();
    if let Some(map) = tree.at(node, &["metadata", "annotations"]) {
        for (k, v) in tree.entries(map) {
            let Some(key) = tree.scalar(*k) else { continue };
            annotations.insert(
                key.to_owned(),
                Annotation {
                    value: tree.text_value(*v).unwrap_or("").to_owned(),
                    key_position: tree.node_position(*k),
                    value_position: tree.node_position(*v),
                },
            );
        }
    }
    let spec = tree.get(node, "spec").map(|s| tree.resolve(s));
    let mut sources = Vec::new();
    let mut form = SourceForm::Single;
    if let Some(spec) = spec {
        if let Some(list) = tree.get(spec, "sources").filter(|s| tree.is_seq(*s)) {
            form = SourceForm::Multiple;
            for (i, s) in tree.items(list).iter().enumerate() {
                sources.push(read_source(
                    tree,
                    tree.resolve(*s),
                    format!("spec.sources[{i}]"),
                ));
            }
        } else if let Some(s) = tree.get(spec, "source").filter(|s| tree.is_map(*s)) {
            sources.push(read_source(tree, tree.resolve(s), "spec.source".to_owned()));
        } else if let Some(dry) = tree.at(spec, &["sourceHydrator", "drySource"]) {
            form = SourceForm::Hydrator;
            sources.push(read_source(
                tree,
                dry,
                "spec.sourceHydrator.drySource".to_owned(),
            ));
        }
    }
    if sources.is_empty() {
        return Err(Diagnostic::error(format!(
            "Application {id} has no spec.source, spec.sources or spec.sourceHydrator"
        ))
        .at(location));
    }
    Ok(Application {
        id,
        namespace_written: namespace.is_some(),
        object,
        labels: string_map(tree, tree.at(node, &["metadata", "labels"])),
        annotations,
        sources,
        form,
        location,
    })
}

fn read_source(tree: &Tree<'_>, node: NodeId, field: String) -> Source {
    let text = |k: &str| {
        tree.lookup(node, k)
            .and_then(|n| tree.text_value(n))
            .unwrap_or("")
            .to_owned()
    };
    let present = |k: &str| {
        tree.lookup(node, k).is_some_and(|n| {
            tree.text_value(n).is_some() || !tree.entries(n).is_empty() || tree.is_map(n)
        })
    };
    let declared = [
        ("kustomize", SourceType::Kustomize),
        ("helm", SourceType::Helm),
        ("plugin", SourceType::Plugin),
        ("directory", SourceType::Directory),
    ]
    .into_iter()
    .find(|(k, _)| present(k))
    .map(|(_, t)| t);
    let kustomize_images = tree
        .at(node, &["kustomize", "images"])
        .map(|seq| {
            tree.items(seq)
                .iter()
                .filter_map(|i| tree.text_value(*i).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let helm_parameters = tree
        .at(node, &["helm", "parameters"])
        .map(|seq| {
            tree.items(seq)
                .iter()
                .map(|p| {
                    let field = |k: &str| {
                        tree.lookup(*p, k)
                            .and_then(|n| tree.text_value(n))
                            .unwrap_or("")
                            .to_owned()
                    };
                    HelmParam {
                        name: field("name"),
                        value: field("value"),
                        force_string: matches!(
                            field("forceString").as_str(),
                            "true" | "True" | "TRUE"
                        ),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let plugin_env = tree
        .at(node, &["plugin", "env"])
        .map(|seq| {
            tree.items(seq)
                .iter()
                .map(|e| {
                    let field = |k: &str| {
                        tree.lookup(*e, k)
                            .and_then(|n| tree.text_value(n))
                            .unwrap_or("")
                            .to_owned()
                    };
                    (field("name"), field("value"))
                })
                .collect()
        })
        .unwrap_or_default();
    Source {
        node,
        field,
        repo_url: text("repoURL"),
        path: text("path"),
        target_revision: text("targetRevision"),
        chart: text("chart"),
        declared,
        kustomize_images,
        helm_parameters,
        plugin_env,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Application, Diagnostic> {
        let file = ParsedFile {
            origin: "apps/shop.yaml".into(),
            tree_path: Some("apps/shop.yaml".into()),
            tree: Tree::parse(text).unwrap(),
        };
        let node = file.tree.docs()[0].root.unwrap();
        read(
            &file,
            ObjectRef {
                file: 0,
                document: 0,
                node,
            },
            "argocd",
        )
    }

    #[test]
    fn single_and_multiple_sources() {
        let app = parse(
            "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  labels: {team: web}\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=ghcr.io/acme/web\nspec:\n  source:\n    repoURL: https://git.example/acme/deploy\n    path: envs/prod\n    targetRevision: main\n    kustomize:\n      images: [ghcr.io/acme/web:1.0.0]\n",
        )
        .unwrap();
        assert_eq!(app.id.to_string(), "argocd/shop");
        assert!(!app.namespace_written);
        assert_eq!(app.labels["team"], "web");
        let s = &app.sources[0];
        assert_eq!(
            (s.path.as_str(), s.declared),
            ("envs/prod", Some(SourceType::Kustomize))
        );
        assert_eq!(s.kustomize_images, ["ghcr.io/acme/web:1.0.0"]);
        let a = &app.annotations["argocd-image-updater.argoproj.io/image-list"];
        assert_eq!(a.value, "web=ghcr.io/acme/web");
        assert_eq!(a.value_position.line, 7);

        let app = parse(
            "kind: Application\nmetadata: {name: multi, namespace: team-a}\nspec:\n  sources:\n  - repoURL: https://charts.example\n    chart: web\n    helm:\n      parameters:\n      - {name: image.tag, value: '1.2', forceString: true}\n  - repoURL: https://git.example/values\n    ref: values\n",
        )
        .unwrap();
        assert_eq!(app.form, SourceForm::Multiple);
        assert_eq!(app.sources.len(), 2);
        assert_eq!(app.sources[0].declared, Some(SourceType::Helm));
        assert_eq!(
            app.sources[0].helm_parameters[0],
            HelmParam {
                name: "image.tag".into(),
                value: "1.2".into(),
                force_string: true
            }
        );
        assert_eq!(app.sources[1].field, "spec.sources[1]");
        assert_eq!(app.sources[1].declared, None);
    }

    #[test]
    fn errors() {
        let e = parse("kind: Application\nmetadata: {namespace: x}\nspec: {}\n").unwrap_err();
        assert!(e.message.contains("no metadata.name"));
        let e = parse("kind: Application\nmetadata: {name: x}\nspec: {}\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "apps/shop.yaml:2:18: error: Application argocd/x has no spec.source, spec.sources or spec.sourceHydrator"
        );
    }
}
