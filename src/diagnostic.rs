//! One model for everything image-update tells its user about the input.
//!
//! A [`Diagnostic`] has a severity, a location (file, line, column), the
//! object and field it concerns, a message, an optional hint and an optional
//! typed cause. The same value becomes a stderr line
//! (`path:line:col: warning: message`), an entry of the report's
//! `warnings`, a kpt result and a GitHub annotation; each front end only
//! chooses the rendering. Locations are always written `path:line:col`.

use std::fmt;
use std::sync::Arc;

use crate::object::ObjectId;
use crate::text::Position;

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The run cannot go on (nothing is written).
    Error,
    /// Something was left alone, or looks wrong; the run goes on.
    Warning,
    /// For information (e.g. a policy without a latest image).
    Note,
}

impl Severity {
    /// `error`, `warning` or `note`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a diagnostic points: a file as the user knows it (a path as
/// given, or relative to the current directory; a kpt item's path
/// annotation), and a 1-based line and column when known.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    pub path: String,
    pub position: Option<Position>,
    /// The document's index in its file, when it matters (kpt's
    /// `file.index`).
    pub index: Option<String>,
    /// The file's path relative to the updated tree, when it lies in it:
    /// how the report names it (`path` is how the user knows it).
    pub tree_path: Option<String>,
}

impl Location {
    /// A location in `path` at `position`.
    pub fn new(path: impl Into<String>, position: Option<Position>) -> Self {
        Self {
            path: path.into(),
            position,
            index: None,
            tree_path: None,
        }
    }

    /// A location in the file of the updated tree at `tree_path`, which
    /// the user knows as `path`.
    pub fn in_tree(
        tree_path: impl Into<String>,
        path: impl Into<String>,
        position: Option<Position>,
    ) -> Self {
        Self {
            tree_path: Some(tree_path.into()),
            ..Self::new(path, position)
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path)?;
        if let Some(p) = self.position {
            write!(f, ":{}:{}", p.line, p.column)?;
        }
        Ok(())
    }
}

/// The cause of a diagnostic, kept as a typed error.
pub(crate) type Cause = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// One finding about the input.
#[derive(Debug, Clone)]
pub struct Diagnostic {
    pub severity: Severity,
    pub location: Option<Location>,
    /// The Kubernetes object it concerns.
    pub object: Option<ObjectId>,
    /// The field inside the object (`spec.template.spec.containers[0].image`).
    pub field: Option<String>,
    pub message: String,
    /// What to do about it.
    pub hint: Option<String>,
    pub cause: Option<Cause>,
}

impl Diagnostic {
    /// A diagnostic with only a severity and a message.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        Self {
            severity,
            location: None,
            object: None,
            field: None,
            message: message.into(),
            hint: None,
            cause: None,
        }
    }

    pub fn error(message: impl Into<String>) -> Self {
        Self::new(Severity::Error, message)
    }

    pub fn warning(message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, message)
    }

    pub fn note(message: impl Into<String>) -> Self {
        Self::new(Severity::Note, message)
    }

    #[must_use]
    pub fn at(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    #[must_use]
    pub fn with_object(mut self, object: ObjectId) -> Self {
        self.object = Some(object);
        self
    }

    #[must_use]
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }

    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    #[must_use]
    pub fn caused_by(mut self, cause: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.cause = Some(Arc::new(cause));
        self
    }

    /// The message followed by its causes, `message: cause: cause`, on one
    /// line (kpt results, report entries, annotations).
    #[must_use]
    pub fn full_message(&self) -> String {
        let mut out = self.message.clone();
        push_causes(
            &mut out,
            self.cause
                .as_deref()
                .map(|c| c as &(dyn std::error::Error + 'static)),
        );
        out
    }

    /// The key diagnostics are sorted by: file, line, column, then severity.
    #[must_use]
    pub fn sort_key(&self) -> (Option<&Location>, Severity) {
        (self.location.as_ref(), self.severity)
    }
}

/// `path:line:col: severity: message: cause` (without the hint, which
/// front ends print on a line of its own).
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}: {}", self.severity, self.full_message())
    }
}

/// Diagnostics that stop a run: every problem found, together.
#[derive(Debug, Clone, Default)]
pub(crate) struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

/// An error and its causes on one line, `error: cause: cause` (a cause
/// whose text its wrapper already ends with is left out).
#[must_use]
pub(crate) fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    push_causes(&mut out, error.source());
    out
}

/// Append `cause` and its sources to `out`, each after `: `.
fn push_causes(out: &mut String, mut next: Option<&(dyn std::error::Error + 'static)>) {
    while let Some(e) = next {
        let text = e.to_string();
        // A wrapper that repeats its cause's text adds nothing.
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = e.source();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn one_line_with_location_and_causes() {
        let d = Diagnostic::warning("marker left alone")
            .at(Location::new(
                "apps/a.yaml",
                Some(Position { line: 3, column: 9 }),
            ))
            .caused_by(Outer(std::io::Error::other("inner")));
        assert_eq!(
            d.to_string(),
            "apps/a.yaml:3:9: warning: marker left alone: outer: inner"
        );
        assert_eq!(
            Diagnostic::note("hello").to_string(),
            "note: hello",
            "no location, no colon prefix"
        );
        assert_eq!(
            Diagnostic::error("x")
                .at(Location::new("f.yaml", None))
                .to_string(),
            "f.yaml: error: x"
        );
    }
}
