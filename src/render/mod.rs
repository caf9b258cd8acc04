//! Every output of a run, rendered from its [`Outcome`] (or, when it
//! stopped, from its [`Error`](crate::error::Error)): one module per
//! audience, over the one model, side by side.
//!
//! | audience | module | what it renders |
//! |---|---|---|
//! | a person at a terminal | [`terminal`] | stderr lines (changes, warnings, errors, summary, the Job's progress), `--diff` |
//! | the GitHub runner | [`github`] | workflow commands, `GITHUB_OUTPUT` entries, the step summary |
//! | kpt | [`kpt`] | function results, spliced into the ResourceList |
//! | Kubernetes and scripts | [`status`] | the Job's status and termination message |
//! | machines | [`report`] | the ResultV2 report (JSON, YAML) |
//!
//! What every audience shares lives here: the counts of a run
//! ([`Summary`]), the text of one change ([`change_text`]) and of one
//! fetched policy ([`fetched_line`]), and the one escaping of the values
//! from the input that a terminal, a log or a web page shows ([`escape()`]):
//! every line a person reads goes through it, so that a name holding a line
//! break, an ANSI sequence or a bidirectional override is shown, not
//! obeyed. The operation records each change and
//! each warning once, in the outcome; nothing here adds to or drops from
//! them, so every audience is told the same things.

pub(crate) mod github;
#[cfg(feature = "job")]
pub(crate) mod job_status;
pub(crate) mod kpt;
pub(crate) mod message;
pub(crate) mod progress;
pub(crate) mod report;
#[cfg(feature = "job")]
pub(crate) mod status;
pub(crate) mod terminal;

use std::collections::BTreeSet;

use crate::escape::{Shown, escape};
use crate::outcome::{Change, Outcome};
use crate::reflector::Resolved;

/// `1 field`, `2 fields`.
#[must_use]
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The counts of a run, which every summary line is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Changed fields (or pending ones).
    pub fields: usize,
    /// Changed files (tree input).
    pub files: usize,
    /// Changed resources: distinct objects, an object twice in one file
    /// counted once per appearance (ResourceList input).
    pub resources: usize,
    pub warnings: usize,
    /// Whether the changes were written (else they would be).
    pub writes: bool,
}

/// What a summary counts the changed places in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Files,
    Resources,
}

impl Summary {
    /// The counts of `outcome`.
    #[must_use]
    pub(crate) fn of(outcome: &Outcome) -> Self {
        let resources: BTreeSet<(&str, Option<&str>, usize)> = outcome
            .changes
            .iter()
            .map(|c| (c.file.as_str(), c.index.as_deref(), c.object_index))
            .collect();
        Self {
            fields: outcome.changes.len(),
            files: outcome.files.len(),
            resources: resources.len(),
            warnings: outcome.warnings().count(),
            writes: outcome.mode.writes(),
        }
    }

    /// `updated 3 fields in 2 files` (`would update ...` when nothing is
    /// written), counted in `unit`.
    #[must_use]
    pub(crate) fn changed(&self, unit: Unit) -> String {
        let verb = if self.writes {
            "updated"
        } else {
            "would update"
        };
        let places = match unit {
            Unit::Files => plural(self.files, "file", "files"),
            Unit::Resources => plural(self.resources, "resource", "resources"),
        };
        format!(
            "{verb} {} in {places}",
            plural(self.fields, "field", "fields")
        )
    }

    /// `1 warning`, `2 warnings`.
    #[must_use]
    pub(crate) fn warned(&self) -> String {
        plural(self.warnings, "warning", "warnings")
    }

    /// What a run held back by `flag` (`--fail-on-warnings`, the Action's
    /// `fail-on-warnings`) would have changed, and why nothing was:
    /// `would update 1 field in 1 file, but --fail-on-warnings is set and 1
    /// warning was raised: nothing was written` (`no changes, but ...` when
    /// there were none to write).
    #[must_use]
    pub(crate) fn held_back(&self, flag: &str) -> String {
        let raised = if self.warnings == 1 {
            "1 warning was raised".to_owned()
        } else {
            format!("{} were raised", self.warned())
        };
        if self.fields == 0 {
            return format!("no changes, but {flag} is set and {raised}");
        }
        format!(
            "would update {} in {}, but {flag} is set and {raised}: nothing was written",
            plural(self.fields, "field", "fields"),
            plural(self.files, "file", "files"),
        )
    }
}

/// One change as every audience words it: `OLD -> NEW (SETTER)`, the old
/// value `""` when empty, the new one as `new` shows it (escaped, then
/// coloured, say); the old value and the setter escaped.
#[must_use]
pub(crate) fn change_text(c: &Change, new: &str) -> String {
    format!(
        "{} -> {new} ({})",
        Shown(c.shown_old_value()),
        Shown(&c.setter)
    )
}

/// One fetched policy: `fetched ns:name: 57 tags listed, 12 eligible,
/// chose IMAGE`, every value in it escaped.
#[must_use]
pub(crate) fn fetched_line(r: &Resolved) -> String {
    let s = &r.selection;
    let mut text = format!(
        "fetched {}: {} listed, {} eligible, chose {}",
        r.key,
        plural(s.listed, "tag", "tags"),
        s.eligible,
        r.latest
    );
    if let Some(g) = &r.gate {
        gate_tail(&mut text, g);
    }
    // Every part but the fixed words is a value (names, a registry's tags,
    // a signature's identities and reasons).
    escape(&text).into_owned()
}

/// What the supply-chain gate found, after the fetched line: `, the tag of
/// latest (sha256:…)`, `, signed by …`, `, released … (source)`, `; skipped
/// 1.5.0 (unsigned: …)`.
fn gate_tail(text: &mut String, g: &crate::reflector::gate::GateOutcome) {
    use std::fmt::Write as _;
    if let Some(a) = &g.alias {
        let _ = write!(text, ", the tag of {} ({})", a.alias, a.digest);
    }
    if !g.signed_by.is_empty() {
        let who: Vec<String> = g.signed_by.iter().map(ToString::to_string).collect();
        let _ = write!(text, ", signed by {}", who.join(" and "));
    }
    if let Some(r) = &g.released {
        let _ = write!(text, ", released {} ({})", r.at, r.source);
    }
    for k in &g.skipped {
        let _ = write!(text, "; skipped {} ({}: {})", k.tag, k.kind, k.reason);
    }
}

#[cfg(test)]
pub(crate) mod tests;
