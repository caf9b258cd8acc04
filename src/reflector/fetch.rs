//! Resolving definitions against registries: list tags (one request chain
//! per distinct repository, concurrently), select with the policy engine,
//! look up digests as the policy asks.
//!
//! All or nothing: [`resolve`] returns either a result for every definition
//! or every error, so a caller writes no file unless all policies resolved.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::definitions::{Definition, RegistryCredential};
use crate::diagnostic::{Diagnostic, Location};
use crate::policies::{ImageRef, PolicyKey};
use crate::reflector::gate::{self, GateOutcome, SupplyChain};
use crate::reflector::selection::{
    Created, DigestAction, LookupError, PolicySpec, Selection, Strategy, digest_action,
    next_observed_previous,
};
use image_update_registry::Secret;
use image_update_registry::credentials::credential_from_config_json;
use image_update_registry::{
    ClientSettings, Credential, Error as RegistryError, Platform, Provider, RegistryClient,
    Repository,
};

/// How many repositories are listed at once (each host's own
/// `concurrency` setting still applies).
pub(crate) const MAX_IN_FLIGHT: usize = 8;

/// Candidates kept per selection (for the `policy` command's report).
pub(crate) const TOP: usize = 10;

/// The outcome for one policy.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub key: PolicyKey,
    /// The definition's source, for the policy table and messages.
    pub source: String,
    pub latest: ImageRef,
    /// `status.latestRef` before this run.
    pub previous: Option<ImageRef>,
    /// The new `status.observedPreviousRef`.
    pub observed_previous: Option<ImageRef>,
    pub selection: Selection,
    /// What the supply-chain gate found (who signed the chosen image, when
    /// it was released, the alias it follows, the candidates passed over);
    /// `None` when no gate applies to the policy.
    pub gate: Option<GateOutcome>,
    /// How to look the images of this policy up again (provenance): the
    /// client that resolved it, its repository and platform; `None` for a
    /// result not fetched in this run.
    pub lookup: Option<Lookup>,
}

/// A resolved policy's registry, for later lookups of the run.
#[derive(Debug, Clone)]
pub struct Lookup {
    pub client: Arc<RegistryClient>,
    pub repository: Repository,
    /// The policy's first platform, when it names some.
    pub platform: Option<Platform>,
}

impl Resolved {
    /// One warning per candidate the gate passed over, naming why, and one
    /// when the release time used is builder-controlled; `at` is the
    /// policy's definition. The caller adds them to the run's diagnostics,
    /// so every output shows them.
    #[must_use]
    pub(crate) fn warnings(&self, at: Option<&Location>) -> Vec<Diagnostic> {
        let Some(g) = &self.gate else {
            return Vec::new();
        };
        let mut out: Vec<Diagnostic> = g
            .skipped
            .iter()
            .map(|k| {
                Diagnostic::warning(format!(
                    "policy {}: skipped {}:{} ({}): {}",
                    self.key, self.latest.name, k.tag, k.kind, k.reason
                ))
            })
            .collect();
        if let Some(r) = g.released.as_ref().filter(|r| r.builder_controlled) {
            out.push(
                Diagnostic::warning(format!(
                    "policy {}: the release time of {} is builder-controlled ({}), not set by the registry",
                    self.key, self.latest, r.source
                ))
                .with_hint(
                    "whoever builds the image sets this time; use age-source registry where the registry reports push times",
                ),
            );
        }
        if let Some(at) = at {
            for d in &mut out {
                d.location = Some(at.clone());
            }
        }
        out
    }

    /// The new `status.latestRef` as an [`ImageRef`].
    #[must_use]
    pub fn latest_ref(&self) -> ImageRef {
        ImageRef::new(&self.latest.name, &self.latest.tag).with_digest(&self.latest.digest)
    }
}

/// Resolve every definition; `settings` is the run's registry set-up
/// (settings file, cache, environment credentials).
///
/// # Errors
/// One diagnostic per failed policy, at its definition, naming the policy,
/// with the registry error as its cause.
pub(crate) fn resolve(
    definitions: &[Definition],
    settings: &ClientSettings,
) -> Result<Vec<Resolved>, Vec<Diagnostic>> {
    let base = settings;
    // One client per credential source and `insecure` flag: a Secret applies
    // to its own definitions only, and an ImageRepository's `insecure: true`
    // to its own repository only (as in Flux), even when others use the same
    // registry host.
    // A definition's provider (`spec.provider`) applies to its own
    // repository only too; the clients of one run share the logins
    // (`ClientSettings::logins`), so a registry is logged in to once.
    let mut groups: BTreeMap<(Option<String>, bool, Provider), Vec<usize>> = BTreeMap::new();
    for (i, d) in definitions.iter().enumerate() {
        groups
            .entry((
                d.credentials.as_ref().map(RegistryCredential::describe),
                d.insecure,
                d.provider,
            ))
            .or_default()
            .push(i);
    }
    let mut errors = Vec::new();
    let mut out: Vec<Option<Resolved>> = definitions.iter().map(|_| None).collect();
    // Each supply-chain rule's signers are read once (keys, trusted root).
    let mut gates = gate::Gates::default();
    // One deadline for the whole run, however many clients it takes.
    let start = std::time::Instant::now();
    for ((credentials, insecure, provider), members) in &groups {
        let fail = |i: usize, m: &dyn std::fmt::Display| {
            let d = &definitions[i];
            Diagnostic::error(format!("policy {}: {m}", d.key)).at(d.location.clone())
        };
        let policy_error = |i: usize| {
            let d = &definitions[i];
            Diagnostic::error(format!("policy {}", d.key)).at(d.location.clone())
        };
        let mut group_settings = base.clone();
        group_settings.deadline = base.deadline.map(|d| d.saturating_sub(start.elapsed()));
        if *insecure {
            for &i in members {
                let host = definitions[i].repository.registry().to_owned();
                let mut cfg = group_settings
                    .registries
                    .get(&host)
                    .cloned()
                    .unwrap_or_default();
                cfg.insecure = Some(true);
                group_settings.set_host(&host, cfg);
            }
        }
        if *provider != Provider::Generic {
            for &i in members {
                group_settings.set_provider(definitions[i].repository.registry(), *provider);
            }
        }
        // Tag lists fetched with a Secret's credentials are cached apart, so
        // they are never served to a policy without that Secret.
        if let (Some(source), Some(dir)) = (credentials, &base.cache_dir) {
            use sha2::Digest as _;
            let digest = sha2::Sha256::digest(source.as_bytes());
            let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
            group_settings.cache_dir = Some(dir.join(format!("credentials-{name}")));
        }
        let mut credential_error = false;
        // A credential program runs once per group (all its members name it).
        let mut program_output = None;
        for &i in members {
            let d = &definitions[i];
            if let Some(source) = &d.credentials {
                match credential(source, &d.repository, base, &mut program_output) {
                    Ok(c) => {
                        group_settings.credentials = group_settings
                            .credentials
                            .clone()
                            .with_credential_from(d.repository.registry(), c, source.describe());
                    }
                    Err(e) => {
                        errors.push(fail(i, &e));
                        credential_error = true;
                    }
                }
            }
        }
        if credential_error {
            continue;
        }
        let client = match RegistryClient::new(group_settings) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                errors.push(Diagnostic::error("the registry settings cannot be used").caused_by(e));
                continue;
            }
        };
        let mut repos: Vec<Repository> = members
            .iter()
            .map(|&i| definitions[i].repository.clone())
            .collect();
        repos.sort();
        repos.dedup();
        let listed: BTreeMap<&Repository, Result<Vec<String>, Arc<RegistryError>>> = repos
            .iter()
            .zip({
                client.announce_listings(repos.len());
                crate::pool::map(&repos, MAX_IN_FLIGHT, |r| client.list_tags(r))
            })
            .map(|(repo, result)| (repo, result.map_err(Arc::new)))
            .collect();
        for &i in members {
            let d = &definitions[i];
            let tags = match listed.get(&d.repository) {
                Some(Ok(tags)) => tags,
                Some(Err(e)) => {
                    errors.push(policy_error(i).caused_by(Arc::clone(e)));
                    continue;
                }
                None => {
                    errors.push(fail(i, &"internal error: repository not listed"));
                    continue;
                }
            };
            let spec = match PolicySpec::new(d.config.clone()) {
                Ok(s) => s,
                Err(e) => {
                    errors.push(policy_error(i).caused_by(e));
                    continue;
                }
            };
            let chain = match gate::chain(base, &d.repository, &d.gate, &d.key, &mut gates) {
                Ok(c) => c,
                Err(e) => {
                    errors.push(fail(i, &e));
                    continue;
                }
            };
            match choose_gated(
                &client,
                &d.repository,
                &d.image,
                &spec,
                tags,
                d.previous.as_ref(),
                TOP,
                &chain,
            ) {
                Ok((selection, latest, gate)) => {
                    let new = ImageRef::new(&latest.name, &latest.tag).with_digest(&latest.digest);
                    let observed_previous = next_observed_previous(
                        d.previous.as_ref(),
                        &new,
                        d.observed_previous.as_ref(),
                    );
                    out[i] = Some(Resolved {
                        key: d.key.clone(),
                        source: d.source.clone(),
                        latest,
                        previous: d.previous.clone(),
                        observed_previous,
                        selection,
                        gate,
                        lookup: Some(Lookup {
                            client: Arc::clone(&client),
                            repository: d.repository.clone(),
                            platform: spec.platforms().first().cloned(),
                        }),
                    });
                }
                Err(e) => errors.push(policy_error(i).caused_by(e)),
            }
        }
    }
    if errors.is_empty() {
        Ok(out.into_iter().flatten().collect())
    } else {
        Err(errors)
    }
}

/// The registry credential in `source` for `repository`'s registry; a
/// program's answer is kept in `program_output` for the next definition
/// naming it.
fn credential(
    source: &RegistryCredential,
    repository: &Repository,
    settings: &ClientSettings,
    program_output: &mut Option<Result<(String, Secret), String>>,
) -> Result<Credential, String> {
    let (text, origin) = match source {
        RegistryCredential::Program {
            given,
            path,
            origin,
        } => {
            allowed_program(settings, given, path, repository, origin)?;
            let (username, password) = program_output
                .get_or_insert_with(|| run_program(path, origin))
                .clone()?;
            return Ok(Credential::Basic { username, password });
        }
        RegistryCredential::Secret {
            origin,
            config_json,
        } => (config_json.clone(), origin.clone()),
        RegistryCredential::File(path) => {
            // A file beside the definitions, found through its directory's door: read as every
            // repository file is (bounded, regular files only, never blocking).
            let bytes =
                crate::input::read_regular_owned(path, false, crate::input::SizeLimit::default())
                    .map_err(|e| crate::diagnostic::one_line(&e))?
                    .ok_or_else(|| format!("{} is not a regular file", path.display()))?;
            let text = String::from_utf8(bytes)
                .map_err(|_| format!("{} is not UTF-8 text", path.display()))?;
            (Secret::new(text), path.display().to_string())
        }
    };
    credential_from_config_json(
        text.expose(),
        repository.registry(),
        repository.repository(),
        &origin,
    )
    .map_err(|e| e.to_string())?
    .ok_or_else(|| {
        format!(
            "{origin} holds no credentials for {}",
            repository.registry()
        )
    })
}

/// Whether the operator allows the credential program `path` (symlinks
/// resolved) to answer for `repository`'s registry.
fn allowed_program(
    settings: &ClientSettings,
    given: &str,
    path: &std::path::Path,
    repository: &Repository,
    origin: &str,
) -> Result<(), String> {
    let registry = repository.registry();
    let same = |allowed: &std::path::Path| {
        fs_err::canonicalize(allowed).is_ok_and(|resolved| resolved == path)
    };
    let entries: Vec<_> = settings
        .allowed_programs
        .iter()
        .filter(|a| same(&a.path))
        .collect();
    if entries.is_empty() {
        return Err(format!(
            "{origin}: the program {given} is not allowed to run; the operator allows a credential program with --allow-credential-program [HOST=]PATH (the Action's allow-credential-program input) or the registry settings' allowed_credential_programs"
        ));
    }
    if !entries.iter().any(|a| {
        a.registry
            .as_deref()
            .is_none_or(|r| r.eq_ignore_ascii_case(registry))
    }) {
        return Err(format!(
            "{origin}: the program {given} is allowed for {}, not for {registry}",
            entries
                .iter()
                .filter_map(|a| a.registry.as_deref())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(())
}

/// Run a credential program (no shell, no arguments, stdin closed, at
/// most 10 s and 64 KiB of output): its first line is `USER:PASSWORD`.
fn run_program(path: &std::path::Path, origin: &str) -> Result<(String, Secret), String> {
    use image_update_registry::credentials::{HELPER_TIMEOUT, MAX_PROGRAM_OUTPUT, run_bounded};
    let ran = run_bounded(path, &[], None, HELPER_TIMEOUT, MAX_PROGRAM_OUTPUT)
        .map_err(|e| format!("{origin}: {e}"))?;
    if !ran.status.success() {
        // Its output is never quoted: it may hold a secret.
        return Err(format!("{origin}: the program exited with {}", ran.status));
    }
    let text = Secret::new(String::from_utf8_lossy(&ran.stdout).into_owned());
    let line = text
        .expose()
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.split_once(':') {
        Some((user, password)) if !user.is_empty() && !password.is_empty() => {
            Ok((user.to_owned(), Secret::new(password)))
        }
        _ => Err(format!(
            "{origin}: the program did not print USER:PASSWORD on its first line"
        )),
    }
}

/// Why one policy could not be resolved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChooseError {
    #[error(transparent)]
    Select(#[from] crate::reflector::selection::SelectError),
    #[error("fetching the digest of {reference}")]
    Digest {
        reference: String,
        #[source]
        source: Box<RegistryError>,
    },
    #[error("tag {tag} has no image for platform {platforms}")]
    NoPlatform { tag: String, platforms: String },
    #[error(transparent)]
    Reference(#[from] crate::policies::RefError),
    #[error(transparent)]
    Gate(#[from] gate::GateError),
}

/// Select a tag of `repo` from `tags` with `spec`, then settle its digest:
/// the digest strategy always records one; otherwise the policy's digest
/// reflection decides, against `previous`. With platforms, the digest
/// recorded is still the one the tag points at (an index for multi-arch
/// images, as Flux and Argo CD record it), and a tag with no image for any
/// of the platforms is an error.
///
/// # Errors
/// [`ChooseError`]: no tag qualifies (the engine's message), or a registry
/// failure while reading creation times or digests.
pub(crate) fn choose(
    client: &RegistryClient,
    repo: &Repository,
    image: &str,
    spec: &PolicySpec,
    tags: &[String],
    previous: Option<&ImageRef>,
    top: usize,
) -> Result<(Selection, ImageRef), ChooseError> {
    choose_gated(
        client,
        repo,
        image,
        spec,
        tags,
        previous,
        top,
        &SupplyChain::default(),
    )
    .map(|(selection, latest, _)| (selection, latest))
}

/// [`choose`], then the supply-chain gate ([`gate::pass`]) when `chain`
/// requires anything: the result is the best candidate that passes, with
/// the digest that was checked, and what the gate found.
///
/// # Errors
/// As [`choose`], and [`ChooseError::Gate`] when no candidate passes.
#[allow(clippy::too_many_arguments)]
pub(crate) fn choose_gated(
    client: &RegistryClient,
    repo: &Repository,
    image: &str,
    spec: &PolicySpec,
    tags: &[String],
    previous: Option<&ImageRef>,
    top: usize,
    chain: &SupplyChain,
) -> Result<(Selection, ImageRef, Option<GateOutcome>), ChooseError> {
    let top = if chain.is_empty() {
        top
    } else {
        top.max(chain.candidates_needed())
    };
    let platforms = spec.platforms();
    let filtered = spec.filter_tags(tags.iter().map(String::as_str))?;
    let selection = if spec.needs_created_time() {
        // Only the survivors are looked up, several at a time; the engine
        // then reads the answers in its own order.
        let survivors: Vec<&str> = filtered.tags().collect();
        let mut times = created_many(client, repo, &survivors, platforms);
        let mut lookup = |tag: &str| -> Result<Created, LookupError> {
            times
                .remove(tag)
                .unwrap_or_else(|| created(client, repo, tag, platforms))
        };
        spec.choose(filtered, &mut lookup, top)?
    } else {
        spec.choose(
            filtered,
            &mut crate::reflector::selection::NoCreatedTimes,
            top,
        )?
    };
    let mut selection = selection;
    let mut outcome = None;
    let mut gated_digest = None;
    if !chain.is_empty() {
        let (tag, digest, found) = gate::pass(client, repo, image, &selection, chain)?;
        // The chosen candidate heads the list; the better ones passed over
        // are in the outcome's `skipped`.
        if let Some(at) = selection.candidates.iter().position(|c| c.tag == tag) {
            selection.candidates.drain(..at);
        }
        selection.tag = tag;
        gated_digest = Some(digest);
        outcome = Some(found);
    }
    let tag = selection.tag.clone();
    let action = if gated_digest.is_some() || matches!(spec.strategy(), Strategy::Digest { .. }) {
        DigestAction::Fetch
    } else {
        digest_action(spec.digest_reflection(), previous, image, &tag)
    };
    let digest = match action {
        DigestAction::None => String::new(),
        DigestAction::Keep(d) => d,
        DigestAction::Fetch => {
            let wrap = |source| ChooseError::Digest {
                reference: format!("{image}:{tag}"),
                source: Box::new(source),
            };
            if !platforms.is_empty() {
                let mut found = false;
                for p in platforms {
                    match client.digest(repo, &tag, Some(p)) {
                        Ok(_) => {
                            found = true;
                            break;
                        }
                        Err(RegistryError::PlatformNotFound { .. }) => {}
                        Err(e) => return Err(wrap(e)),
                    }
                }
                if !found {
                    return Err(ChooseError::NoPlatform {
                        tag,
                        platforms: spec.config().platforms.join(" or "),
                    });
                }
            }
            match gated_digest {
                Some(d) => d,
                None => client.digest(repo, &tag, None).map_err(wrap)?,
            }
        }
    };
    let latest = ImageRef {
        name: image.to_owned(),
        tag,
        digest,
    };
    latest.validate()?;
    Ok((selection, latest, outcome))
}

/// How many creation times are looked up at once (per policy).
const CREATED_IN_FLIGHT: usize = 6;

type CreatedResult = Result<Created, LookupError>;

/// [`created`] for many tags, with up to [`CREATED_IN_FLIGHT`] requests
/// at a time (each host's `concurrency` setting still applies).
fn created_many(
    client: &RegistryClient,
    repo: &Repository,
    tags: &[&str],
    platforms: &[Platform],
) -> std::collections::HashMap<String, CreatedResult> {
    crate::pool::map(tags, CREATED_IN_FLIGHT, |tag| {
        ((*tag).to_owned(), created(client, repo, tag, platforms))
    })
    .into_iter()
    .collect()
}

/// The creation time of `tag` for newest-build: the first of `platforms`
/// the tag has an image for (none: the registry's default choice). A tag
/// with no image for any of the platforms ([`Created::NoPlatform`]), or
/// whose image has no `created` time ([`Created::Unknown`]), drops out, as
/// in Argo CD, each counted under its own reason; other registry failures
/// abort.
fn created(
    client: &RegistryClient,
    repo: &Repository,
    tag: &str,
    platforms: &[Platform],
) -> Result<Created, LookupError> {
    let wanted: Vec<Option<&Platform>> = if platforms.is_empty() {
        vec![None]
    } else {
        platforms.iter().map(Some).collect()
    };
    for p in wanted {
        match client.created(repo, tag, p) {
            Ok(time) => return Ok(time.into()),
            Err(RegistryError::PlatformNotFound { .. }) => {}
            Err(e) => return Err(Box::new(e)),
        }
    }
    Ok(Created::NoPlatform)
}
