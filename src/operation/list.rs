//! The operation over a kpt ResourceList's text (the KRM function's input).
//!
//! ```text
//! text ─> updater::scan::list: one pass (the layout of the root entries
//!         and the markers of the items, in parts side by side when large)
//!      ─> kind and apiVersion checked
//!      ─> functionConfig parsed (its bytes only) ─> the front end's reader
//!         ─> UpdateConfig
//!      ─> run (ImagePolicies and definitions among the items, plan)
//! ```
//!
//! The front end renders what comes back: the outcome into `results` and
//! the edits spliced into the text, or the error results.

use serde_json::Value;

use super::{Input, UpdateConfig, run};
use crate::diagnostic::Diagnostic;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::updater::scan::list::read_list;
use crate::updater::source::resource_list::{ListLayout, ShapeError, parse_node};
use crate::yaml::SyntaxError;

/// How a run over a ResourceList ended.
// One per run, moved once: boxing the large variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum ListRun {
    /// The input is not a ResourceList (nor a `v1` `List`): there is no
    /// list to answer in.
    NotAList(NotAList),
    /// The list was read: where its parts lie, and the run's outcome or
    /// what stopped it.
    Read {
        layout: ListLayout,
        result: Result<Outcome, ListError>,
    },
    /// The functionConfig asks for something other than an update (a
    /// generator): the front end answers from the list's layout and this
    /// parsed functionConfig; nothing was run.
    Other {
        layout: ListLayout,
        function_config: Value,
    },
}

/// What a front end's reader makes of a functionConfig.
// One per run, moved once: boxing the configuration would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Reading {
    /// An update, with this configuration.
    Update(UpdateConfig),
    /// Not an update: see [`ListRun::Other`].
    Other,
}

/// Why the input is not a list the function answers.
#[derive(Debug)]
pub(crate) enum NotAList {
    /// Not YAML, empty, several documents, or not a mapping.
    Shape(ShapeError),
    /// A mapping of another kind (as found, empty when absent or not a
    /// scalar).
    Kind { api_version: String, kind: String },
}

/// What stopped a run over a list that was read.
#[derive(Debug)]
pub(crate) enum ListError {
    /// `items` holds something other than a sequence.
    ItemsNotASequence,
    /// The functionConfig cannot be parsed (its position is the list's).
    FunctionConfig(SyntaxError),
    /// The functionConfig is not a valid configuration.
    Config(Vec<Diagnostic>),
    /// The run itself failed.
    Run(Error),
}

/// Run over the ResourceList `text`, with the configuration
/// `read_config` makes of its functionConfig (`Null` when it has none).
pub(crate) fn run_list(
    text: &str,
    read_config: impl FnOnce(&Value) -> Result<Reading, Vec<Diagnostic>>,
) -> ListRun {
    let list = match read_list(text) {
        Ok(list) => list,
        Err(e) => return ListRun::NotAList(NotAList::Shape(e)),
    };
    let layout = list.layout;
    if !layout.is_accepted() {
        return ListRun::NotAList(NotAList::Kind {
            api_version: layout.api_version.unwrap_or_default(),
            kind: layout.kind.unwrap_or_default(),
        });
    }
    if layout.items_not_a_sequence {
        return ListRun::Read {
            layout,
            result: Err(ListError::ItemsNotASequence),
        };
    }
    let function_config = match &layout.function_config {
        Some(node) => parse_node(text, node).map_err(ListError::FunctionConfig),
        None => Ok(Value::Null),
    };
    let config = match function_config
        .and_then(|value| Ok((read_config(&value).map_err(ListError::Config)?, value)))
    {
        Ok((Reading::Update(config), _)) => config,
        Ok((Reading::Other, function_config)) => {
            return ListRun::Other {
                layout,
                function_config,
            };
        }
        Err(e) => {
            return ListRun::Read {
                layout,
                result: Err(e),
            };
        }
    };
    let input = Input::ResourceList {
        text,
        layout: &layout,
        scan: list.scan,
    };
    let result = run(&config, input).map_err(ListError::Run);
    ListRun::Read { layout, result }
}
