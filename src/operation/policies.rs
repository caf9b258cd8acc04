//! The one place where a run's policy table is built: values, supplied
//! ImagePolicies and fetched results, within the run's scope.

use std::collections::HashSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::config::{FetchSettings, UpdateConfig};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::{FileId, SizeLimit, read_regular_owned};
use crate::policies::image_policy::{Role, read_supplied, role};
use crate::policies::{ConflictError, PolicyDocument, PolicyTable};
use crate::reflector::{self, Definition, Resolved};
use crate::walk::walk;
use crate::yaml;

/// The policies of a run.
#[derive(Debug, Default)]
pub(super) struct Gathered {
    pub table: PolicyTable,
    /// The definitions in scope (fetching only).
    pub definitions: Vec<Definition>,
    pub fetched: Vec<Resolved>,
    /// Policies without a latest image, hints, files that hold no policy.
    pub notes: Vec<Diagnostic>,
}

/// Build the policy table of a run from the config's values and the
/// policy `documents`, fetching the definitions among them and the
/// `extra` ones (Argo CD images) when the config says so (and the
/// automation is not suspended).
///
/// # Errors
/// Every invalid policy or definition at once; every policy that could not
/// be fetched at once; conflicts.
pub(super) fn gather(
    config: &UpdateConfig,
    documents: &[PolicyDocument],
    extra: Vec<Definition>,
) -> Result<Gathered, Error> {
    let fetching = config.fetch.is_some();
    let mut g = Gathered::default();
    g.table.set_defining(fetching);
    let mut errors = Vec::new();
    let conflict = |e: ConflictError| Diagnostic::error(e.to_string());
    for v in &config.values {
        if let Err(e) = g
            .table
            .insert(v.key.clone(), Some(v.image.clone()), &v.source)
        {
            errors.push(conflict(e));
        }
    }
    let mut unfetched = 0;
    for doc in documents.iter().filter(|d| d.supplies) {
        for object in yaml::objects(&doc.document) {
            if role(object.value, fetching) != Role::Supplied {
                continue;
            }
            if object.value.get("spec").is_some_and(|s| !s.is_null())
                && object
                    .value
                    .get("status")
                    .is_none_or(serde_json::Value::is_null)
            {
                unfetched += 1;
            }
            let policy = match read_supplied(&object, &doc.origin, doc.positions) {
                Ok(p) => p,
                Err(d) => {
                    errors.push(*d);
                    continue;
                }
            };
            if let Some(why) = config.scope.excludes(&policy.key, &policy.labels) {
                g.table.exclude(policy.key, &why);
            } else if let Err(e) = g.table.insert(policy.key, policy.latest, &policy.source) {
                errors.push(conflict(e));
            }
        }
    }
    if fetching {
        match reflector::collect(documents) {
            Ok(mut definitions) => {
                for d in extra {
                    if let Some(first) = definitions.iter().find(|f| f.key == d.key) {
                        errors.push(
                            Diagnostic::error(format!(
                                "policy {} is defined twice: by {} and by {}",
                                d.key, first.source, d.source
                            ))
                            .at(d.location.clone()),
                        );
                    } else {
                        definitions.push(d);
                    }
                }
                for mut d in definitions {
                    if let Some(why) = config.scope.excludes(&d.key, &d.labels) {
                        g.table.exclude(d.key.clone(), &why);
                    } else {
                        g.notes.append(&mut d.notes);
                        g.definitions.push(d);
                    }
                }
            }
            Err(diagnostics) => {
                errors.extend(diagnostics);
                return Err(Error::invalid_with(
                    "invalid policy definitions; nothing was written",
                    errors,
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(Error::invalid(errors));
    }
    if let Some(settings) = &config.fetch
        && config.suspended().is_none()
        && !g.definitions.is_empty()
    {
        let mut client = client_settings(settings)?;
        client.remember_documents = config.wants_provenance();
        g.fetched = reflector::resolve(&g.definitions, &client).map_err(|failed| {
            Error::invalid_with(
                format!(
                    "{} of {} policies could not be fetched; nothing was written",
                    failed.len(),
                    g.definitions.len()
                ),
                failed,
            )
        })?;
        for r in &g.fetched {
            if let Err(e) = g.table.insert(
                r.key.clone(),
                Some(r.latest.clone()),
                &format!("fetched for {}", r.source),
            ) {
                errors.push(conflict(e));
            }
        }
        if !errors.is_empty() {
            return Err(Error::invalid(errors));
        }
    }
    let gate_warnings: Vec<Diagnostic> = g
        .fetched
        .iter()
        .zip(&g.definitions)
        .flat_map(|(r, d)| r.warnings(Some(&d.location)))
        .collect();
    g.notes
        .extend(g.table.without_latest().map(|(key, source)| {
            Diagnostic::note(format!(
                "policy {key} from {source} has no latest image and is ignored"
            ))
        }));
    if unfetched > 0 {
        g.notes.push(
            Diagnostic::note(format!(
                "{unfetched} ImagePolic{} a spec but no status: nothing computes {} latest image{}",
                if unfetched == 1 { "y has" } else { "ies have" },
                if unfetched == 1 { "its" } else { "their" },
                if unfetched == 1 { "" } else { "s" }
            ))
            .with_hint(
                "fetch them from their registries: `update --fetch` (`fetch: true` in a functionConfig)",
            ),
        );
    }
    // What the supply-chain gate passed over, at each policy's definition.
    g.notes.extend(gate_warnings);
    Ok(g)
}

/// The registry client settings of a fetching run: defaults, overlaid with
/// the settings file when given, credentials from the environment, then the
/// cache overrides.
///
/// Each policy applies its own exclusion list (ImageRepository
/// `exclusionList`, `--exclude`; default `^.*\.sig$`), so the client drops
/// nothing unless the settings file has an `exclusionList` (which then
/// applies to every repository, in addition).
///
/// # Errors
/// An unreadable or invalid settings file.
pub(crate) fn client_settings(
    fetch: &FetchSettings,
) -> Result<image_update_registry::ClientSettings, Error> {
    use image_update_registry::{ClientSettings, CredentialStore, SettingsFile};
    let file = fetch
        .registry_config
        .as_deref()
        .map(SettingsFile::load)
        .transpose()
        .map_err(|e| Error::Registry(Box::new(e)))?;
    let explicit_exclusion = file.as_ref().is_some_and(|f| f.exclusion_list.is_some());
    let mut settings = ClientSettings {
        credentials: CredentialStore::from_env(),
        ..ClientSettings::default()
    };
    if let Some(file) = file {
        settings.apply_file(file);
    }
    if !explicit_exclusion {
        settings.exclusion_list = Vec::new();
    }
    if let Some(dir) = &fetch.cache_dir {
        settings.cache_dir = Some(dir.clone());
    }
    if let Some(ttl) = fetch.cache_ttl {
        settings.cache_ttl = ttl;
    }
    if let Some(deadline) = fetch.deadline {
        settings.deadline = (!deadline.is_zero()).then_some(deadline);
    }
    for (host, provider) in &fetch.providers {
        settings.set_provider(host, *provider);
    }
    settings
        .allowed_programs
        .extend(fetch.allowed_programs.iter().cloned());
    settings.observer = fetch.observer.as_ref().map(|o| std::sync::Arc::clone(&o.0));
    settings.supply_chain.apply_overrides(&fetch.supply_chain);
    settings.remember_documents = fetch.provenance;
    Ok(settings)
}

/// A policy file that may hold Argo CD objects.
#[derive(Debug)]
pub(super) struct ArgoPolicyFile {
    /// How messages name it.
    pub origin: String,
    pub text: String,
    /// Which file it is (`None`: stdin).
    pub id: Option<FileId>,
}

/// The policy files of a run, read.
#[derive(Debug, Default)]
pub(super) struct PolicyFiles {
    pub documents: Vec<PolicyDocument>,
    /// Each file on disk: which file it is, and where its documents are in `documents`.
    pub files: Vec<(FileId, Range<usize>)>,
    /// The texts of the files that may hold Argo CD objects.
    pub argo: Vec<ArgoPolicyFile>,
}

impl PolicyFiles {
    /// Leave out the documents of the files in `read` (which the tree's walk read: a file is read
    /// once, as the tree's).
    pub(super) fn leave_out(&mut self, read: &HashSet<FileId>) {
        if read.is_empty() {
            return;
        }
        let mut index = 0;
        let files = &self.files;
        self.documents.retain(|_| {
            let out = files
                .iter()
                .any(|(id, range)| range.contains(&index) && read.contains(id));
            index += 1;
            !out
        });
        self.files.clear();
    }
}

/// Read the policy files (`-` is stdin): every ImagePolicy in them may be
/// a supplied result. A file named twice (by any path to it) is read once. A
/// file that holds no Flux image object at all (nor an Argo CD one) gets a
/// warning (in `warnings`).
///
/// # Errors
/// An unreadable file, or one that is not YAML (at its line and column).
pub(super) fn read_policy_files(
    files: &[PathBuf],
    limit: SizeLimit,
    warnings: &mut Vec<Diagnostic>,
) -> Result<PolicyFiles, Error> {
    let mut out = PolicyFiles::default();
    for file in files {
        let stdin = file == Path::new("-");
        let id = crate::input::file_id(file);
        if id.is_some_and(|id| out.files.iter().any(|(f, _)| *f == id)) {
            continue;
        }
        let origin = if stdin {
            "stdin".to_owned()
        } else {
            file.display().to_string()
        };
        let text = crate::input::read_text(file, limit)?;
        let documents = yaml::parse_documents(&text).map_err(|e| {
            Error::invalid(vec![
                Diagnostic::error(format!("not valid YAML: {}", e.message))
                    .at(Location::new(origin.clone(), e.position)),
            ])
        })?;
        let dir = if stdin {
            std::env::current_dir().ok()
        } else {
            Some(
                file.parent()
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
            )
        };
        let holds_policies = documents.iter().any(|d| {
            yaml::objects(d)
                .iter()
                .any(|o| reflector::definitions::may_hold(o.value))
        });
        let holds_argo = crate::argocd::catalog::may_hold(&text);
        if !holds_policies && !holds_argo {
            warnings.push(
                Diagnostic::warning(
                    "holds no ImagePolicy, ImageRepository, ImageUpdater or Argo CD Application, so it supplies no policy",
                )
                .at(Location::new(origin.clone(), None)),
            );
        }
        let start = out.documents.len();
        out.documents
            .extend(documents.into_iter().map(|document| PolicyDocument {
                document,
                origin: origin.clone(),
                positions: true,
                dir: dir.clone(),
                supplies: true,
            }));
        if let Some(id) = id {
            out.files.push((id, start..out.documents.len()));
        }
        if holds_argo {
            out.argo.push(ArgoPolicyFile { origin, text, id });
        }
    }
    Ok(out)
}

/// A warning: the file at `path` cannot be read, for `cause`.
fn unreadable(
    path: &Path,
    tree_path: Option<String>,
    cause: impl std::error::Error + Send + Sync + 'static,
) -> Diagnostic {
    let mut at = Location::new(path.display().to_string(), None);
    at.tree_path = tree_path;
    Diagnostic::warning("cannot be read, so its definitions are skipped")
        .at(at)
        .caused_by(cause)
}

/// Texts kept by a walk, by path relative to its root.
pub(super) type Kept = Vec<crate::updater::tree::KeptText>;

/// What [`tree_definitions`] read.
#[derive(Debug, Default)]
pub(super) struct TreeDefinitions {
    pub documents: Vec<PolicyDocument>,
    pub kept: Kept,
    /// The named files (policy files) the walk read: their documents are the tree's.
    pub named: HashSet<FileId>,
}

/// The documents of every file under `root` that may hold definitions
/// (screened by substring before parsing). They supply no results: only
/// their definitions are read. A screened file that is not YAML (a Helm
/// template of an ImagePolicy) gets a warning in `warnings` and is left
/// out. The texts `keep` asks for (Argo CD objects and write-back targets)
/// are returned too, by path relative to `root`. A file among `named` (the
/// policy files) is read once, as the tree's: its ImagePolicies also supply
/// results, as a policy file's do.
///
/// # Errors
/// A walk failure. A file that cannot be read (or is over the size
/// limit) gets a warning and its definitions are skipped.
pub(super) fn tree_definitions(
    root: &Path,
    update_path: &str,
    limit: SizeLimit,
    warnings: &mut Vec<Diagnostic>,
    keep: Option<crate::updater::tree::Keep>,
    named: &HashSet<FileId>,
) -> Result<TreeDefinitions, Error> {
    // How the report names a file of the tree: relative to the update path.
    let tree_path = |rel: &str| {
        if update_path.is_empty() {
            Some(rel.to_owned())
        } else {
            rel.strip_prefix(update_path)
                .and_then(|r| r.strip_prefix('/'))
                .map(str::to_owned)
        }
    };
    let walked = walk(root, |c| {
        let bytes = match read_regular_owned(&c.path, c.regular, limit) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(e) => return Some(Err(unreadable(&c.path, tree_path(&c.rel), e))),
        };
        let kept = keep.is_some_and(|keep| keep(&c.rel, &bytes));
        // Files that are not UTF-8 are the updater's to report.
        let Ok(text) = String::from_utf8(bytes) else {
            return None;
        };
        if !reflector::may_define(&text) {
            return kept.then(|| Ok((Vec::new(), Some((text, c.regular)), None)));
        }
        let origin = c.path.display().to_string();
        let dir = c.path.parent().map(Path::to_path_buf);
        let id = if named.is_empty() {
            None
        } else {
            crate::input::file_id(&c.path).filter(|id| named.contains(id))
        };
        let parsed = yaml::parse_documents(&text);
        Some(
            parsed
                .map_err(|e| {
                    let mut at = Location::new(origin.clone(), e.position);
                    at.tree_path = tree_path(&c.rel);
                    Diagnostic::warning(format!(
                        "mentions the Flux image API but is not valid YAML, so its definitions are skipped: {}",
                        e.message
                    ))
                    .at(at)
                    .with_hint(
                        "a Helm template or other generated file does not belong to the definitions: \
                         list it in a .sourceignore file",
                    )
                })
                .map(|documents| {
                    let documents = documents
                        .into_iter()
                        .map(|document| PolicyDocument {
                            document,
                            origin: origin.clone(),
                            positions: true,
                            dir: dir.clone(),
                            supplies: id.is_some(),
                        })
                        .collect::<Vec<_>>();
                    (documents, kept.then_some((text, c.regular)), id)
                }),
        )
    })?;
    let mut out = TreeDefinitions::default();
    for (rel, result) in walked.results {
        match result {
            Ok((documents, kept, id)) => {
                out.documents.extend(documents);
                out.named.extend(id);
                if let Some((text, regular)) = kept {
                    out.kept
                        .push(crate::updater::tree::KeptText { rel, text, regular });
                }
            }
            Err(warning) => warnings.push(warning),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFINITIONS: &str = "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata: {name: web, namespace: flux-system}\nspec: {image: ghcr.io/acme/web}\n---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: web, namespace: flux-system}\nspec:\n  imageRepositoryRef: {name: web}\n  policy: {semver: {range: 1.x}}\n";

    #[test]
    fn a_file_is_read_once_however_it_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        fs_err::create_dir_all(root.join("flux")).unwrap();
        let file = root.join("flux/images.yaml");
        fs_err::write(&file, DEFINITIONS).unwrap();
        fs_err::write(dir.path().join("other.yaml"), DEFINITIONS).unwrap();
        std::os::unix::fs::symlink(&file, dir.path().join("link.yaml")).unwrap();
        fs_err::hard_link(&file, dir.path().join("hard.yaml")).unwrap();
        let named = [
            file.clone(),
            root.join("flux/../flux/images.yaml"),
            dir.path().join("link.yaml"),
            dir.path().join("hard.yaml"),
            dir.path().join("other.yaml"),
        ];
        let mut warnings = Vec::new();
        let mut read = read_policy_files(&named, SizeLimit::FILE_DEFAULT, &mut warnings).unwrap();
        assert_eq!(
            read.files.len(),
            2,
            "the file and the copy: {:?}",
            read.files
        );
        assert_eq!(read.documents.len(), 4);
        // The tree's walk reads the file too: its documents are the tree's, with supplies set.
        let ids: HashSet<FileId> = read.files.iter().map(|(id, _)| *id).collect();
        let tree = tree_definitions(
            &root,
            "",
            SizeLimit::FILE_DEFAULT,
            &mut warnings,
            None,
            &ids,
        )
        .unwrap();
        assert_eq!(tree.documents.len(), 2);
        assert!(tree.documents.iter().all(|d| d.supplies));
        assert_eq!(tree.named.len(), 1);
        read.leave_out(&tree.named);
        assert_eq!(read.documents.len(), 2);
        assert!(
            read.documents
                .iter()
                .all(|d| d.origin.ends_with("other.yaml"))
        );
        assert!(warnings.is_empty(), "{warnings:?}");
    }
}
