//! `image-update update [PATH]`: the directory mode. Flags become an
//! [`UpdateConfig`]; the outcome becomes stderr lines, a diff or outputs on
//! stdout, and an exit status.

use std::io::Write;
use std::path::Path;

use super::{Exit, PolicySourceArgs, RegistryArgs, UpdateArgs};
use crate::automation::{self, Automation};
use crate::diagnostic::{Diagnostic, Location};
use crate::error::Error;
use crate::operation::config::Observer;
use crate::operation::{
    self, FetchSettings, Input, Mode, Outcome, Outputs, PolicyValue, UpdateConfig,
};
use crate::policies::selector::Selector;
use crate::policies::{ImageRef, PolicyKey};
use crate::progress::{MonotonicClock, ProgressRenderer, Style};
use crate::render::terminal::{self, Lines, Paint};

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
    let lines = Lines {
        quiet: args.quiet,
        verbose: args.verbose,
        check: config.mode == Mode::Check,
        paint: super::stderr_paint(args.color),
    };
    let _ = std::io::stderr().write_all(lines.before(&outcome).as_bytes());
    if args.diff {
        use std::io::IsTerminal;
        let paint = Paint(args.color.enabled(std::io::stdout().is_terminal()));
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
    if let Some(line) = lines.summary(&outcome) {
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
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
fn print_diffs(outcome: &Outcome, paint: Paint) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for u in &outcome.files {
        let shown = outcome.display(&u.rel);
        let path = if Path::new(&shown).is_relative() {
            shown
        } else {
            u.rel.clone()
        };
        out.write_all(terminal::diff(u, &path, paint).as_bytes())?;
    }
    out.flush()
}
