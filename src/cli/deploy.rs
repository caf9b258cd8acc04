//! `image-update deploy FILE...`: the Kubernetes manifests that run the
//! automations of FILE... on a schedule, with no controller
//! ([`crate::deploy`]): YAML on stdout, notes on stderr.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use super::Exit;
use crate::deploy::{self, Options, Source};
use crate::error::Error;
use crate::input::SizeLimit;

/// `image-update deploy`.
#[derive(Debug, Clone, Args)]
pub(crate) struct DeployArgs {
    /// YAML files with ImageUpdateAutomations or ImageUpdaters (kind:
    /// fluxcd), their GitRepositories and the ImageRepository/ImagePolicy
    /// definitions (`-` reads stdin).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,

    /// The container image the workloads run.
    #[arg(long, value_name = "IMAGE", default_value_t = deploy::default_image())]
    pub image: String,

    /// Put every workload in NAMESPACE (default: each automation's; the
    /// Secrets they name must be there).
    #[arg(long, short = 'n', value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// One Indexed CronJob named NAME for all the automations (they share a
    /// namespace and a git Secret), instead of one CronJob each.
    #[arg(long, value_name = "NAME")]
    pub fleet: Option<String>,

    /// Keep each automation's --state on a PersistentVolumeClaim, so runs
    /// with nothing new skip the clone (ReadWriteMany for a fleet).
    #[arg(long)]
    pub state: bool,

    /// A fleet's Pods running at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub parallelism: u32,

    /// Give the workloads a ServiceAccount of their own, annotated for the
    /// cloud identity their Pods log in to registries with: aws=ROLE_ARN
    /// (EKS IRSA), aws=pod-identity (EKS Pod Identity), gcp=GSA_EMAIL (GKE
    /// Workload Identity), gcp=direct, azure=CLIENT_ID (AKS workload
    /// identity).
    #[arg(long, value_name = "PROVIDER=ID", value_parser = parse_cloud_identity)]
    pub cloud_identity: Option<deploy::CloudIdentity>,

    /// Pass --registry-provider HOST=PROVIDER to every Job (an
    /// ImageRepository's spec.provider needs none); repeatable.
    #[arg(long, value_name = "HOST=PROVIDER", value_parser = super::args::parse_registry_provider)]
    pub registry_provider: Vec<(String, image_update_registry::Provider)>,

    /// The most bytes read from one file.
    #[arg(long, value_name = "SIZE", env = "IMAGE_UPDATE_MAX_FILE_SIZE", default_value = "64MiB", value_parser = SizeLimit::parse)]
    pub max_file_size: SizeLimit,
}

fn parse_cloud_identity(text: &str) -> Result<deploy::CloudIdentity, String> {
    text.parse()
}

/// Run `deploy`.
///
/// # Errors
/// Unreadable or invalid files; every problem of the inputs, at its place
/// (nothing is written then); stdout that cannot be written.
pub(crate) fn run(args: &DeployArgs) -> Result<Exit, Error> {
    if args.files.iter().filter(|f| f.as_os_str() == "-").count() > 1 {
        return Err(Error::Usage("- (stdin) can be given once".to_owned()));
    }
    if let Some(ns) = &args.namespace
        && !crate::object::dns_label(ns)
    {
        return Err(Error::Usage(format!(
            "--namespace {ns:?} is not a valid namespace"
        )));
    }
    let mut read = Vec::new();
    for file in &args.files {
        read.push(crate::input::read_yaml(file, args.max_file_size)?);
    }
    let sources: Vec<Source<'_>> = read
        .iter()
        .map(|(origin, documents)| Source { origin, documents })
        .collect();
    let options = Options {
        image: args.image.clone(),
        namespace: args.namespace.clone(),
        fleet: args.fleet.clone(),
        state: args.state,
        parallelism: args.parallelism,
        cloud_identity: args.cloud_identity.clone(),
        registry_providers: args.registry_provider.clone(),
    };
    let output = deploy::generate(&sources, &options).map_err(Error::invalid)?;
    let text = output.to_yaml().map_err(Error::Internal)?;
    let paint = super::stderr_paint(super::ColorChoice::from_args());
    let notes: String = output
        .notes
        .iter()
        .map(|n| crate::render::terminal::diagnostic(n, paint))
        .collect();
    // One write, so that lines of concurrent processes do not interleave.
    let _ = super::stdio::stderr().write_all(notes.as_bytes());
    let mut out = super::stdio::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|source| Error::Stdout {
            what: "the manifests",
            source,
        })?;
    Ok(Exit::Success)
}
