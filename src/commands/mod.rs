//! One module per subcommand; each returns the process exit status.

pub mod function;
pub mod policy;
pub mod update;

use std::io::Read;
use std::path::Path;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done, with or without changes.
    Success,
    /// `--check` found changes to make.
    ChangesPending,
    /// The output was written, and it reports errors (`fn`).
    Failed,
}

impl Exit {
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::ChangesPending => 3,
            Exit::Failed => 1,
        }
    }
}

/// A command-line mistake: exit status 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Read a file, or stdin for `-`.
///
/// # Errors
/// IO errors with the path.
pub fn read_input(path: &Path) -> anyhow::Result<String> {
    use anyhow::Context;
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read stdin")?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))
    }
}
