//! The library's public face, for the programs that drive its parts
//! directly: the fuzz targets (`fuzz/`), the benchmarks (`benches/`) and the
//! integration tests (`tests/`). Every module of the crate is private to it
//! (`pub(crate)`, with `unreachable_pub` on); what those programs need is
//! re-exported here, grouped by the part it belongs to, and nothing else is
//! public but the command line the binary runs ([`crate::cli`]).
//!
//! It is not an interface for other programs: it moves with the binary.

/// YAML documents with the position of every node.
pub mod yaml {
    pub use crate::yaml::{Document, Object, objects, parse_documents, parse_one, parse_values};
}

/// The marker grammar and the scanner's layouts.
pub mod markers {
    pub use crate::setter::{Field, Setter};
    pub use crate::updater::scan::Layout;
    pub use crate::updater::scan::marker::{
        Comment, classify, contains_marker_key, mentions_marker_key, screen,
    };
}

/// The pure core of the updater: one text's markers, looked up in a policy
/// table, planned into edits.
pub mod plan {
    pub use crate::policies::image_ref::ImageRef;
    pub use crate::policies::{PolicyKey, PolicyTable};
    pub use crate::text::position_of;
    pub use crate::updater::plan::{Plan, PlanError, PlanOptions, plan};
}

/// Policy files and definitions: ImagePolicies with a status, automations,
/// the definitions the reflector fetches.
pub mod policies {
    pub use crate::automation::read as read_automation;
    pub use crate::policies::PolicyDocument;
    pub use crate::policies::image_policy::{Role, is_flux_kind, read_supplied, role};
    pub use crate::reflector::definitions::collect as collect_definitions;
}

/// Fetched results and `--emit-policies`: a definition resolved against a
/// tag list, and the ImagePolicies written from it.
pub mod emit {
    pub use crate::policies::image_ref::ImageRef;
    pub use crate::reflector::definitions::Definition;
    pub use crate::reflector::emit::render;
    pub use crate::reflector::fetch::Resolved;
    pub use crate::reflector::selection::reflection::next_observed_previous;
    pub use crate::reflector::selection::select::TagInfo;
}

/// Tag selection: the policies of Flux and Argo CD Image Updater over a
/// list of tags.
pub mod selection {
    pub use crate::reflector::selection::render::{render_json, render_text};
    pub use crate::reflector::selection::select::{LookupError, NoCreatedTimes, SelectError};
    pub use crate::reflector::selection::semver::{Range, parse_tag};
    pub use crate::reflector::selection::spec::{
        FilterTagsConfig, Order, PolicyConfig, PolicySpec, Strategy,
    };
    pub use crate::reflector::selection::tags_file::{is_valid_tag, parse_tags_file};
    pub use image_update_registry::Timestamp;
}

/// The KRM function: a ResourceList's text in, the answer out.
pub mod krm {
    pub use crate::krm::config::read as read_function_config;
    pub use crate::krm::{Output, Response, not_utf8, process};
    pub use crate::render::kpt::Severity;
    pub use crate::updater::source::resource_list::{Node, parse_node, read_layout};

    /// Whether reading `text` as a ResourceList in up to `parts` parts
    /// (the function reads a large list in parts, one per thread) finds
    /// exactly what one pass finds.
    #[must_use]
    pub fn reads_the_same_in_parts(text: &str, parts: usize) -> bool {
        crate::updater::scan::list::same_in_parts(text, parts)
    }
}

/// The ResultV2 report and the commit message made from it.
pub mod report {
    pub use crate::render::message::MessageConfig;
    pub use crate::render::report::{Format, REPORT_VERSION, Report};
}

/// The GitHub Action's contract with `action.yml` and the runner.
pub mod action {
    pub use crate::cli::action::{INPUTS, TEST_DELIMITER_VARIABLE};
    pub use crate::render::github::{OUTPUTS, input_variable};
}

/// The objects `create` writes and `deploy` reads: Kubernetes names, and
/// the KubeSphere ImageUpdater's fields (the CRD must declare each).
pub mod objects {
    pub use crate::kubesphere::FIELDS as IMAGE_UPDATER_FIELDS;
    pub use crate::object::{dns_label, dns_subdomain};
}

/// Argo CD users: Applications and Argo CD Image Updater's settings read
/// into a catalog, and the write-back planned from chosen images.
pub mod argocd {
    pub use crate::argocd::application::InputFile;
    pub use crate::argocd::catalog::{CollectOptions, DefinedBy, collect, may_hold};
    pub use crate::argocd::plan::{
        DirFiles, FieldChange, FilePlan, KnownFiles, MemoryFiles, WriteBack, likely_target, plan,
    };
    pub use crate::diagnostic::Diagnostic;
    pub use crate::input::SizeLimit;
    pub use crate::yaml::tree::Tree;

    /// Why `path` (relative to a tree's root) may not name a file to create there: a part that is
    /// empty, `.` or `..`, absolute, or a control character; `None` when it may. The check every
    /// write of a tree's file passes (`sink::door`).
    #[must_use]
    pub fn new_path_problem(path: &str) -> Option<String> {
        crate::sink::door::check_new_path(path)
            .err()
            .map(|e| e.to_string())
    }

    /// The texts of every file under `root` that may hold Argo CD objects (`true`) or is named
    /// like a write-back target (`false`), by path relative to `root`, read once each by the
    /// crate's parallel walk (as `update` reads them).
    ///
    /// # Errors
    /// The walk's failure (a message).
    pub fn read_candidates(
        root: &std::path::Path,
        limit: SizeLimit,
    ) -> Result<Vec<(String, bool, String)>, String> {
        let walked = crate::walk::walk(root, |c| {
            let bytes = crate::input::read_regular_owned(&c.path, c.regular, limit).ok()??;
            let text = String::from_utf8(bytes).ok()?;
            if may_hold(&text) {
                Some((true, text))
            } else if likely_target(&c.rel) {
                Some((false, text))
            } else {
                None
            }
        })
        .map_err(|e| e.to_string())?;
        Ok(walked
            .results
            .into_iter()
            .map(|(rel, (holds, text))| (rel, holds, text))
            .collect())
    }

    /// `text` with `edits` spliced in.
    ///
    /// # Errors
    /// Overlapping edits (a message).
    pub fn apply_edits(
        text: &str,
        edits: &mut [crate::yaml::edit::Edit],
    ) -> Result<String, String> {
        crate::yaml::edit::apply(text, edits).map_err(|e| e.to_string())
    }
}
