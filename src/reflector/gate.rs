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

use image_update_registry::{
    Error as RegistryError, Platform, RegistryClient, Repository, settings::AgeSource,
};
use image_update_verify::age::{self, AgeVerdict, MinAge, ReleaseTime};
use image_update_verify::{Gate, SignedBy};
use serde::Serialize;

use super::selection::{AliasConfig, Selection};

/// Most candidates examined by the gate, best first.
pub const MAX_CANDIDATES: usize = 10;

/// What the gate requires of one policy.
#[derive(Debug, Clone, Default)]
pub struct SupplyChain {
    /// Required signers.
    pub verify: Option<Arc<Gate>>,
    /// Minimum release age.
    pub min_age: Option<MinAge>,
    /// Follow an alias.
    pub alias: Option<AliasConfig>,
    /// Most candidates examined (0: [`MAX_CANDIDATES`]).
    pub max_candidates: usize,
}

impl SupplyChain {
    /// Whether it requires nothing (selection stands as it is).
    pub fn is_empty(&self) -> bool {
        self.verify.is_none() && self.min_age.is_none() && self.alias.is_none()
    }

    /// How many candidates selection must rank for the gate.
    pub fn candidates_needed(&self) -> usize {
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
pub enum GateError {
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
pub fn pass(
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
        let mut signed_by = Vec::new();
        if let Some(gate) = &chain.verify {
            match gate
                .check(client, repo, &digest)
                .map_err(registry(reference.clone()))?
            {
                Ok(v) => signed_by = v.signed_by,
                Err(r) => {
                    outcome.skipped.push(Skipped {
                        tag: (*tag).to_owned(),
                        kind: "unsigned",
                        reason: if r.found {
                            format!("no valid signature: {r}")
                        } else {
                            "no signature found".to_owned()
                        },
                    });
                    continue;
                }
            }
        }
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

/// The age setting of a policy: the definition's values over the rule's.
pub fn min_age(
    rule_min: Option<Duration>,
    rule_source: AgeSource,
    own_min: Option<Duration>,
    own_source: Option<AgeSource>,
) -> Option<MinAge> {
    own_min.or(rule_min).map(|min| MinAge {
        min,
        source: own_source.unwrap_or(rule_source),
    })
}

/// The gate's verdict on one candidate, for a display of every candidate
/// (the `policy` command): what [`pass`] would say about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CandidateVerdict {
    pub tag: String,
    pub digest: String,
    /// `None`: no signers required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed: Option<Result<Vec<SignedBy>, String>>,
    /// `None`: no minimum age.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age: Option<AgeCheck>,
    /// `None`: no alias followed.
    #[serde(rename = "matchesAlias", skip_serializing_if = "Option::is_none")]
    pub matches_alias: Option<bool>,
}

/// The age part of a [`CandidateVerdict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum AgeCheck {
    OldEnough { released: ReleaseTime },
    TooYoung { released: ReleaseTime },
    NoTrustedTime { reason: String },
}

impl CandidateVerdict {
    /// Whether the candidate passes every requirement.
    pub fn passes(&self) -> bool {
        self.signed.as_ref().is_none_or(Result::is_ok)
            && self
                .age
                .as_ref()
                .is_none_or(|a| matches!(a, AgeCheck::OldEnough { .. }))
            && self.matches_alias != Some(false)
    }
}

/// Every requirement of `chain` checked on each of the first `n` candidates
/// of `selection` (best first), without stopping at the first that passes.
///
/// # Errors
/// A registry failure, or an invalid alias platform.
pub fn evaluate(
    client: &RegistryClient,
    repo: &Repository,
    image: &str,
    selection: &Selection,
    chain: &SupplyChain,
    n: usize,
) -> Result<Vec<CandidateVerdict>, GateError> {
    let registry = |reference: String| {
        move |source: RegistryError| GateError::Registry {
            reference,
            source: Box::new(source),
        }
    };
    let platform = chain
        .alias
        .as_ref()
        .and_then(|a| a.platform.as_deref())
        .map(|p| {
            p.parse::<Platform>()
                .map_err(|_| GateError::Platform(p.to_owned()))
        })
        .transpose()?;
    let alias_digest = chain
        .alias
        .as_ref()
        .map(|a| {
            client
                .digest(repo, &a.tag, platform.as_ref())
                .map_err(registry(format!("{image}:{}", a.tag)))
        })
        .transpose()?;
    let now = age::now();
    let mut out = Vec::new();
    for c in selection.candidates.iter().take(n) {
        let reference = format!("{image}:{}", c.tag);
        let digest = client
            .digest(repo, &c.tag, None)
            .map_err(registry(reference.clone()))?;
        let matches_alias = match (&alias_digest, &platform) {
            (None, _) => None,
            (Some(want), None) => Some(*want == digest),
            (Some(want), Some(p)) => match client.digest(repo, &c.tag, Some(p)) {
                Ok(d) => Some(*want == d),
                Err(RegistryError::PlatformNotFound { .. }) => Some(false),
                Err(e) => return Err(registry(reference)(e)),
            },
        };
        let signed = chain
            .verify
            .as_ref()
            .map(|g| {
                g.check(client, repo, &digest)
                    .map(|r| r.map(|v| v.signed_by).map_err(|e| e.to_string()))
                    .map_err(registry(reference.clone()))
            })
            .transpose()?;
        let age = chain.min_age.as_ref().map(|min| {
            match age::check(client, repo, &c.tag, &digest, min, now) {
                AgeVerdict::OldEnough(released) => AgeCheck::OldEnough { released },
                AgeVerdict::TooYoung(released) => AgeCheck::TooYoung { released },
                AgeVerdict::Unknown(reason) => AgeCheck::NoTrustedTime { reason },
            }
        });
        out.push(CandidateVerdict {
            tag: c.tag.clone(),
            digest,
            signed,
            age,
            matches_alias,
        });
    }
    Ok(out)
}
