//! Every candidate's verdict by the supply-chain gate, for the `policy`
//! command: signed (by whom) or unsigned (why), old enough or too young (or
//! without a trusted time), matching the alias or not; and their text and
//! JSON renderings. Where [`super::gate::pass`] stops at the first
//! candidate that passes, [`evaluate`] checks each of the best `n`.
//!
//! # JSON
//!
//! `policy --output json` gains, when a requirement applies, a
//! `supply_chain` object: `requires` (`signers`: each accepted signer as
//! text; `require`: `any` or `all`; `min_age` and `age_source`; `alias`),
//! `chosen` (the tag written, or `null` when none passes, with `error`
//! saying why) and `candidates`, best first, each `{"tag", "digest",
//! "verdict", "signed"?, "signed_by"?, "unsigned_reason"?, "age"?,
//! "matches_alias"?}`. `verdict` is the first requirement the candidate
//! fails (`unsigned`, `too-young`, `no-trusted-time`, `not-alias`) or
//! `passes`; a key is present only when its requirement applies.

use std::fmt::Write as _;

use image_update_registry::settings::{AgeSource, Require};
use image_update_registry::{Error as RegistryError, Platform, RegistryClient, Repository};
use image_update_verify::SignedBy;
use image_update_verify::age::{self, AgeVerdict, ReleaseTime};
use serde::Serialize;

use super::gate::{GateError, SupplyChain, signers};
use super::selection::Selection;
use crate::escape::{Shown, escape};

/// The gate's verdict on one candidate: what [`super::gate::pass`] would
/// say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CandidateVerdict {
    pub tag: String,
    pub digest: String,
    /// `None`: no signers required.
    pub signed: Option<Result<Vec<SignedBy>, String>>,
    /// `None`: no minimum age.
    pub age: Option<AgeCheck>,
    /// `None`: no alias followed.
    pub matches_alias: Option<bool>,
}

/// The age part of a [`CandidateVerdict`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub(crate) enum AgeCheck {
    OldEnough { released: ReleaseTime },
    TooYoung { released: ReleaseTime },
    NoTrustedTime { reason: String },
}

impl CandidateVerdict {
    /// The first requirement the candidate fails, or `passes`.
    #[must_use]
    pub(crate) fn verdict(&self) -> &'static str {
        match (&self.signed, &self.age, self.matches_alias) {
            (Some(Err(_)), _, _) => "unsigned",
            (_, Some(AgeCheck::TooYoung { .. }), _) => "too-young",
            (_, Some(AgeCheck::NoTrustedTime { .. }), _) => "no-trusted-time",
            (_, _, Some(false)) => "not-alias",
            _ => "passes",
        }
    }
}

/// Every requirement of `chain` checked on each of the first `n` candidates
/// of `selection` (best first), without stopping at the first that passes.
///
/// # Errors
/// A registry failure, or an invalid alias platform.
pub(crate) fn evaluate(
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
        let signed = if chain.verify.is_empty() {
            None
        } else {
            Some(
                signers(client, repo, &digest, &chain.verify)
                    .map_err(registry(reference.clone()))?,
            )
        };
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

/// What a chain requires, for the display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Requires {
    /// Each accepted signer, as text (`key cosign.pub (sha256:…)`,
    /// `identity /…/ issued by …`); one line per gate, all required.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub signers: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub require: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_age: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
}

impl Requires {
    /// What `chain` requires.
    #[must_use]
    pub(crate) fn of(chain: &SupplyChain) -> Self {
        let mut signers = Vec::new();
        let mut require = None;
        for gate in &chain.verify {
            let policy = gate.policy();
            signers.extend(policy.signers().iter().map(ToString::to_string));
            if policy.require() == Require::All {
                require = Some("all");
            }
        }
        if !signers.is_empty() && require.is_none() {
            require = Some("any");
        }
        Self {
            signers,
            require,
            min_age: chain.min_age.as_ref().map(|m| age::human(m.min)),
            age_source: chain.min_age.as_ref().map(|m| match m.source {
                AgeSource::Registry => "registry",
                AgeSource::Builder => "builder",
            }),
            alias: chain.alias.as_ref().map(|a| match &a.platform {
                Some(p) => format!("{} ({p})", a.tag),
                None => a.tag.clone(),
            }),
        }
    }
}

#[derive(Serialize)]
struct JsonCandidate<'a> {
    tag: &'a str,
    digest: &'a str,
    verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    signed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signed_by: Option<&'a [SignedBy]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unsigned_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    age: Option<&'a AgeCheck>,
    #[serde(skip_serializing_if = "Option::is_none")]
    matches_alias: Option<bool>,
}

/// The `supply_chain` object of `policy --output json` (see the module
/// docs).
#[derive(Serialize)]
pub(crate) struct JsonVerdicts<'a> {
    requires: Requires,
    chosen: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    candidates: Vec<JsonCandidate<'a>>,
}

impl<'a> JsonVerdicts<'a> {
    /// The verdicts of `chain` on `verdicts`; `chosen` is the gate's
    /// choice, or why there is none.
    #[must_use]
    pub(crate) fn new(
        chain: &SupplyChain,
        verdicts: &'a [CandidateVerdict],
        chosen: Result<&'a str, String>,
    ) -> Self {
        let (chosen, error) = match chosen {
            Ok(tag) => (Some(tag), None),
            Err(e) => (None, Some(e)),
        };
        Self {
            requires: Requires::of(chain),
            chosen,
            error,
            candidates: verdicts
                .iter()
                .map(|v| JsonCandidate {
                    tag: &v.tag,
                    digest: &v.digest,
                    verdict: v.verdict(),
                    signed: v.signed.as_ref().map(Result::is_ok),
                    signed_by: v.signed.as_ref().and_then(|s| s.as_deref().ok()),
                    unsigned_reason: v
                        .signed
                        .as_ref()
                        .and_then(|s| s.as_ref().err())
                        .map(String::as_str),
                    age: v.age.as_ref(),
                    matches_alias: v.matches_alias,
                })
                .collect(),
        }
    }
}

/// The text block of `policy` (after the selection's report):
///
/// ```text
/// supply chain:
///   signers (any): key cosign.pub (sha256:…)
///   minimum age: 3d 0h (registry time)
///   alias: latest
/// verdicts (best first):
///   1. 1.5.0  unsigned: no signature found
///   2. 1.4.2  signed by key cosign.pub (sha256:…); too young: released 2h 3m ago (…)
///   3. 1.4.1  signed by key cosign.pub (sha256:…); old enough: released … (…); matches latest  <- chosen
/// ```
///
/// `chosen` is the gate's choice, or why there is none. Values (tags,
/// identities, reasons) are escaped ([`crate::escape`]).
#[must_use]
pub(crate) fn render_text(
    chain: &SupplyChain,
    verdicts: &[CandidateVerdict],
    chosen: Result<&str, String>,
) -> String {
    let requires = Requires::of(chain);
    let mut out = String::from("supply chain:\n");
    if !requires.signers.is_empty() {
        let _ = writeln!(
            out,
            "  signers ({}): {}",
            requires.require.unwrap_or("any"),
            Shown(&requires.signers.join(", "))
        );
    }
    if let (Some(min), Some(source)) = (&requires.min_age, requires.age_source) {
        let _ = writeln!(out, "  minimum age: {min} ({source} time)");
    }
    if let Some(alias) = &requires.alias {
        let _ = writeln!(out, "  alias: {}", Shown(alias));
    }
    out.push_str("verdicts (best first):\n");
    let width = verdicts.len().to_string().len();
    let tag_width = verdicts.iter().map(|v| v.tag.len()).max().unwrap_or(0);
    let now = age::now();
    for (i, v) in verdicts.iter().enumerate() {
        let mut parts = Vec::new();
        match &v.signed {
            Some(Ok(who)) => parts.push(format!(
                "signed by {}",
                who.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(" and ")
            )),
            Some(Err(why)) => parts.push(format!("unsigned: {why}")),
            None => {}
        }
        match &v.age {
            Some(AgeCheck::OldEnough { released }) => {
                parts.push(format!(
                    "old enough: released {}",
                    released_text(released, now)
                ));
            }
            Some(AgeCheck::TooYoung { released }) => {
                parts.push(format!(
                    "too young: released {}",
                    released_text(released, now)
                ));
            }
            Some(AgeCheck::NoTrustedTime { reason }) => {
                parts.push(format!("no trusted time: {reason}"));
            }
            None => {}
        }
        if let (Some(matches), Some(alias)) = (v.matches_alias, &requires.alias) {
            parts.push(if matches {
                format!("matches {alias}")
            } else {
                format!("not {alias}")
            });
        }
        let _ = write!(
            out,
            "  {:>width$}. {:<tag_width$}  {}",
            i + 1,
            escape(&v.tag),
            Shown(&parts.join("; "))
        );
        if chosen.as_deref() == Ok(v.tag.as_str()) {
            out.push_str("  <- chosen");
        }
        out.push('\n');
    }
    if let Err(why) = chosen {
        let _ = writeln!(out, "chosen: none: {}", Shown(&why));
    }
    out
}

/// `2h 3m ago (2026-01-01T00:00:00Z, Docker Hub tag_last_pushed)`.
fn released_text(r: &ReleaseTime, now: image_update_registry::Timestamp) -> String {
    let ago = u64::try_from(now.unix_seconds() - r.timestamp.unix_seconds()).unwrap_or(0);
    format!(
        "{} ago ({}, {})",
        age::human(std::time::Duration::from_secs(ago)),
        r.at,
        r.source
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use image_update_registry::Timestamp;

    fn released(at: i64) -> ReleaseTime {
        ReleaseTime {
            at: Timestamp::from_unix(at, 0).to_string(),
            source: "registry push".into(),
            builder_controlled: false,
            timestamp: Timestamp::from_unix(at, 0),
        }
    }

    fn verdicts() -> Vec<CandidateVerdict> {
        let key = SignedBy::Key {
            name: "cosign.pub".into(),
            fingerprint: "sha256:ab".into(),
        };
        let now = age::now().unix_seconds();
        vec![
            CandidateVerdict {
                tag: "1.5.0".into(),
                digest: "sha256:5".into(),
                signed: Some(Err("no signature found".into())),
                age: Some(AgeCheck::OldEnough {
                    released: released(now - 10 * 86_400),
                }),
                matches_alias: Some(false),
            },
            CandidateVerdict {
                tag: "1.4.2".into(),
                digest: "sha256:4".into(),
                signed: Some(Ok(vec![key.clone()])),
                age: Some(AgeCheck::TooYoung {
                    released: released(now - 7200),
                }),
                matches_alias: Some(false),
            },
            CandidateVerdict {
                tag: "1.4.1".into(),
                digest: "sha256:3".into(),
                signed: Some(Ok(vec![key])),
                age: Some(AgeCheck::OldEnough {
                    released: released(now - 5 * 86_400),
                }),
                matches_alias: Some(true),
            },
        ]
    }

    #[test]
    fn the_first_failed_requirement_is_the_verdict() {
        let v = verdicts();
        assert_eq!(
            v.iter().map(CandidateVerdict::verdict).collect::<Vec<_>>(),
            ["unsigned", "too-young", "passes"]
        );
        let mut other = v[2].clone();
        other.matches_alias = Some(false);
        assert_eq!(other.verdict(), "not-alias");
        other.age = Some(AgeCheck::NoTrustedTime {
            reason: "no push-time API".into(),
        });
        assert_eq!(other.verdict(), "no-trusted-time");
    }

    #[test]
    fn text_and_json_show_each_candidate() {
        let chain = SupplyChain {
            min_age: Some(age::MinAge {
                min: std::time::Duration::from_secs(3 * 86_400),
                source: AgeSource::Registry,
            }),
            alias: Some(crate::reflector::selection::AliasConfig {
                tag: "latest".into(),
                platform: None,
                max_requests: 50,
            }),
            ..SupplyChain::default()
        };
        let v = verdicts();
        let text = render_text(&chain, &v, Ok("1.4.1"));
        assert!(
            text.contains("  minimum age: 3d 0h (registry time)\n"),
            "{text}"
        );
        assert!(text.contains("  alias: latest\n"), "{text}");
        assert!(
            text.contains(
                "  1. 1.5.0  unsigned: no signature found; old enough: released 10d 0h ago ("
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "  2. 1.4.2  signed by key cosign.pub (sha256:ab); too young: released 2h 0m ago"
            ),
            "{text}"
        );
        assert!(text.contains("; matches latest  <- chosen\n"), "{text}");
        let none = render_text(&chain, &v, Err("no candidate passed".into()));
        assert!(
            none.ends_with("chosen: none: no candidate passed\n"),
            "{none}"
        );

        let json = serde_json::to_value(JsonVerdicts::new(&chain, &v, Ok("1.4.1"))).unwrap();
        assert_eq!(json["chosen"], "1.4.1");
        assert_eq!(json["requires"]["min_age"], "3d 0h");
        assert_eq!(json["candidates"][0]["verdict"], "unsigned");
        assert_eq!(json["candidates"][0]["signed"], false);
        assert_eq!(
            json["candidates"][0]["unsigned_reason"],
            "no signature found"
        );
        assert_eq!(json["candidates"][1]["age"]["verdict"], "too-young");
        assert_eq!(json["candidates"][1]["signed_by"][0]["kind"], "key");
        assert_eq!(json["candidates"][2]["matches_alias"], true);
        assert!(json.get("error").is_none());
    }
}
