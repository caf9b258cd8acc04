//! A fleet's index: the list of its automations, one per
//! `JOB_COMPLETION_INDEX`, written by `deploy --fleet` into the fleet's
//! ConfigMap (`/config/fleet.yaml`) and read by `image-update job --fleet`,
//! which runs the automation at its index and refuses an index the list
//! does not have (at the list's line and column, before anything is
//! cloned or written).
//!
//! ```yaml
//! apiVersion: fn.image-update.dev/v1alpha1
//! kind: Fleet
//! metadata: {name: images, namespace: flux-system}
//! automations:          # entry N is run by index N
//! - name: ImageUpdateAutomation flux-system/apps
//!   automation: 0/automation.yaml        # relative to this file
//!   gitRepository: 0/gitrepository.yaml
//!   policies: 0/policies.yaml
//! ```

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::input::SizeLimit;
use crate::yaml::Document;

/// The index's file name in the fleet's ConfigMap (and under `/config`).
pub(crate) const FILE: &str = "fleet.yaml";
/// Its apiVersion (the group of the KRM function's own kinds).
const API_VERSION: &str = "fn.image-update.dev/v1alpha1";
/// Its kind.
const KIND: &str = "Fleet";
/// The files each automation's directory holds.
pub(crate) const AUTOMATION: &str = "automation.yaml";
pub(crate) const GIT_REPOSITORY: &str = "gitrepository.yaml";
pub(crate) const POLICIES: &str = "policies.yaml";

/// The index of fleet `name` in `namespace`, whose automation `i` (named
/// `described[i]`) has its files under the directory `i/`.
#[must_use]
pub(crate) fn index(name: &str, namespace: &str, described: &[String]) -> Value {
    let automations: Vec<Value> = described
        .iter()
        .enumerate()
        .map(|(i, what)| {
            json!({
                "name": what,
                "automation": format!("{i}/{AUTOMATION}"),
                "gitRepository": format!("{i}/{GIT_REPOSITORY}"),
                "policies": format!("{i}/{POLICIES}"),
            })
        })
        .collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "automations": automations,
    })
}

/// The automation a fleet's Pod runs: its files.
#[cfg_attr(not(feature = "job"), allow(dead_code))] // read by the Job
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Member {
    /// Its entry's `name` (`ImageUpdater default/demo`).
    pub name: String,
    pub automation: PathBuf,
    pub git_repository: PathBuf,
    pub policies: Option<PathBuf>,
}

/// The member of the fleet indexed in `file` at `index` (the text of
/// `--fleet-index`, or of `JOB_COMPLETION_INDEX`); relative paths are
/// resolved against `file`'s directory.
///
/// # Errors
/// No index, or one that is not a number (usage errors); an unreadable
/// file; a file that is not a fleet's index; an index out of range, at the
/// position of the list; an entry without its files, at its position.
#[cfg_attr(not(feature = "job"), allow(dead_code))] // called by the Job
pub(crate) fn select(file: &Path, index: Option<&str>, limit: SizeLimit) -> Result<Member, Error> {
    let Some(text) = index else {
        return Err(Error::Usage(
            "--fleet needs the index of its automation: JOB_COMPLETION_INDEX (Kubernetes sets it in an Indexed Job) or --fleet-index".to_owned(),
        ));
    };
    let Ok(index) = text.trim().parse::<usize>() else {
        return Err(Error::Usage(format!(
            "--fleet-index (JOB_COMPLETION_INDEX) {text:?} is not an index (0, 1, 2...)"
        )));
    };
    let (origin, documents) = crate::input::read_yaml(file, limit)?;
    let dir = file.parent().unwrap_or_else(|| Path::new(""));
    let [doc] = documents.as_slice() else {
        return Err(Error::invalid(vec![
            Diagnostic::error(format!(
                "holds {} YAML documents: expected one {KIND} ({API_VERSION})",
                documents.len()
            ))
            .at(Location::new(origin, None)),
        ]));
    };
    read(doc, &origin, index, dir).map_err(|d| Error::invalid(vec![d]))
}

#[cfg_attr(not(feature = "job"), allow(dead_code))]
fn read(doc: &Document, origin: &str, index: usize, dir: &Path) -> Result<Member, Diagnostic> {
    let at = |pointer: &str| Location::new(origin, doc.position(pointer));
    let value = &doc.value;
    if value.get("apiVersion").and_then(Value::as_str) != Some(API_VERSION)
        || value.get("kind").and_then(Value::as_str) != Some(KIND)
    {
        return Err(Diagnostic::error(format!(
            "not a fleet's index: expected apiVersion {API_VERSION} and kind {KIND} (written by `image-update deploy --fleet`)"
        ))
        .at(at("")));
    }
    let (namespace, name) = crate::yaml::namespace_name(value);
    let Some(list) = value.get("automations").and_then(Value::as_array) else {
        return Err(Diagnostic::error(format!(
            "fleet {namespace}/{name}: automations is missing or is not a list"
        ))
        .at(at("/automations")));
    };
    let Some(entry) = list.get(index) else {
        let range = match list.len() {
            0 => "it is empty".to_owned(),
            1 => "it has 1 automation, index 0".to_owned(),
            n => format!("it has {n} automations, indexes 0 to {}", n - 1),
        };
        return Err(Diagnostic::error(format!(
            "fleet {namespace}/{name}: index {index} (JOB_COMPLETION_INDEX or --fleet-index) is out of range of its automations list: {range}"
        ))
        .at(at("/automations"))
        .with_hint(
            "the CronJob's completions and its ConfigMap come from one `image-update deploy --fleet` run: apply them together",
        ));
    };
    let pointer = format!("/automations/{index}");
    let file = |key: &str| {
        entry
            .get(key)
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(|p| dir.join(p))
    };
    let (Some(automation), Some(git_repository)) = (file("automation"), file("gitRepository"))
    else {
        return Err(Diagnostic::error(format!(
            "fleet {namespace}/{name}: entry {index} names no automation and gitRepository files"
        ))
        .at(at(&pointer)));
    };
    Ok(Member {
        name: entry
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        automation,
        git_repository,
        policies: file("policies"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fleet(n: usize) -> String {
        let described: Vec<String> = (0..n).map(|i| format!("ImageUpdater ns/a{i}")).collect();
        serde_saphyr::to_string(&index("images", "ns", &described)).unwrap()
    }

    fn pick(text: &str, index: usize) -> Result<Member, String> {
        let doc = crate::yaml::parse_one(text).unwrap();
        read(&doc, "/config/fleet.yaml", index, Path::new("/config")).map_err(|d| d.to_string())
    }

    #[test]
    fn each_index_runs_its_automation() {
        let text = fleet(3);
        let m = pick(&text, 2).unwrap();
        assert_eq!(m.name, "ImageUpdater ns/a2");
        assert_eq!(m.automation, Path::new("/config/2/automation.yaml"));
        assert_eq!(m.git_repository, Path::new("/config/2/gitrepository.yaml"));
        assert_eq!(
            m.policies.as_deref(),
            Some(Path::new("/config/2/policies.yaml"))
        );
    }

    #[test]
    fn an_index_out_of_range_names_the_list() {
        let text = fleet(3);
        let line = text
            .lines()
            .position(|l| l.starts_with("automations:"))
            .unwrap()
            + 1;
        let err = pick(&text, 3).unwrap_err();
        assert!(
            err.starts_with(&format!(
                "/config/fleet.yaml:{}:3: error: fleet ns/images: index 3 (JOB_COMPLETION_INDEX or --fleet-index) is out of range of its automations list: it has 3 automations, indexes 0 to 2",
                line + 1
            )),
            "{err}\n{text}"
        );
        assert!(
            pick(&fleet(1), 1)
                .unwrap_err()
                .contains("it has 1 automation, index 0")
        );
        assert!(pick(&fleet(0), 0).unwrap_err().contains("it is empty"));
    }

    #[test]
    fn other_files_are_refused() {
        let err = pick("apiVersion: v1\nkind: ConfigMap\n", 0).unwrap_err();
        assert!(err.contains("not a fleet's index"), "{err}");
        let err = pick(
            &format!("apiVersion: {API_VERSION}\nkind: {KIND}\nmetadata: {{name: f}}\nautomations:\n- {{name: x}}\n"),
            0,
        )
        .unwrap_err();
        assert!(
            err.starts_with(
                "/config/fleet.yaml:5:3: error: fleet default/f: entry 0 names no automation"
            ),
            "{err}"
        );
    }
}
