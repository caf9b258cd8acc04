//! The short-circuit (`--state FILE`): a run that would find exactly what
//! the last one left is skipped before anything is cloned.
//!
//! A run is skipped when three things are as the last successful run left
//! them: a hash of every setting that changes the result (never
//! credentials), the remote heads the run reads and writes (`ls-remote`),
//! and the policies' latest images computed without the tree
//! ([`crate::operation::observe`]). Policies defined only inside the
//! repository cannot be computed without a clone, so a run that used them
//! never compares equal: the short-circuit then does not apply, and the
//! status says so.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::JobConfig;
use crate::policies::{ImageRef, PolicyKey};

/// What the last successful run saw and left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct State {
    /// [`config_hash`] of its configuration.
    pub config_hash: String,
    /// The remote heads after it.
    pub heads: Heads,
    /// Its policies' latest images, keyed `NAMESPACE:NAME` (the state
    /// file's format: [`keyed`]).
    pub observed_policies: BTreeMap<String, ImageRef>,
    /// Its status's `observedSourceRevision`.
    #[serde(default)]
    pub observed_source_revision: Option<String>,
    /// The last commit it (or an earlier run) pushed.
    #[serde(default)]
    pub last_push_commit: Option<String>,
    /// When.
    #[serde(default)]
    pub last_push_time: Option<String>,
}

/// The remote heads a run depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Heads {
    /// The commit the checkout ref points to.
    pub checkout: String,
    /// The push branch's commit, when pushing to another branch (`None`
    /// when it does not exist yet).
    #[serde(default)]
    pub push: Option<String>,
}

/// A SHA-256 over every setting that changes what a run does: URL, ref,
/// policies as given (values, files, scope, fetching), update path,
/// automation, message, author, signing key kind, push settings, the
/// forge and the pull request's settings. Not the credentials, and not the policy files' contents (their results are
/// compared as observed policies).
#[must_use]
pub(crate) fn config_hash(config: &JobConfig) -> String {
    let update = &config.update;
    let described = format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        config.url,
        config.reference,
        update.values,
        update.policy_files,
        update.scope,
        update.update_path,
        update.automation,
        update.fetch.is_some(),
        update.message,
        update.plan,
        config.author,
        config.signer.as_ref().map(image_update_git::Signer::kind),
        config.push,
        config
            .forge_first()
            .map(|forge| (forge.provider, &forge.api_url)),
        config.pull_request,
    );
    let digest = Sha256::digest(described.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The state in `path`; `None` when there is none yet, or (with a warning)
/// when it cannot be read.
#[must_use]
pub(crate) fn read(path: &Path) -> Option<State> {
    if !path.exists() {
        return None;
    }
    let text = match fs_err::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            tracing::warn!("ignoring the state file: {e}");
            return None;
        }
    };
    match serde_json::from_str(&text) {
        Ok(state) => Some(state),
        Err(e) => {
            tracing::warn!("ignoring the state file {}: {e}", path.display());
            None
        }
    }
}

/// Writes `state` to `path` atomically (a temporary file in the same
/// directory, renamed over it).
///
/// # Errors
/// When the directory cannot be written.
pub(crate) fn write(path: &Path, state: &State) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    let mut text = serde_json::to_string_pretty(state).map_err(std::io::Error::other)?;
    text.push('\n');
    file.write_all(text.as_bytes())?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `observed` as the state file keeps it: keyed `NAMESPACE:NAME`, in the
/// order of those strings.
#[must_use]
pub(crate) fn keyed(observed: &BTreeMap<PolicyKey, ImageRef>) -> BTreeMap<String, ImageRef> {
    observed
        .iter()
        .map(|(key, image)| (key.to_string(), image.clone()))
        .collect()
}
