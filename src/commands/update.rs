//! `image-update update [PATH]`: the directory mode.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{Exit, UsageError, read_input};
use crate::cli::UpdateArgs;
use crate::pipeline::{self, Destination, TreePlan};
use crate::resolve::policies::read_image_policies;
use crate::resolve::selector::Selector;
use crate::resolve::{LatestRef, PolicyKey, PolicyTable};

/// Build the policy table from `--policy` and `--policies` (filtered by
/// `--selector`). Returns notes about policies without a latest image.
///
/// # Errors
/// Usage errors for malformed flags; input errors naming the file and policy
/// for invalid ImagePolicies; conflicts naming both sources.
pub fn policy_table(args: &UpdateArgs) -> anyhow::Result<PolicyTable> {
    let mut table = PolicyTable::new();
    for flag in &args.policies {
        let source = format!("--policy {flag}");
        let (key, reference) = flag.split_once('=').ok_or_else(|| {
            UsageError(format!(
                "--policy {flag:?}: expected NAMESPACE:NAME=IMAGE:TAG[@DIGEST]"
            ))
        })?;
        let key = PolicyKey::parse(key).ok_or_else(|| {
            UsageError(format!("--policy {flag:?}: {key:?} is not NAMESPACE:NAME"))
        })?;
        let latest = LatestRef::parse(reference)
            .map_err(|e| UsageError(format!("--policy {flag:?}: {e}")))?;
        table.insert(key, Some(latest), &source)?;
    }
    let selector = match &args.selector {
        Some(expr) => {
            Some(Selector::parse(expr).map_err(|e| UsageError(format!("--selector: {e}")))?)
        }
        None => None,
    };
    for file in &args.policy_files {
        let name = if file == Path::new("-") {
            "stdin".to_owned()
        } else {
            file.display().to_string()
        };
        let text = read_input(file)?;
        let policies =
            read_image_policies(&text).map_err(|e| anyhow::anyhow!("{name}: {}", e.message))?;
        for p in policies {
            if selector.as_ref().is_some_and(|s| !s.matches(&p.labels)) {
                continue;
            }
            let source = format!("{name} (ImagePolicy {}/{})", p.key.namespace, p.key.name);
            table.insert(p.key, p.latest, &source)?;
        }
    }
    Ok(table)
}

/// Run `update`.
///
/// # Errors
/// Usage and input errors; IO errors while writing.
pub fn run(args: &UpdateArgs) -> anyhow::Result<Exit> {
    if args.report.as_deref() == Some(Path::new("-")) && args.diff {
        bail!(UsageError(
            "--report - and --diff both write to stdout; pick one".to_owned()
        ));
    }
    let table = policy_table(args)?;
    let printer = Printer::new(args);
    for (key, source) in table.without_latest() {
        printer.note(&format!(
            "policy {key} from {source} has no latest image and is ignored"
        ));
    }
    if !args.path.exists() {
        bail!("{}: no such file or directory", args.path.display());
    }
    let destination = match &args.output_dir {
        Some(dir) => Destination::Under(dir.clone()),
        None => Destination::InPlace,
    };
    let writes = !(args.dry_run || args.check);
    let tree = pipeline::plan_tree(
        &args.path,
        &table,
        args.diff,
        writes && destination == Destination::InPlace,
    )?;
    printer.plan(&args.path, &tree);
    if args.diff {
        print_diffs(&tree).context("cannot write the diff to stdout")?;
    }
    if writes {
        pipeline::write_updates(&tree.updates, &destination, args.fsync)?;
    }
    if let Some(report) = &args.report {
        let text = tree
            .report
            .render(args.report_format)
            .map_err(|e| anyhow::anyhow!("report: {e}"))?;
        if report == Path::new("-") {
            std::io::stdout()
                .write_all(text.as_bytes())
                .context("cannot write the report to stdout")?;
        } else {
            crate::sink::dir::write_atomic(report, text.as_bytes(), None)?;
        }
    }
    printer.summary(&tree, writes);
    if args.check && !tree.updates.is_empty() {
        return Ok(Exit::ChangesPending);
    }
    Ok(Exit::Success)
}

fn print_diffs(tree: &TreePlan) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for u in &tree.updates {
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
    root: PathBuf,
    root_is_file: bool,
    quiet: bool,
    verbose: bool,
}

impl Printer {
    fn new(args: &UpdateArgs) -> Self {
        Self {
            root: args.path.clone(),
            root_is_file: args.path.is_file(),
            quiet: args.quiet,
            verbose: args.verbose,
        }
    }

    fn display(&self, rel: &str) -> String {
        if self.root_is_file {
            return self.root.display().to_string();
        }
        let joined = self.root.join(rel);
        let s = joined.display().to_string();
        s.strip_prefix("./").map(str::to_owned).unwrap_or(s)
    }

    fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!("note: {message}");
        }
    }

    fn plan(&self, _root: &Path, tree: &TreePlan) {
        if self.verbose {
            for s in &tree.skipped {
                eprintln!("{}: skipped: {}", self.display(&s.rel), s.reason);
            }
        }
        if !self.quiet {
            for (file, objects) in &tree.report.file_changes {
                let mut changes: Vec<_> = objects.iter().flat_map(|o| &o.changes).collect();
                changes.sort_by_key(|c| (c.line, c.column));
                for change in changes {
                    eprintln!(
                        "{}:{}:{}: {} -> {} ({})",
                        self.display(file),
                        change.line,
                        change.column,
                        show(&change.old_value),
                        change.new_value,
                        change.setter
                    );
                }
            }
        }
        for w in &tree.report.warnings {
            eprintln!(
                "{}:{}:{}: warning: {}",
                self.display(&w.file),
                w.line,
                w.column,
                w.message
            );
        }
    }

    fn summary(&self, tree: &TreePlan, wrote: bool) {
        if self.quiet {
            return;
        }
        let fields = tree.report.change_count();
        let files = tree.updates.len();
        let warnings = tree.report.warnings.len();
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut line = if fields == 0 {
            "no changes".to_owned()
        } else {
            format!(
                "{} {} in {}",
                if wrote { "updated" } else { "would update" },
                plural(fields, "field", "fields"),
                plural(files, "file", "files")
            )
        };
        if warnings > 0 {
            line.push_str(&format!(" ({})", plural(warnings, "warning", "warnings")));
        }
        if self.verbose {
            line.push_str(&format!(
                "; {} read, {} with markers",
                plural(tree.files_read, "file", "files"),
                tree.files_screened
            ));
        }
        eprintln!("{line}");
    }
}

fn show(old: &str) -> &str {
    if old.is_empty() { "\"\"" } else { old }
}
