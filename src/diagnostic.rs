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
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Edit-distance work left for hints (characters of one name times
/// characters of the other, summed over the names compared): what a run
/// spends on "did you mean" stays bounded whatever the input holds (a tree
/// of thousands of markers naming thousands of unknown policies). Once
/// spent, no more hints are offered.
#[derive(Debug)]
pub(crate) struct HintBudget(AtomicUsize);

impl HintBudget {
    /// Enough for thousands of hints over names of ordinary length, done in
    /// a fraction of a second.
    pub(crate) const DEFAULT: usize = 50_000_000;

    fn take(&self, cells: usize) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(cells)
            })
            .is_ok()
    }
}

impl Default for HintBudget {
    fn default() -> Self {
        Self(AtomicUsize::new(Self::DEFAULT))
    }
}

impl Clone for HintBudget {
    fn clone(&self) -> Self {
        Self(AtomicUsize::new(self.0.load(Ordering::Relaxed)))
    }
}

/// The longest name a hint is looked for (a Kubernetes namespace, `:` and a
/// name are shorter); nobody misspells a longer one.
const HINT_WORD_LIMIT: usize = 320;

/// The candidate nearest to `word` by edit distance (insertions,
/// deletions, substitutions, swaps of neighbours), for a hint naming what
/// was probably meant: `None` when none is within a fifth of `word`'s
/// length (at least 2 edits), so that unrelated names sharing a long prefix
/// (a namespace) are not offered, and when `budget` runs out. Of equally
/// near candidates, the first.
#[must_use]
pub(crate) fn nearest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    budget: &HintBudget,
) -> Option<&'a str> {
    let length = word.chars().count();
    if length > HINT_WORD_LIMIT {
        return None;
    }
    let most = (length / 5).max(2);
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == word {
            continue;
        }
        // The distance is at least the difference of the lengths: most
        // candidates are ruled out without computing it.
        let other = candidate.chars().count();
        if other.abs_diff(length) > most {
            continue;
        }
        if !budget.take(length.max(1) * other.max(1)) {
            return None;
        }
        let distance = strsim::osa_distance(word, candidate);
        if distance <= most && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        super::nearest(word, candidates, &HintBudget::default())
    }

    #[test]
    fn nearest_offers_a_close_name_only() {
        let keys = ["flux-system:webapp", "flux-system:api", "apps:webapp"];
        assert_eq!(
            nearest("flux-system:webap", keys),
            Some("flux-system:webapp")
        );
        assert_eq!(
            nearest("flux-systen:wepabp", keys),
            Some("flux-system:webapp")
        );
        assert_eq!(nearest("apps:webap", keys), Some("apps:webapp"));
        assert_eq!(nearest("team:database", keys), None);
        assert_eq!(
            nearest("flux-system:webapq", keys),
            Some("flux-system:webapp")
        );
        assert_eq!(nearest("flux-system:apx", keys), Some("flux-system:api"));
        assert_eq!(nearest("flux-system:frontend", keys), None);
        assert_eq!(
            nearest("flux-system:webapp", ["flux-system:webapp"]),
            None,
            "not itself"
        );
        assert_eq!(
            nearest("a:b", ["a:c", "a:d"]),
            Some("a:c"),
            "the first of equals"
        );
        assert_eq!(nearest("x", std::iter::empty()), None);
    }

    /// The work is bounded: a budget spent gives no hint, and a name longer
    /// than any Kubernetes key gets none without any work.
    #[test]
    fn nearest_stays_within_its_budget() {
        let budget = HintBudget(AtomicUsize::new(18 * 18));
        let keys = ["flux-system:webapp"];
        assert_eq!(
            super::nearest("flux-system:webap", keys, &budget),
            Some("flux-system:webapp")
        );
        assert_eq!(super::nearest("flux-system:webap", keys, &budget), None);
        let long = "x".repeat(100_000);
        let budget = HintBudget(AtomicUsize::new(0));
        assert_eq!(super::nearest(&long, [long.as_str()], &budget), None);
        assert_eq!(
            super::nearest(&format!("{long}y"), [long.as_str()], &budget),
            None
        );
    }

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
