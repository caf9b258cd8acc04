//! `image-update update [PATH]`: the directory mode. Flags become an
//! [`UpdateConfig`]; the outcome becomes stderr lines, a diff or outputs on
//! stdout, and an exit status.

use std::io::Write;
use std::path::Path;

use super::{Exit, RegistryArgs, UpdateArgs};
use crate::automation::{self, Automation};
use crate::diagnostic::{Diagnostic, Location, Severity};
use crate::error::Error;
use crate::operation::{
    self, FetchSettings, Input, Mode, Outcome, Outputs, PolicyValue, UpdateConfig,
};
use crate::policies::selector::Selector;
use crate::policies::{ImageRef, PolicyKey};

/// Run `update`.
///
/// # Errors
/// Usage errors for malformed flags; whatever the operation fails with;
/// stdout that cannot be written.
pub fn run(args: &UpdateArgs) -> Result<Exit, Error> {
    let config = config(args)?;
    let outcome = operation::run(&config, Input::Tree(&args.path))?;
    let printer = Printer {
        quiet: args.quiet,
        verbose: args.verbose,
    };
    printer.before(&outcome);
    if args.diff {
        print_diffs(&outcome).map_err(|source| Error::Stdout {
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
        values: args
            .policies
            .iter()
            .map(|flag| policy_value(flag))
            .collect::<Result<_, _>>()?,
        policy_files: args.policy_files.clone(),
        fetch: args.fetch.then(|| fetch_settings(&args.registry)),
        mode: if args.check {
            Mode::Check
        } else if args.dry_run {
            Mode::DryRun
        } else {
            Mode::Apply
        },
        outputs: Outputs {
            report: args
                .report
                .clone()
                .map(|path| (path, args.report_format.into())),
            emit_policies: args.emit_policies.clone(),
            output_dir: args.output_dir.clone(),
            keep_old_text: args.diff,
        },
        max_file_size: args.max_file_size,
        ..UpdateConfig::default()
    };
    if let Some(expr) = &args.selector {
        let selector =
            Selector::parse(expr).map_err(|e| Error::Usage(format!("--selector: {e}")))?;
        config
            .scope
            .selectors
            .push(("--selector".to_owned(), selector));
    }
    if let Some(file) = &args.automation {
        config = config.with_automation(read_automation(file, args.max_file_size)?);
    }
    Ok(config)
}

/// `--policy NAMESPACE:NAME=IMAGE:TAG[@DIGEST]`.
fn policy_value(flag: &str) -> Result<PolicyValue, Error> {
    let source = format!("--policy {flag}");
    let (key, reference) = flag.split_once('=').ok_or_else(|| {
        Error::Usage(format!(
            "--policy {flag:?}: expected NAMESPACE:NAME=IMAGE:TAG[@DIGEST]"
        ))
    })?;
    let key = PolicyKey::parse(key)
        .ok_or_else(|| Error::Usage(format!("--policy {flag:?}: {key:?} is not NAMESPACE:NAME")))?;
    let image = ImageRef::parse(reference).map_err(|e| {
        let mut message = format!("--policy {flag:?}: {e}");
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
    }
}

/// The ImageUpdateAutomation in `file` (the file may hold other objects
/// too, such as its GitRepository; exactly one automation is needed).
///
/// # Errors
/// An unreadable file, invalid YAML, no or several automations, or an
/// invalid automation; each at its line and column.
pub fn read_automation(file: &Path, limit: crate::input::SizeLimit) -> Result<Automation, Error> {
    let origin = crate::input::name(file);
    let text = crate::input::read_text(file, limit)?;
    let documents = crate::yaml::parse_documents(&text).map_err(|e| {
        Error::invalid(vec![
            Diagnostic::error(format!("not valid YAML: {}", e.message))
                .at(Location::new(origin.clone(), e.position)),
        ])
    })?;
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

fn print_diffs(outcome: &Outcome) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for u in &outcome.files {
        let old = u.old_text.as_deref().unwrap_or("");
        let diff = similar::TextDiff::from_lines(old, &u.new_text);
        write!(
            out,
            "{}",
            diff.unified_diff()
                .context_radius(3)
                .header(&format!("a/{}", u.rel), &format!("b/{}", u.rel))
        )?;
    }
    out.flush()
}

/// Human-readable lines on stderr.
struct Printer {
    quiet: bool,
    verbose: bool,
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
                push_diagnostic(&mut out, d);
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
        if !self.quiet {
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
                    let old = if c.old_value.is_empty() {
                        "\"\""
                    } else {
                        &c.old_value
                    };
                    out.push_str(&format!(
                        "{}:{}:{}: {old} -> {} ({})\n",
                        c.display, c.position.line, c.position.column, c.new_value, c.setter
                    ));
                }
                start = end;
            }
        }
        for d in outcome.warnings() {
            push_diagnostic(&mut out, d);
        }
        let _ = std::io::stderr().write_all(out.as_bytes());
    }

    fn summary(&self, outcome: &Outcome) {
        if self.quiet {
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
        let _ = writeln!(std::io::stderr(), "{line}");
    }
}

/// A diagnostic and its hint, as stderr lines.
fn push_diagnostic(out: &mut String, d: &Diagnostic) {
    out.push_str(&format!("{d}\n"));
    if let Some(hint) = &d.hint {
        out.push_str(&format!("  hint: {hint}\n"));
    }
}
