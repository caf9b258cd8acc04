//! `image-update fn`: the KRM function (kpt fn eval / kpt fn render).
//!
//! Reads one ResourceList from stdin and writes one to stdout; see
//! [`crate::krm`]. stdout always gets a complete ResourceList: the whole
//! output is planned before the first byte is written, and a failed write
//! exits 1 (never 0, which kpt would take as "delete everything"). stdin is
//! read up to a limit ([`MAX_INPUT_SIZE`], 1 GiB by default); a larger input
//! is answered with an error result.

use std::io::Write;

use super::Exit;
use crate::error::Error;
use crate::input::{ReadError, SizeLimit, read_capped};
use crate::krm::{self, Output, Response};

/// The function's documentation (`kpt fn doc`, `image-update fn --help`).
pub(crate) const FN_HELP: &str = "\
Run as a KRM function (kpt fn eval / kpt fn render).

Reads one ResourceList (config.kubernetes.io/v1, v1beta1 or v1alpha1, or a v1 List) from stdin and
writes it back on stdout, with the same apiVersion, with only the scalars marked by
`# {\"$imagepolicy\": \"NAMESPACE:NAME[:tag|:name|:digest]\"}` comments replaced, and `results` set:
a summary first, then one info result per changed field and one warning per problem. Everything
else in the input (comments, annotations, quoting, indentation, functionConfig) is kept byte for
byte. The binary run with no arguments and a ResourceList on stdin does the same.

Policy results come from, merged (a policy given twice with different values is an error):
  * ImagePolicy objects (image.toolkit.fluxcd.io) with a status among the items (left untouched);
  * the functionConfig, one of:
    - v1 ConfigMap: `data` maps NAMESPACE:NAME to IMAGE:TAG[@DIGEST]; keys without a `:` are
      options (policySelector, path, check, dryRun, fetch; values are strings). This is what
      `kpt fn eval ... -- NAMESPACE:NAME=IMAGE:TAG` sends.
    - fn.image-update.dev/v1alpha1 ImageUpdate:
        policies:        {NAMESPACE:NAME: IMAGE:TAG[@DIGEST]}
        policySelector:  kubectl selector string (`env=prod,tier in (web)`) or LabelSelector
                         {matchLabels, matchExpressions}; selects among the ImagePolicies in the items
        path:            only items whose path annotation lies under this directory are edited
        check: true      edit nothing; every pending change is an error result (exit 1)
        noDowngrade: true  leave alone (with a warning) a change that moves a tag backwards
        dryRun: true     edit nothing; report what would change
        fetch: true      compute policy results from the ImageRepository/ImagePolicy and KubeSphere
                         ImageUpdater items by asking their registries (needs network: under kpt use
                         --exec or a network-enabled runtime; containers get --network none)
    - image.toolkit.fluxcd.io/v1 ImageUpdateAutomation: uses the ImagePolicies among the items in
      the automation's namespace (default: default) that match spec.policySelector; edits only
      items under spec.update.path; spec.suspend: true edits nothing.
    - gitops.kubesphere.io/v1alpha1 ImageUpdater (kind: fluxcd): the same automation, from
      spec.fluxcd; its own images are definitions, fetched like the items'.
      These two take fetching as the annotation fn.image-update.dev/fetch: \"true\".

With the functionConfig fn.image-update.dev/v1alpha1 Deploy, the function is `image-update deploy`
as a generator: the automations, GitRepositories and definitions among the items stay, and the
workloads that run them (ConfigMaps, state claims, CronJobs) are added, one file per workload
under `path`, replacing a previous run's (annotated fn.image-update.dev/generated-by):
        image, namespace, fleet, state, parallelism   deploy's options
        path             where the workloads' files go (default image-update)

Exit status: 0 when the list was processed (warnings included); 1 when the input or the
functionConfig is invalid, or check found pending changes: stdout then carries error results
and kpt writes nothing.

Examples:
  kpt fn eval --exec image-update PKG -- flux-system:podinfo=ghcr.io/stefanprodan/podinfo:6.7.0
  kpt fn eval --exec image-update PKG --fn-config automation.yaml
  kpt fn eval --exec image-update PKG --fn-config deploy.yaml
  kpt fn render PKG --allow-exec
      with, in the Kptfile: pipeline: {mutators: [{exec: image-update, configPath: FILE}]}";

/// The environment variable that sets the most bytes read from stdin
/// (default 1 GiB): the function has no flags.
pub(crate) const MAX_INPUT_SIZE: &str = "IMAGE_UPDATE_MAX_INPUT_SIZE";

/// Run the function on stdin.
///
/// # Errors
/// A terminal on stdin (usage), stdin that cannot be read, stdout that
/// cannot be written.
pub(crate) fn run() -> Result<Exit, Error> {
    use std::io::IsTerminal;
    if std::io::stdin().is_terminal() {
        return Err(Error::Usage(
            "image-update fn reads a ResourceList on stdin: pipe one in, or run it from kpt \
             (see image-update fn --help)"
                .to_owned(),
        ));
    }
    let limit = match std::env::var(MAX_INPUT_SIZE) {
        Ok(v) => match SizeLimit::parse(&v) {
            Ok(limit) => limit,
            Err(e) => return write_response(krm::unreadable(&format!("{MAX_INPUT_SIZE}: {e}"))),
        },
        Err(_) => SizeLimit::RESOURCE_LIST_DEFAULT,
    };
    let mut bytes = Vec::with_capacity(crate::input::stdin_file_size(limit).unwrap_or(0));
    match read_capped(
        std::io::stdin().lock(),
        "stdin",
        limit,
        "raise it with the environment variable IMAGE_UPDATE_MAX_INPUT_SIZE",
        &mut bytes,
    ) {
        Ok(()) => {}
        Err(e @ ReadError::TooLarge { .. }) => {
            return write_response(krm::unreadable(&e.to_string()));
        }
        Err(e) => return Err(e.into()),
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let message = format!(
                "input is not UTF-8 (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            );
            return write_response(krm::not_utf8(&message));
        }
    };
    write_response(krm::process(&text))
}

fn write_response(mut response: Response<'_>) -> Result<Exit, Error> {
    // The results are already rendered into the output: free them before
    // writing (a large list has thousands).
    drop(std::mem::take(&mut response.results));
    let pieces = response
        .output
        .pieces()
        .map_err(|e| Error::Internal(e.to_string()))?;
    let stdout = super::stdio::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    pieces
        .iter()
        .try_for_each(|p| out.write_all(p.as_bytes()))
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the ResourceList",
            source,
        })?;
    if matches!(response.output, Output::Fresh(_)) || response.failed {
        Ok(Exit::Failed)
    } else {
        Ok(Exit::Success)
    }
}
