//! A person at a terminal (or a log): the lines `update` and `job` print on
//! stderr, the error of a run that stopped, and `--diff`.
//!
//! * a change: `path:line:col: OLD -> NEW (SETTER)` ([`change_line`]);
//! * a diagnostic: `path:line:col: warning: message`, then `  hint: ...`
//!   ([`diagnostic`]);
//! * an error: located problems as diagnostics, anything else as `error:
//!   message` and one `  caused by: ...` line per cause ([`error`]);
//! * the summary: `updated 3 fields in 2 files (1 warning)` ([`Lines::summary`]);
//! * the Job's progress ([`job_event`]);
//! * the fields of a log line ([`log_fields`]).
//!
//! Colour is a [`Paint`]: ANSI codes or none, decided by the front end.
//! Every value from the input is escaped first ([`super::escape()`]): a
//! line here is one line, and its only escape sequences are the colours.

use std::fmt::Write as _;

use super::{Summary, Unit, change_text, fetched_line};
use crate::diagnostic::{Diagnostic, Severity};
use crate::error::{Error, Part};
use crate::escape::{Shown, escape, line_start};
use crate::outcome::FileUpdate;
use crate::outcome::{Change, Outcome};

/// ANSI colours, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Paint(pub bool);

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    /// `error`, `warning` or `note`, coloured.
    #[must_use]
    pub(crate) fn severity(self, severity: Severity) -> String {
        let code = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "1;33",
            Severity::Note => "1;36",
        };
        self.wrap(code, severity.as_str())
    }

    /// A new value, coloured.
    #[must_use]
    pub(crate) fn added(self, text: &str) -> String {
        self.wrap("32", text)
    }

    /// A removed value or diff line, coloured.
    #[must_use]
    pub(crate) fn removed(self, text: &str) -> String {
        self.wrap("31", text)
    }

    /// A hint or diff hunk header, coloured.
    #[must_use]
    pub(crate) fn aside(self, text: &str) -> String {
        self.wrap("36", text)
    }
}

/// One diagnostic: `path:line:col: severity: message`, then `  hint: ...`
/// when it has one.
#[must_use]
pub(crate) fn diagnostic(d: &Diagnostic, paint: Paint) -> String {
    let mut out = String::new();
    if let Some(location) = &d.location {
        let _ = write!(out, "{}: ", line_start(&location.to_string()));
    }
    let _ = writeln!(
        out,
        "{}: {}",
        paint.severity(d.severity),
        escape(&d.full_message())
    );
    if let Some(hint) = &d.hint {
        let _ = writeln!(out, "  {}: {}", paint.aside("hint"), Shown(hint));
    }
    out
}

/// The error of a run that stopped: located problems as `path:line:col:
/// error: message` (each with its hint), anything else as `error: message`
/// followed by one `  caused by: ...` line per cause.
#[must_use]
pub(crate) fn error(error: &Error, paint: Paint) -> String {
    let label = paint.severity(Severity::Error);
    let mut out = String::new();
    for part in error.parts() {
        match part {
            Part::Summary(summary) => {
                let _ = writeln!(out, "{label}: {}", Shown(summary));
            }
            Part::Located(d) => out.push_str(&diagnostic(d, paint)),
            Part::Failure(e) => {
                let mut last = e.to_string();
                let _ = writeln!(out, "{label}: {}", Shown(&last));
                let mut next = std::error::Error::source(e);
                while let Some(cause) = next {
                    let text = cause.to_string();
                    // A message that already quotes its cause adds no line.
                    if !last.ends_with(&text) {
                        let _ = writeln!(out, "  caused by: {}", Shown(&text));
                    }
                    last = text;
                    next = cause.source();
                }
            }
        }
    }
    out
}

/// One change: `path:line:col: OLD -> NEW (SETTER)`, the path as the user
/// knows the file.
#[must_use]
pub(crate) fn change_line(c: &Change, paint: Paint) -> String {
    format!(
        "{}:{}:{}: {}\n",
        line_start(&c.display),
        c.position.line,
        c.position.column,
        change_text(c, &paint.added(&escape(&c.new_value)))
    )
}

/// The stderr lines of `update`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lines {
    /// Only warnings and errors (`-q`).
    pub quiet: bool,
    /// Also skipped files and counts (`-v`).
    pub verbose: bool,
    /// `--check`: the pending changes are printed even with `-q`, so that a
    /// CI log says why it failed.
    pub check: bool,
    pub paint: Paint,
}

impl Lines {
    /// Everything before the diff: what was fetched, notes, skipped files
    /// (`-v`), one line per change, one per warning.
    #[must_use]
    pub(crate) fn before(&self, outcome: &Outcome) -> String {
        let mut out = String::new();
        if !self.quiet {
            for r in &outcome.fetched {
                let _ = writeln!(out, "{}", fetched_line(r));
            }
            for d in outcome
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Note)
            {
                out.push_str(&diagnostic(d, self.paint));
            }
        }
        if self.verbose {
            for s in &outcome.stats.skipped {
                let _ = writeln!(
                    out,
                    "{}: skipped: {}",
                    line_start(&outcome.display(&s.rel)),
                    Shown(&s.reason)
                );
            }
        }
        if !self.quiet || self.check {
            for c in &outcome.changes {
                out.push_str(&change_line(c, self.paint));
            }
        }
        for d in outcome.warnings() {
            out.push_str(&diagnostic(d, self.paint));
        }
        out
    }

    /// The last line: `updated 3 fields in 2 files (1 warning)`, `no
    /// changes`; with `-v` the files read; when `--fail-on-warnings` held
    /// every write back, an error saying what would have changed and why
    /// nothing was ([`Summary::held_back`]). `None` with `-q`, unless
    /// writes were held back.
    #[must_use]
    pub(crate) fn summary(&self, outcome: &Outcome) -> Option<String> {
        if self.quiet && !outcome.held_back {
            return None;
        }
        let summary = Summary::of(outcome);
        let mut line = if outcome.held_back {
            summary.held_back("--fail-on-warnings")
        } else if summary.fields == 0 {
            "no changes".to_owned()
        } else {
            summary.changed(Unit::Files)
        };
        if summary.warnings > 0 && !outcome.held_back {
            let _ = write!(line, " ({})", summary.warned());
        }
        if self.verbose {
            let _ = write!(
                line,
                "; {} read, {} with markers",
                super::plural(outcome.stats.files_read, "file", "files"),
                outcome.stats.files_screened
            );
        }
        if outcome.held_back {
            line = format!("{}: {line}", self.paint.severity(Severity::Error));
        }
        line.push('\n');
        Some(line)
    }
}

/// The unified diff of one changed file, its paths `a/PATH` and `b/PATH`
/// (quoted as git quotes them when they hold a control character, a
/// bidirectional control, `"` or `\`: [`git_quoted`]).
#[must_use]
pub(crate) fn diff(update: &FileUpdate, path: &str, paint: Paint) -> String {
    let old = update.old_text.as_deref().unwrap_or("");
    let text = similar::TextDiff::from_lines(old, &update.new_text)
        .unified_diff()
        .context_radius(3)
        .header(
            &if update.created {
                "/dev/null".to_owned()
            } else {
                git_quoted(&format!("a/{path}"))
            },
            &git_quoted(&format!("b/{path}")),
        )
        .to_string();
    if !paint.0 {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, eol) = line.strip_suffix('\n').map_or((line, ""), |b| (b, "\n"));
        let painted = if line.starts_with("+++") || line.starts_with("---") {
            body.to_owned()
        } else if line.starts_with('+') {
            paint.added(body)
        } else if line.starts_with('-') {
            paint.removed(body)
        } else if line.starts_with("@@") {
            paint.aside(body)
        } else {
            body.to_owned()
        };
        out.push_str(&painted);
        out.push_str(eol);
    }
    out
}

/// A path in a diff's header as git writes it: as it is, or, when it holds
/// a character [`super::escape()`] escapes, `"` or `\`, between double
/// quotes, with C's escapes (`\n`, `\t`, `\r`, `\"`, `\\`, ...), the UTF-8
/// bytes in octal (`\033`, `\342\200\256`) for the other characters
/// [`super::escape()`] escapes, and every other character as it is (git's
/// `core.quotePath=false`); `git apply` reads it back. Written here:
/// gix-quote's `ansi_c::quote` quotes every non-ASCII byte (git's default),
/// so any path not in English, and would bring in gix-error for these few
/// lines.
#[must_use]
pub(crate) fn git_quoted(path: &str) -> String {
    if !path.contains(|c: char| crate::escape::escaped(c) || c == '"' || c == '\\') {
        return path.to_owned();
    }
    let mut out = String::with_capacity(path.len() + 8);
    out.push('"');
    for c in path.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if crate::escape::escaped(c) => {
                let mut bytes = [0; 4];
                for b in c.encode_utf8(&mut bytes).bytes() {
                    let _ = write!(out, "\\{b:03o}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The line (or lines) the Job prints on stderr for `event`, every value
/// in it escaped.
#[cfg(feature = "job")]
#[must_use]
pub(crate) fn job_event(event: &super::job_status::Event<'_>, paint: Paint) -> String {
    use super::job_status::Event;
    match event {
        Event::Running { reason } => format!("running: {}\n", Shown(reason)),
        Event::Skipped => "nothing changed since the last run: skipped\n".to_owned(),
        Event::Cloned { url, revision, .. } => {
            format!("cloned {} at {}\n", Shown(url), Shown(revision))
        }
        Event::Updated(_) => String::new(),
        Event::Warning(d) => diagnostic(d, paint),
        Event::Suspended { what } => format!("{} is suspended: nothing to do\n", Shown(what)),
        Event::NothingToChange => "no marked field needs a change: nothing to do\n".to_owned(),
        Event::TreeUnchanged => "the update left the tree as it was: nothing to do\n".to_owned(),
        Event::Pushed {
            commit,
            branch,
            attempts,
        } => format!(
            "pushed {} to {} ({attempts} attempt(s))\n",
            Shown(commit),
            Shown(branch)
        ),
        Event::RaceLeftNothing { tip } => format!(
            "after a lost race, the new tip {} needs no change: nothing to do\n",
            Shown(tip)
        ),
        Event::HeadUpToDate { branch } => {
            format!(
                "{} already holds this change: nothing pushed\n",
                Shown(branch)
            )
        }
        Event::PullRequest {
            noun,
            url,
            number,
            action,
        } => {
            let sign = if *noun == "merge request" { '!' } else { '#' };
            format!(
                "{} {sign}{number} {}: {}\n",
                Shown(noun),
                Shown(action),
                Shown(url)
            )
        }
        Event::PullRequestWarning { message } => format!(
            "image-update: {}: {}\n",
            paint.severity(Severity::Warning),
            Shown(message)
        ),
        Event::StateNotWritten { path, error } => format!(
            "image-update: {}: cannot write the state file {}: {}\n",
            paint.severity(Severity::Warning),
            Shown(&path.display().to_string()),
            Shown(&error.to_string())
        ),
    }
}

/// How a log line (the events the library records with `tracing`: registry
/// retries, unusable cache files, a lock waited for) shows its fields: the
/// message, then `name=value` for any other, every value escaped, as every
/// other line on stderr.
pub(crate) fn log_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    use tracing_subscriber::field::MakeExt as _;
    tracing_subscriber::fmt::format::debug_fn(|out, field, value| {
        let text = format!("{value:?}");
        if field.name() == "message" {
            write!(out, "{}", Shown(&text))
        } else {
            write!(out, "{}={}", field.name(), Shown(&text))
        }
    })
    .delimited(" ")
}

/// The line the Job prints when a signal ended it.
#[cfg(feature = "job")]
#[must_use]
pub(crate) fn job_interrupted(signal: i32) -> String {
    format!(
        "image-update: interrupted by {}; the work tree was removed\n",
        crate::sink::interrupt::name(signal)
    )
}

#[cfg(feature = "job")]
/// `error: MESSAGE: CAUSE: ...` on one line, for an error whose causes read
/// best inline (the Job's).
#[must_use]
pub(crate) fn error_line(error: &(dyn std::error::Error + 'static), paint: Paint) -> String {
    format!(
        "{}: {}\n",
        paint.severity(Severity::Error),
        Shown(&crate::diagnostic::one_line(error))
    )
}

/// An image's provenance as `policy --provenance` prints it after the selection: one line per
/// fact found, with where it was read, the links, the signer, the release time and the notes;
/// every text from a registry escaped ([`Shown`]) so a terminal never acts on it.
pub(crate) fn provenance_text(p: &image_update_template::provenance::Provenance) -> String {
    let mut out = format!("provenance of {}:\n", Shown(&p.new.image));
    let n = &p.new;
    for (what, value, from) in [
        ("source", &n.source, &n.source_from),
        ("revision", &n.revision, &n.revision_from),
        ("version", &n.version, &n.version_from),
    ] {
        if value.is_empty() {
            let _ = writeln!(out, "  {what}: (none)");
        } else {
            let _ = writeln!(out, "  {what}: {} (from the {from})", Shown(value));
        }
    }
    for (what, url) in [("repository", &p.source_url), ("commit", &p.commit_url)] {
        if !url.is_empty() {
            let _ = writeln!(out, "  {what}: {url}");
        }
    }
    if let Some(who) = p.signer.describe(|t| Shown(t).to_string()) {
        let _ = writeln!(out, "  signed by: {who}");
    }
    if !p.released.is_empty() {
        let _ = writeln!(
            out,
            "  released: {} ({})",
            p.released,
            Shown(&p.release_source)
        );
    }
    for note in &p.notes {
        let _ = writeln!(out, "  note: {}", Shown(note));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Location;
    use crate::object::ObjectId;
    use crate::text::Position;

    /// A line break and a workflow command, a screen-clearing sequence, NUL and a right-to-left
    /// override.
    const PAYLOAD: &str = "\n::error title=F::x\u{1b}[2J\0\u{202e}";
    const SHOWN: &str = r"\n::error title=F::x\x1b[2J\0\u{202e}";

    fn change(display: &str, value: &str) -> Change {
        Change {
            file: display.to_owned(),
            display: display.to_owned(),
            object: ObjectId {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: format!("c{PAYLOAD}"),
                namespace: String::new(),
            },
            object_index: 0,
            index: None,
            field_path: "data.image".into(),
            old_value: format!("nginx:1.0{PAYLOAD}"),
            new_value: value.to_owned(),
            setter: format!("ns:p{PAYLOAD}"),
            position: Position { line: 3, column: 9 },
        }
    }

    #[test]
    fn lines_show_values_from_the_input_escaped() {
        let c = change(
            &format!("::a{PAYLOAD}.yaml"),
            &format!("nginx:1.1{PAYLOAD}"),
        );
        assert_eq!(
            change_line(&c, Paint(true)),
            format!(
                "./::a{SHOWN}.yaml:3:9: nginx:1.0{SHOWN} -> \x1b[32mnginx:1.1{SHOWN}\x1b[0m \
                 (ns:p{SHOWN})\n"
            )
        );
        let d = Diagnostic::warning(format!("no policy ns:p{PAYLOAD}"))
            .at(Location::new(
                format!(" ::w{PAYLOAD}.yaml"),
                Some(Position { line: 1, column: 2 }),
            ))
            .with_hint(format!("supply{PAYLOAD}"));
        assert_eq!(
            diagnostic(&d, Paint(false)),
            format!(
                "./ ::w{SHOWN}.yaml:1:2: warning: no policy ns:p{SHOWN}\n  hint: supply{SHOWN}\n"
            )
        );
        let e = Error::Usage(format!("--policy {PAYLOAD}"));
        assert_eq!(
            error(&e, Paint(false)),
            format!("error: --policy {SHOWN}\n")
        );
        let e = Error::failed(
            format!("reading a{PAYLOAD}"),
            std::io::Error::other(format!("b{PAYLOAD}")),
        );
        assert_eq!(
            error(&e, Paint(false)),
            format!("error: reading a{SHOWN}\n  caused by: b{SHOWN}\n")
        );
        let e = Error::invalid_with(format!("in{PAYLOAD}"), vec![d]);
        assert!(
            error(&e, Paint(false)).starts_with(&format!("error: in{SHOWN}\n./ ::w{SHOWN}.yaml"))
        );
    }

    #[test]
    fn diff_headers_quote_paths_as_git_does() {
        assert_eq!(git_quoted("a/apps/web.yaml"), "a/apps/web.yaml");
        assert_eq!(git_quoted("a/ümlaut ok.yaml"), "a/ümlaut ok.yaml");
        assert_eq!(
            git_quoted("a/x\n::error::y\u{1b}[2J\t\"q\"\\\u{202e}.yaml"),
            r#""a/x\n::error::y\033[2J\t\"q\"\\\342\200\256.yaml""#
        );
    }

    #[cfg(feature = "job")]
    #[test]
    fn job_progress_shows_values_escaped() {
        use crate::render::job_status::Event;
        let lines = [
            Event::Cloned {
                url: &format!("https://h/r{PAYLOAD}"),
                revision: &format!("main{PAYLOAD}@sha1:1"),
                work_tree: std::path::Path::new("/tmp/w"),
            },
            Event::Suspended {
                what: &format!("ImageUpdateAutomation a/b{PAYLOAD}"),
            },
            Event::PullRequest {
                noun: "pull request",
                url: &format!("https://h/p{PAYLOAD}"),
                number: 7,
                action: "created",
            },
            Event::PullRequestWarning {
                message: &format!("label{PAYLOAD}"),
            },
            Event::HeadUpToDate {
                branch: &format!("b{PAYLOAD}"),
            },
        ]
        .iter()
        .map(|e| job_event(e, Paint(false)))
        .collect::<String>();
        assert_eq!(
            lines,
            format!(
                "cloned https://h/r{SHOWN} at main{SHOWN}@sha1:1\n\
                 ImageUpdateAutomation a/b{SHOWN} is suspended: nothing to do\n\
                 pull request #7 created: https://h/p{SHOWN}\n\
                 image-update: warning: label{SHOWN}\n\
                 b{SHOWN} already holds this change: nothing pushed\n"
            )
        );
        let e = std::io::Error::other(format!("push refused{PAYLOAD}"));
        assert_eq!(
            error_line(&e, Paint(false)),
            format!("error: push refused{SHOWN}\n")
        );
    }

    #[test]
    fn log_lines_show_their_fields_escaped() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Buffer(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Buffer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let subscriber = tracing_subscriber::fmt()
            .fmt_fields(log_fields())
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .without_time()
            .with_target(false)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(attempt = 2, error = %format!("e{PAYLOAD}"), "cannot read {}", PAYLOAD);
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains(&format!("cannot read {SHOWN}")), "{text}");
        assert!(text.contains(&format!("error=e{SHOWN}")), "{text}");
        assert!(text.contains("attempt=2"), "{text}");
    }
}
