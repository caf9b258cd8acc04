//! `image-update update [PATH]`: the directory mode.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::{Exit, UsageError, read_input};
use crate::cli::{RegistryArgs, UpdateArgs};
use crate::policies::image_policy::{
    PoliciesError, SuppliedPolicy, image_policy, is_flux_kind, parse_documents,
};
use crate::policies::selector::Selector;
use crate::policies::{LatestRef, PolicyKey, PolicyTable};
use crate::reflector::definitions::is_policy_definition;
use crate::reflector::{self, Definition, Document, Resolved, emit, may_define};
use crate::updater::source::dir::walk;
use crate::updater::tree::{self, Destination, TreePlan};
use image_update_registry::ClientSettings;

/// Build the policy table from `--policy` and `--policies` (filtered by
/// `--selector`). With `--fetch`, ImagePolicies that have a spec are
/// definitions, not supplied results: they are returned as documents (with
/// the other objects of the `--policies` files) instead.
///
/// # Errors
/// Usage errors for malformed flags; input errors naming the file and policy
/// for invalid ImagePolicies; conflicts naming both sources.
pub fn policy_table(args: &UpdateArgs) -> anyhow::Result<(PolicyTable, Vec<Document>)> {
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
    let selector = selector(args)?;
    let mut documents = Vec::new();
    for file in &args.policy_files {
        let name = if file == Path::new("-") {
            "stdin".to_owned()
        } else {
            file.display().to_string()
        };
        let text = read_input(file)?;
        let values = parse_documents(&text).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
        let mut policies = Vec::new();
        for value in &values {
            collect_supplied(value, args.fetch, &mut policies)
                .map_err(|e| anyhow::anyhow!("{name}: {}", e.message))?;
        }
        for p in policies {
            if selector.as_ref().is_some_and(|s| !s.matches(&p.labels)) {
                continue;
            }
            let source = format!("{name} (ImagePolicy {}/{})", p.key.namespace, p.key.name);
            table.insert(p.key, p.latest, &source)?;
        }
        if args.fetch {
            let dir = if file == Path::new("-") {
                std::env::current_dir().ok()
            } else {
                Some(
                    file.parent()
                        .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
                )
            };
            documents.extend(values.into_iter().map(|value| Document {
                value,
                origin: name.clone(),
                dir: dir.clone(),
            }));
        }
    }
    Ok((table, documents))
}

fn selector(args: &UpdateArgs) -> anyhow::Result<Option<Selector>> {
    Ok(match &args.selector {
        Some(expr) => {
            Some(Selector::parse(expr).map_err(|e| UsageError(format!("--selector: {e}")))?)
        }
        None => None,
    })
}

/// The ImagePolicies of one document (Lists opened) that are supplied
/// results: all of them, or with `fetch` only those without a spec.
fn collect_supplied(
    value: &serde_json::Value,
    fetch: bool,
    out: &mut Vec<SuppliedPolicy>,
) -> Result<(), PoliciesError> {
    let kind = value
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    if kind.ends_with("List")
        && let Some(items) = value.get("items").and_then(serde_json::Value::as_array)
    {
        for item in items {
            collect_supplied(item, fetch, out)?;
        }
        return Ok(());
    }
    if is_flux_kind(value, "ImagePolicy") && !(fetch && is_policy_definition(value)) {
        out.push(image_policy(value)?);
    }
    Ok(())
}

/// The documents of every file under `root` that may hold definitions
/// (screened by substring before parsing).
///
/// # Errors
/// A walk or read failure, or a screened file that is not YAML.
pub fn definition_documents(root: &Path) -> anyhow::Result<Vec<Document>> {
    let walked = walk(root, |c| {
        let text = match std::fs::read_to_string(&c.path) {
            Ok(t) => t,
            Err(e) => return Some(Err(format!("{}: cannot read: {e}", c.path.display()))),
        };
        if !may_define(&text) {
            return None;
        }
        let dir = c.path.parent().map(Path::to_path_buf);
        Some(
            parse_documents(&text)
                .map_err(|e| format!("{}: {e}", c.path.display()))
                .map(|values| {
                    values
                        .into_iter()
                        .map(|value| Document {
                            value,
                            origin: c.path.display().to_string(),
                            dir: dir.clone(),
                        })
                        .collect::<Vec<_>>()
                }),
        )
    })?;
    let mut out = Vec::new();
    for (_, result) in walked.results {
        out.extend(result.map_err(|e| anyhow::anyhow!(e))?);
    }
    Ok(out)
}

/// The registry client settings of a run ([`reflector::client_settings`]).
///
/// # Errors
/// An unreadable or invalid settings file.
pub fn registry_settings(args: &RegistryArgs) -> anyhow::Result<ClientSettings> {
    reflector::client_settings(
        args.registry_config.as_deref(),
        args.cache_dir.clone(),
        args.cache_ttl,
    )
    .map_err(|e| anyhow::anyhow!("{e}"))
}

/// Resolve the definitions in `documents` and add them to `table`; returns
/// the definitions and results (for `--emit-policies`).
///
/// # Errors
/// Invalid definitions, or any policy that fails to resolve (all are
/// named); conflicts with supplied results.
pub fn fetch_into(
    table: &mut PolicyTable,
    documents: &[Document],
    selector: Option<&Selector>,
    registry: &RegistryArgs,
    quiet: bool,
) -> anyhow::Result<(Vec<Definition>, Vec<Resolved>)> {
    let definitions = reflector::collect(documents).map_err(|errors| {
        anyhow::anyhow!(
            "invalid policy definitions; nothing was written:\n  {}",
            errors.join("\n  ")
        )
    })?;
    let definitions: Vec<Definition> = definitions
        .into_iter()
        .filter(|d| selector.is_none_or(|s| s.matches(&d.labels)))
        .collect();
    let settings = registry_settings(registry)?;
    let resolved = reflector::resolve(&definitions, &settings).map_err(|errors| {
        anyhow::anyhow!(
            "{} of {} policies could not be fetched; nothing was written:\n  {}",
            errors.len(),
            definitions.len(),
            errors.join("\n  ")
        )
    })?;
    if !quiet {
        for r in &resolved {
            eprintln!("fetched {}", r.summary());
        }
    }
    reflector::insert_all(table, &resolved)?;
    Ok((definitions, resolved))
}

/// Run `update`.
///
/// # Errors
/// Usage and input errors; IO errors while writing.
pub fn run(args: &UpdateArgs) -> anyhow::Result<Exit> {
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
        bail!(UsageError(format!(
            "{} all write to stdout; pick one",
            on_stdout.join(" and ")
        )));
    }
    let (mut table, mut documents) = policy_table(args)?;
    if !args.path.exists() {
        bail!("{}: no such file or directory", args.path.display());
    }
    let fetched = if args.fetch {
        documents.extend(definition_documents(&args.path)?);
        let selector = selector(args)?;
        Some(fetch_into(
            &mut table,
            &documents,
            selector.as_ref(),
            &args.registry,
            args.quiet,
        )?)
    } else {
        None
    };
    let printer = Printer::new(args);
    for (key, source) in table.without_latest() {
        printer.note(&format!(
            "policy {key} from {source} has no latest image and is ignored"
        ));
    }
    let destination = match &args.output_dir {
        Some(dir) => Destination::Under(dir.clone()),
        None => Destination::InPlace,
    };
    let writes = !(args.dry_run || args.check);
    let tree = tree::plan_tree(
        &args.path,
        &table,
        args.diff,
        writes && destination == Destination::InPlace,
    )?;
    printer.plan(&args.path, &tree);
    if args.diff {
        print_diffs(&tree).context("cannot write the diff to stdout")?;
    }
    // Explicitly requested outputs are rendered first and written in the same
    // batch as the updates: every file is staged before any is renamed into
    // place, so a failure writes nothing. They are written under --dry-run
    // and --check too (they are what was asked for, not changes to PATH).
    let mut outputs: Vec<(&Path, String)> = Vec::new();
    if let (Some(path), Some((definitions, resolved))) = (&args.emit_policies, &fetched) {
        let text = emit::render(definitions, resolved)
            .map_err(|e| anyhow::anyhow!("--emit-policies: {e}"))?;
        outputs.push((path, text));
    }
    if let Some(report) = &args.report {
        let text = tree
            .report
            .render(args.report_format)
            .map_err(|e| anyhow::anyhow!("report: {e}"))?;
        outputs.push((report, text));
    }
    let files: Vec<crate::updater::sink::dir::FileWrite<'_>> = outputs
        .iter()
        .filter(|(path, _)| *path != stdout)
        .map(|(path, text)| crate::updater::sink::dir::FileWrite {
            target: path,
            bytes: text.as_bytes(),
            permissions_from: None,
        })
        .collect();
    let updates: &[tree::FileUpdate] = if writes { &tree.updates } else { &[] };
    tree::write_updates(updates, &destination, &files)?;
    for (_, text) in outputs.iter().filter(|(path, _)| *path == stdout) {
        std::io::stdout()
            .write_all(text.as_bytes())
            .context("cannot write to stdout")?;
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
