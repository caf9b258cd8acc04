//! The supply-chain gate between selection and writing: the chosen tag is
//! the best candidate that is signed by a required signer (when the
//! registry settings' `supply_chain` rule for the repository names
//! signers) and old enough by a trusted time (a minimum release age); a
//! policy that follows an alias (`latest`) takes the candidate with the
//! alias's digest. Better candidates that fail are skipped, each with the
//! reason; when none passes, the policy fails and nothing is written.
//!
//! A passing result always records the digest that was checked, so what is
//! written is what was verified.

use std::sync::Arc;
use std::time::Duration;

use image_update_registry::settings::{AgeSource, VerifyConfig};
use image_update_registry::{
    ClientSettings, Error as RegistryError, Platform, RegistryClient, Repository,
};
use image_update_verify::age::{self, AgeVerdict, MinAge, ReleaseTime};
use image_update_verify::{Gate, SignedBy};
use serde::Serialize;

use super::selection::{AliasConfig, GateConfig, Selection};

/// Most candidates examined by the gate, best first.
pub(crate) const MAX_CANDIDATES: usize = 10;

/// What the gate requires of one policy.
#[derive(Debug, Clone, Default)]
pub(crate) struct SupplyChain {
    /// Required signers: each gate must pass (the settings rule's, the
    /// definition's own).
    pub verify: Vec<Arc<Gate>>,
    /// Minimum release age.
    pub min_age: Option<MinAge>,
    /// Follow an alias.
    pub alias: Option<AliasConfig>,
    /// Most candidates examined (0: [`MAX_CANDIDATES`]).
    pub max_candidates: usize,
}

impl SupplyChain {
    /// Whether it requires nothing (selection stands as it is).
    pub(crate) fn is_empty(&self) -> bool {
        self.verify.is_empty() && self.min_age.is_none() && self.alias.is_none()
    }

    /// How many candidates selection must rank for the gate.
    pub(crate) fn candidates_needed(&self) -> usize {
        let n = if self.max_candidates == 0 {
            MAX_CANDIDATES
        } else {
            self.max_candidates
        };
        self.alias.as_ref().map_or(n, |a| n.max(a.max_requests))
    }
}

/// A candidate the gate passed over, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    pub tag: String,
    /// `unsigned`, `too-young`, `no-trusted-time`.
    pub kind: &'static str,
    pub reason: String,
}

/// The alias a result follows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AliasMatch {
    pub alias: String,
    pub digest: String,
    /// Candidates whose digest was looked up.
    pub requests: usize,
}

/// What the gate found out about the chosen image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GateOutcome {
    /// Who signed it (empty when no signers are required).
    #[serde(rename = "signedBy", skip_serializing_if = "Vec::is_empty")]
    pub signed_by: Vec<SignedBy>,
    /// When it was released, and by whose clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released: Option<ReleaseTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<AliasMatch>,
    /// Better candidates passed over.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

/// Why the gate let no candidate through.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GateError {
    #[error("no candidate passed the supply-chain gate ({examined} examined{more}): {}", list(.skipped))]
    NonePassed {
        examined: usize,
        more: String,
        skipped: Vec<Skipped>,
    },
    #[error(
        "no tag the policy admits has the digest of {alias} ({digest}) among the {examined} best candidates{more}"
    )]
    NoSibling {
        alias: String,
        digest: String,
        examined: usize,
        more: String,
    },
    #[error("invalid alias platform {0:?}: expected os/arch[/variant]")]
    Platform(String),
    #[error("looking up {reference}")]
    Registry {
        reference: String,
        #[source]
        source: Box<RegistryError>,
    },
}

fn list(skipped: &[Skipped]) -> String {
    skipped
        .iter()
        .map(|s| format!("{} {}: {}", s.tag, s.kind, s.reason))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Runs the gate over `selection`'s candidates (best first). Returns the
/// chosen tag, its digest, and what the gate found.
///
/// # Errors
/// [`GateError`]: no candidate passed, no sibling of the alias, or a
/// registry failure (which fails the policy rather than fall back to an
/// older tag).
pub(crate) fn pass(
    client: &RegistryClient,
    repo: &Repository,
    image: &str,
    selection: &Selection,
    chain: &SupplyChain,
) -> Result<(String, String, GateOutcome), GateError> {
    let registry = |reference: String| {
        move |source: RegistryError| GateError::Registry {
            reference,
            source: Box::new(source),
        }
    };
    let mut outcome = GateOutcome::default();
    let limit = chain.candidates_needed();
    let candidates: Vec<&str> = selection
        .candidates
        .iter()
        .map(|c| c.tag.as_str())
        .collect();
    let more = |examined: usize| {
        let rest = selection.eligible.saturating_sub(examined);
        if rest > 0 {
            format!(", {rest} older not examined")
        } else {
            String::new()
        }
    };
    // The alias narrows the candidates to the one with its digest.
    let (candidates, alias_digest): (Vec<&str>, Option<String>) = match &chain.alias {
        None => (candidates.into_iter().take(limit).collect(), None),
        Some(alias) => {
            let platform = alias
                .platform
                .as_deref()
                .map(|p| {
                    p.parse::<Platform>()
                        .map_err(|_| GateError::Platform(p.to_owned()))
                })
                .transpose()?;
            let want = client
                .digest(repo, &alias.tag, platform.as_ref())
                .map_err(registry(format!("{image}:{}", alias.tag)))?;
            let mut requests = 0;
            let mut found = None;
            for tag in candidates.iter().take(alias.max_requests) {
                requests += 1;
                let d = match client.digest(repo, tag, platform.as_ref()) {
                    Ok(d) => d,
                    Err(RegistryError::PlatformNotFound { .. }) => continue,
                    Err(e) => return Err(registry(format!("{image}:{tag}"))(e)),
                };
                if d == want {
                    found = Some(*tag);
                    break;
                }
            }
            let Some(tag) = found else {
                return Err(GateError::NoSibling {
                    alias: alias.tag.clone(),
                    digest: want,
                    examined: requests,
                    more: more(requests),
                });
            };
            outcome.alias = Some(AliasMatch {
                alias: alias.tag.clone(),
                digest: want.clone(),
                requests,
            });
            (vec![tag], Some(want))
        }
    };
    let now = age::now();
    for tag in &candidates {
        let reference = format!("{image}:{tag}");
        // The digest checked is the one the tag points at (the index of a
        // multi-arch image), as cosign signs it. With a per-platform alias
        // match, the sibling's own digest is looked up here.
        let digest = match (
            &alias_digest,
            chain.alias.as_ref().and_then(|a| a.platform.as_ref()),
        ) {
            (Some(d), None) => d.clone(),
            _ => client
                .digest(repo, tag, None)
                .map_err(registry(reference.clone()))?,
        };
        let signed_by = match signers(client, repo, &digest, &chain.verify)
            .map_err(registry(reference.clone()))?
        {
            Ok(who) => who,
            Err(reason) => {
                outcome.skipped.push(Skipped {
                    tag: (*tag).to_owned(),
                    kind: "unsigned",
                    reason,
                });
                continue;
            }
        };
        let mut released = None;
        if let Some(min) = &chain.min_age {
            match age::check(client, repo, tag, &digest, min, now) {
                AgeVerdict::OldEnough(t) => released = Some(t),
                AgeVerdict::TooYoung(t) => {
                    let age = Duration::from_secs(
                        u64::try_from(now.unix_seconds() - t.timestamp.unix_seconds()).unwrap_or(0),
                    );
                    outcome.skipped.push(Skipped {
                        tag: (*tag).to_owned(),
                        kind: "too-young",
                        reason: format!(
                            "released {} ago ({} {}), needs {}",
                            age::human(age),
                            t.source,
                            t.at,
                            age::human(min.min)
                        ),
                    });
                    continue;
                }
                AgeVerdict::Unknown(why) => {
                    outcome.skipped.push(Skipped {
                        tag: (*tag).to_owned(),
                        kind: "no-trusted-time",
                        reason: why,
                    });
                    continue;
                }
            }
        }
        outcome.signed_by = signed_by;
        outcome.released = released;
        return Ok(((*tag).to_owned(), digest, outcome));
    }
    Err(GateError::NonePassed {
        examined: candidates.len(),
        more: if alias_digest.is_some() {
            String::new()
        } else {
            more(candidates.len())
        },
        skipped: outcome.skipped,
    })
}

/// Who signed `digest`, by every gate in turn (each must pass), or why it
/// counts as unsigned.
pub(super) fn signers(
    client: &RegistryClient,
    repo: &Repository,
    digest: &str,
    gates: &[Arc<Gate>],
) -> Result<Result<Vec<SignedBy>, String>, RegistryError> {
    let mut who = Vec::new();
    for gate in gates {
        match gate.check(client, repo, digest)? {
            Ok(v) => who.extend(v.signed_by),
            Err(r) if r.found => return Ok(Err(format!("no valid signature: {r}"))),
            Err(_) => return Ok(Err("no signature found".to_owned())),
        }
    }
    Ok(Ok(who))
}

/// The age setting of a policy: with a minimum from the settings (or a
/// front end's flags), the longer of it and the definition's, measured by
/// the settings' source (a definition cannot move it to a
/// builder-controlled time); else the definition's own, by its source.
pub(crate) fn min_age(
    rule_min: Option<Duration>,
    rule_source: AgeSource,
    own_min: Option<Duration>,
    own_source: Option<AgeSource>,
) -> Option<MinAge> {
    match (rule_min, own_min) {
        (Some(rule), own) => Some(MinAge {
            min: own.map_or(rule, |own| own.max(rule)),
            source: rule_source,
        }),
        (None, Some(own)) => Some(MinAge {
            min: own,
            source: own_source.unwrap_or(rule_source),
        }),
        (None, None) => None,
    }
}

/// The signers of each settings rule, built once per run (keys and trusted
/// roots read and parsed), by rule index.
#[derive(Debug, Default)]
pub(crate) struct Gates(std::collections::BTreeMap<usize, Result<Arc<Gate>, String>>);

/// What the gate requires of the policy `key` (of repository `repo`, with
/// the definition's own settings `own`): the first `supply_chain` rule of
/// `settings` matching the repository (with a front end's flags already
/// applied to it), plus what the definition adds. A definition adds
/// requirements and never lifts one: its signers are required besides the
/// rule's, its minimum age can only lengthen the rule's.
///
/// # Errors
/// Signers that cannot be built (a key or trusted root that does not read),
/// naming where they were given.
pub(crate) fn chain(
    settings: &ClientSettings,
    repo: &Repository,
    own: &GateConfig,
    key: &impl std::fmt::Display,
    gates: &mut Gates,
) -> Result<SupplyChain, String> {
    let supply = &settings.supply_chain;
    let index = supply.rule_index(&repo.canonical_name());
    let rule = index.map(|i| &supply.rules[i]);
    let mut chain = SupplyChain {
        alias: own.alias.clone(),
        min_age: min_age(
            rule.and_then(|r| r.min_age),
            rule.map(|r| r.age_source).unwrap_or_default(),
            own.min_age,
            own.age_source,
        ),
        ..SupplyChain::default()
    };
    let build = |verify: &VerifyConfig, default_origin: String| {
        image_update_verify::from_config(
            verify,
            supply.trusted_root.as_deref(),
            settings.base_dir.as_deref(),
        )
        .map(|p| Arc::new(Gate::new(p)))
        .map_err(|e| format!("{}: {e}", verify.origin.clone().unwrap_or(default_origin)))
    };
    let rule_verify = rule.and_then(|r| r.verify.as_ref());
    if let (Some(index), Some(verify)) = (index, rule_verify) {
        let built = gates.0.entry(index).or_insert_with(|| {
            build(
                verify,
                format!("supply_chain rule {} of the registry settings", index + 1),
            )
        });
        chain
            .verify
            .push(Arc::clone(built.as_ref().map_err(Clone::clone)?));
    }
    if let Some(verify) = &own.verify {
        // The definition's keyless signers use the rule's trusted root.
        let mut verify = verify.clone();
        if verify.trusted_root.is_none()
            && verify.trusted_root_json.is_none()
            && let Some(r) = rule_verify
        {
            verify.trusted_root_json.clone_from(&r.trusted_root_json);
            verify.trusted_root.clone_from(&r.trusted_root);
        }
        chain.verify.push(build(
            &verify,
            format!("the signers policy {key} requires"),
        )?);
    }
    Ok(chain)
}
