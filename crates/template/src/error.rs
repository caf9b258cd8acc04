//! Errors of parsing and executing a template, with Go's message text.

/// A template that does not parse. The message is Go's, e.g.
/// `template: commit message:1: function "nope" not defined`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// Go's error text.
    pub message: String,
}

/// Why an execution stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecErrorKind {
    /// An error Go's `text/template` raises too; the message is Go's.
    Template,
    /// A resource limit of this engine (output size, work, nesting); Go has no such error.
    Limit,
    /// A Sprig function this engine does not implement.
    Unsupported,
}

/// A template that fails while executing. The message is Go's, e.g.
/// `template: commit message:3:14: executing "commit message" at <.Updated>: can't evaluate field
/// Updated in type source.TemplateData`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExecError {
    /// Go's error text (or this engine's, for [`ExecErrorKind::Limit`] and
    /// [`ExecErrorKind::Unsupported`]).
    pub message: String,
    /// What kind of failure this is.
    pub kind: ExecErrorKind,
}
