//! `image-update update [PATH]`: the directory mode. Flags become an
//! [`UpdateConfig`]; the outcome becomes stderr lines, a diff or outputs on
//! stdout, and an exit status.

use std::io::Write;
use std::path::Path;

use super::{Exit, PolicySourceArgs, RegistryArgs, UpdateArgs};
use crate::automation::{self, Automation};
use crate::diagnostic::{Diagnostic, Location, Severity};
use crate::error::Error;
use crate::operation::config::Observer;
use crate::operation::{
    self, FetchSettings, Input, Mode, Outcome, Outputs, PolicyValue, UpdateConfig,
};
use crate::policies::selector::Selector;
use crate::policies::{ImageRef, PolicyKey};
use crate::progress::{MonotonicClock, ProgressRenderer, Style};

/// Run `update`.
///
/// # Errors
/// Usage errors for malformed flags; whatever the operation fails with;
/// stdout that cannot be written.
pub fn run(args: &UpdateArgs) -> Result<Exit, Error> {
    let mut config = config(args)?;
    let outcome = match config.fetch.as_mut().filter(|_| !args.quiet) {
        Some(fetch) => {
            use std::io::IsTerminal;
            let progress = std::sync::Arc::new(ProgressRenderer::new(
                std::io::stderr(),
                MonotonicClock::new(),
                Style::for_terminal(std::io::stderr().is_terminal()),
            ));
            fetch.observer = Some(Observer(progress.clone()));
            progress.during(|| operation::run(&config, Input::Tree(&args.path)))?
        }
        None => operation::run(&config, Input::Tree(&args.path))?,
    };
    let printer = Printer {
        quiet: args.quiet,
        verbose: args.verbose,
        check: config.mode == Mode::Check,
        paint: super::Paint::stderr(args.color),
    };
    printer.before(&outcome);
    if args.diff {
        use std::io::IsTerminal;
        let paint = super::Paint(args.color.enabled(std::io::stdout().is_terminal()));
        print_diffs(&outcome, paint).map_err(|source| Error::Stdout {
            what: "the diff",
            source,
        })?;
    }
    for output in &outcome.stdout {
        let mut out = std::io::stdout().lock();
        out.write_all(output.text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|source| Error::Stdout {
                what: output.what,
                source,
            })?;
    }
    printer.summary(&outcome);
    if outcome.held_back {
        return Ok(Exit::Failed);
    }
    if config.mode == Mode::Check && outcome.has_changes() {
        return Ok(Exit::ChangesPending);
    }
    Ok(Exit::Success)
}

/// The run's settings from the command line.
///
/// # Errors
/// Usage errors (malformed `--policy`, `--selector`, several outputs on
/// stdout); an unreadable or invalid `--automation` file.
pub fn config(args: &UpdateArgs) -> Result<UpdateConfig, Error> {
    let stdout = Path::new("-");
    let on_stdout: Vec<&str> = [
        (args.diff, "--diff"),
        (args.report.as_deref() == Some(stdout), "--report -"),
        (
            args.emit_policies.as_deref() == Some(stdout),
            "--emit-policies -",
        ),
        (
            args.commit_message_file.as_deref() == Some(stdout),
            "--commit-message-file -",
        ),
        (
            args.message.template.as_deref() == Some(stdout)
                && args.source.policy_files.iter().any(|f| f == stdout),
            "--commit-template - and --policies -",
        ),
    ]
    .into_iter()
    .filter_map(|(on, name)| on.then_some(name))
    .collect();
    if on_stdout.len() > 1 {
        return Err(Error::Usage(format!(
            "{} all write to stdout; pick one",
            on_stdout.join(" and ")
        )));
    }
    let mut config = UpdateConfig {
        fetch: args.fetch.then(|| fetch_settings(&args.registry)),
        mode: if args.check {
            Mode::Check
        } else if args.dry_run {
            Mode::DryRun
        } else {
            Mode::Apply
        },
        plan: crate::updater::plan::PlanOptions {
            no_downgrade: args.no_downgrade,
        },
        fail_on_warnings: args.fail_on_warnings,
        outputs: Outputs {
            report: args
                .report
                .clone()
                .map(|path| (path, args.report_format.into())),
            emit_policies: args.emit_policies.clone(),
            commit_message: args.commit_message_file.clone(),
            output_dir: args.output_dir.clone(),
            keep_old_text: args.diff,
        },
        max_file_size: args.max_file_size,
        ..UpdateConfig::default()
    };
    policy_source(&mut config, &args.source)?;
    if let Some(file) = &args.automation {
        config = config.with_automation(read_automation(file, args.max_file_size)?);
    }
    if args.commit_message_file.is_some() {
        config.message = Some(super::message::message_config(
            &args.message,
            config.automation.as_ref(),
        )?);
    }
    Ok(config)
}

/// Sets the policy values, the policy files and the `--selector` of
/// `config` from the flags.
///
/// # Errors
/// A malformed `--policy` or `--selector`.
pub(crate) fn policy_source(
    config: &mut UpdateConfig,
    source: &PolicySourceArgs,
) -> Result<(), Error> {
    config.values = source
        .policies
        .iter()
        .map(|flag| policy_value_from("--policy", flag))
        .collect::<Result<_, _>>()?;
    config.policy_files.clone_from(&source.policy_files);
    if let Some(expr) = &source.selector {
        let selector =
            Selector::parse(expr).map_err(|e| Error::Usage(format!("--selector: {e}")))?;
        config
            .scope
            .selectors
            .push(("--selector".to_owned(), selector));
    }
    Ok(())
}

/// A policy result `NAMESPACE:NAME=IMAGE:TAG[@DIGEST]` given by `what` (a
/// flag, an Action input), which errors and conflicts name.
pub(crate) fn policy_value_from(what: &str, flag: &str) -> Result<PolicyValue, Error> {
    let source = format!("{what} {flag}");
    let (key, reference) = flag.split_once('=').ok_or_else(|| {
        Error::Usage(format!(
            "{what} {flag:?}: expected NAMESPACE:NAME=IMAGE:TAG[@DIGEST]"
        ))
    })?;
    let key = PolicyKey::parse(key)
        .ok_or_else(|| Error::Usage(format!("{what} {flag:?}: {key:?} is not NAMESPACE:NAME")))?;
    let image = ImageRef::parse(reference).map_err(|e| {
        let mut message = format!("{what} {flag:?}: {e}");
        if let Some(cause) = std::error::Error::source(&e) {
            message.push_str(&format!(": {cause}"));
        }
        Error::Usage(message)
    })?;
    Ok(PolicyValue { key, image, source })
}

/// The registry settings of `--fetch`.
#[must_use]
pub fn fetch_settings(args: &RegistryArgs) -> FetchSettings {
    FetchSettings {
        registry_config: args.registry_config.clone(),
        cache_dir: args.cache_dir.clone(),
        cache_ttl: args.cache_ttl,
        deadline: args.fetch_timeout,
        observer: None,
    }
}

/// The ImageUpdateAutomation in `file` (the file may hold other objects
/// too, such as its GitRepository; exactly one automation is needed).
///
/// # Errors
/// An unreadable file, invalid YAML, no or several automations, or an
/// invalid automation; each at its line and column.
pub fn read_automation(file: &Path, limit: crate::input::SizeLimit) -> Result<Automation, Error> {
    let (origin, documents) = crate::input::read_yaml(file, limit)?;
    let found: Vec<&crate::yaml::Document> = documents
        .iter()
        .filter(|d| crate::policies::image_policy::is_flux_kind(&d.value, "ImageUpdateAutomation"))
        .collect();
    match found.as_slice() {
        [one] => automation::read(one, &origin, true).map_err(Error::invalid),
        [] => Err(Error::invalid(vec![
            Diagnostic::error("holds no ImageUpdateAutomation (image.toolkit.fluxcd.io/v1)")
                .at(Location::new(origin, None)),
        ])),
        [_, second, ..] => Err(Error::invalid(vec![
            Diagnostic::error(format!(
                "holds {} ImageUpdateAutomations; give one",
                found.len()
            ))
            .at(Location::new(origin, second.position(""))),
        ])),
    }
}

/// A unified diff of every changed file on stdout, with the paths the
/// stderr lines use when the tree lies below the current directory (so
/// `git apply` works from where the command ran), else paths relative to
/// the tree.
fn print_diffs(outcome: &Outcome, paint: super::Paint) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for u in &outcome.files {
        let old = u.old_text.as_deref().unwrap_or("");
        // Relative to the current directory when the tree lies below it (as
        // on stderr); else relative to the tree (apply it from there).
        let shown = outcome.display(&u.rel);
        let path = if std::path::Path::new(&shown).is_relative() {
            shown
        } else {
            u.rel.clone()
        };
        let diff = similar::TextDiff::from_lines(old, &u.new_text);
        let text = diff
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        if paint.0 {
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
                write!(out, "{painted}{eol}")?;
            }
        } else {
            out.write_all(text.as_bytes())?;
        }
    }
    out.flush()
}

/// Human-readable lines on stderr.
struct Printer {
    quiet: bool,
    verbose: bool,
    /// `--check`: the pending changes are printed even with `-q`, so that a
    /// CI log says why it failed.
    check: bool,
    paint: super::Paint,
}

impl Printer {
    /// Everything before the diff: what was fetched, notes, skipped files
    /// (`-v`), one line per change, one per warning.
    fn before(&self, outcome: &Outcome) {
        let mut out = String::new();
        if !self.quiet {
            for r in &outcome.fetched {
                out.push_str(&format!("fetched {}\n", r.summary()));
            }
            for d in outcome
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Note)
            {
                out.push_str(&super::render_diagnostic(d, self.paint));
            }
        }
        if self.verbose {
            for s in &outcome.stats.skipped {
                out.push_str(&format!(
                    "{}: skipped: {}\n",
                    outcome.display(&s.rel),
                    s.reason
                ));
            }
        }
        if !self.quiet || self.check {
            let mut start = 0;
            while start < outcome.changes.len() {
                let file = &outcome.changes[start].display;
                let end = outcome.changes[start..]
                    .iter()
                    .position(|c| &c.display != file)
                    .map_or(outcome.changes.len(), |n| start + n);
                let mut changes: Vec<_> = outcome.changes[start..end].iter().collect();
                changes.sort_by_key(|c| c.position);
                for c in changes {
                    let old = c.shown_old_value();
                    out.push_str(&format!(
                        "{}:{}:{}: {old} -> {} ({})\n",
                        c.display,
                        c.position.line,
                        c.position.column,
                        self.paint.added(&c.new_value),
                        c.setter
                    ));
                }
                start = end;
            }
        }
        for d in outcome.warnings() {
            out.push_str(&super::render_diagnostic(d, self.paint));
        }
        let _ = std::io::stderr().write_all(out.as_bytes());
    }

    fn summary(&self, outcome: &Outcome) {
        if self.quiet && !outcome.held_back {
            return;
        }
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let fields = outcome.changes.len();
        let warnings = outcome.warnings().count();
        let mut line = if fields == 0 {
            "no changes".to_owned()
        } else {
            format!(
                "{} {} in {}",
                if outcome.mode.writes() {
                    "updated"
                } else {
                    "would update"
                },
                plural(fields, "field", "fields"),
                plural(outcome.files.len(), "file", "files")
            )
        };
        if warnings > 0 {
            line.push_str(&format!(" ({})", plural(warnings, "warning", "warnings")));
        }
        if self.verbose {
            line.push_str(&format!(
                "; {} read, {} with markers",
                plural(outcome.stats.files_read, "file", "files"),
                outcome.stats.files_screened
            ));
        }
        if outcome.held_back {
            line = format!(
                "{}: {line}; nothing was written (--fail-on-warnings)",
                self.paint.severity(Severity::Error)
            );
        }
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}
