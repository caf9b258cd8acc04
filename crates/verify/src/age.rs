//! Minimum release age, fail closed: an image is old enough only when a
//! time the user trusts says so.
//!
//! * [`AgeSource::Registry`] (default): the registry vendor's push time
//!   (`image_update_registry::pushtime`: Docker Hub, GitHub Container
//!   Registry, Quay, Harbor, GitLab). A registry without such an API, or an
//!   API that fails or does not know the digest, gives no time.
//! * [`AgeSource::Builder`] (opt-in): the manifest's
//!   `org.opencontainers.image.created` annotation, else the image config's
//!   `created`. Whoever builds the image writes these, so they are labelled
//!   builder-controlled everywhere they are shown; the Unix epoch (the value
//!   of reproducible builds) and times in the future are refused.
//!
//! No trustworthy time means the candidate is skipped, never assumed old.

use std::time::Duration;

use image_update_registry::{RegistryClient, Repository, Timestamp};
use serde_json::Value;

pub use image_update_registry::settings::AgeSource;

/// The manifest annotation builders set to the build time.
pub const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";
/// How far in the future a time may be (clock skew) before it is refused.
pub const MAX_SKEW: Duration = Duration::from_secs(300);

/// A policy's minimum release age.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MinAge {
    pub min: Duration,
    pub source: AgeSource,
}

/// A time an image was released at, and what said so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ReleaseTime {
    /// RFC 3339.
    pub at: String,
    /// `Docker Hub tag_last_pushed`, `builder-controlled
    /// org.opencontainers.image.created`…
    pub source: String,
    /// Set by whoever built the image, not by the registry.
    #[serde(rename = "builderControlled")]
    pub builder_controlled: bool,
    #[serde(skip)]
    pub timestamp: Timestamp,
}

/// The age check of one candidate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgeVerdict {
    OldEnough(ReleaseTime),
    /// Released less than the minimum age ago.
    TooYoung(ReleaseTime),
    /// No trustworthy time: why.
    Unknown(String),
}

/// `3d 4h`, `5h 12m`, `42m`, `17s`.
pub fn human(d: Duration) -> String {
    let s = d.as_secs();
    let (days, hours, mins) = (s / 86_400, s / 3600 % 24, s / 60 % 60);
    if days > 0 {
        format!("{days}d {hours}h")
    } else if hours > 0 {
        format!("{hours}h {mins}m")
    } else if mins > 0 {
        format!("{mins}m")
    } else {
        format!("{s}s")
    }
}

/// Checks the age of the manifest `digest` that `tag` points at, at `now`.
pub fn check(
    client: &RegistryClient,
    repo: &Repository,
    tag: &str,
    digest: &str,
    min: &MinAge,
    now: Timestamp,
) -> AgeVerdict {
    let time = match min.source {
        AgeSource::Registry => match client.push_time(repo, tag, digest) {
            Ok(Some(t)) => ReleaseTime {
                at: t.at.to_string(),
                source: t.source,
                builder_controlled: false,
                timestamp: t.at,
            },
            Ok(None) => {
                return AgeVerdict::Unknown(
                    match image_update_registry::pushtime::api_for(client, repo) {
                        Some(api) => {
                            format!("{} does not report a push time for {digest}", api.name())
                        }
                        None => format!(
                            "{} has no push-time API (set `push_time` for it, or `age_source: builder` to trust the builder's time)",
                            repo.registry()
                        ),
                    },
                );
            }
            Err(e) => return AgeVerdict::Unknown(format!("the push-time API failed: {e}")),
        },
        AgeSource::Builder => match builder_time(client, repo, digest) {
            Ok(Some(t)) => t,
            Ok(None) => {
                return AgeVerdict::Unknown(
                    "the image has no builder-set creation time".to_owned(),
                );
            }
            Err(e) => return AgeVerdict::Unknown(e),
        },
    };
    let t = time.timestamp;
    let skew = i64::try_from(MAX_SKEW.as_secs()).unwrap_or(i64::MAX);
    if t.unix_seconds() > now.unix_seconds().saturating_add(skew) {
        return AgeVerdict::Unknown(format!("{} {} is in the future", time.source, time.at));
    }
    if time.builder_controlled && t.unix_seconds() <= 0 {
        return AgeVerdict::Unknown(format!(
            "{} is {} (a reproducible-build placeholder, not a release time)",
            time.source, time.at
        ));
    }
    let age = now.unix_seconds().saturating_sub(t.unix_seconds()).max(0);
    let min_secs = i64::try_from(min.min.as_secs()).unwrap_or(i64::MAX);
    if age >= min_secs {
        AgeVerdict::OldEnough(time)
    } else {
        AgeVerdict::TooYoung(time)
    }
}

/// The builder's creation time of `digest`: the annotation, else the
/// config's `created` (for an index: of the `linux/amd64` image, else the
/// first real platform).
///
/// # Errors
/// A registry failure or an unreadable time, as a message.
pub fn builder_time(
    client: &RegistryClient,
    repo: &Repository,
    digest: &str,
) -> Result<Option<ReleaseTime>, String> {
    let m = client
        .manifest(repo, digest)
        .map_err(|e| format!("reading the manifest: {e}"))?;
    let doc: Value =
        serde_json::from_slice(&m.bytes).map_err(|_| "the manifest is not JSON".to_owned())?;
    if let Some(text) = doc
        .pointer(&format!(
            "/annotations/{}",
            CREATED_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str)
    {
        let at = Timestamp::parse_rfc3339(text.trim()).map_err(|e| e.to_string())?;
        return Ok(Some(ReleaseTime {
            at: at.to_string(),
            source: format!("builder-controlled {CREATED_ANNOTATION} annotation"),
            builder_controlled: true,
            timestamp: at,
        }));
    }
    match client.created(repo, digest, None) {
        Ok(Some(at)) => Ok(Some(ReleaseTime {
            at: at.to_string(),
            source: "builder-controlled image config created".to_owned(),
            builder_controlled: true,
            timestamp: at,
        })),
        Ok(None) => Ok(None),
        Err(e) => Err(format!("reading the image config: {e}")),
    }
}

/// Now.
pub fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp::from_unix(
        i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        d.subsec_nanos(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human(Duration::from_secs(3 * 86_400 + 4 * 3600)), "3d 4h");
        assert_eq!(human(Duration::from_secs(5 * 3600 + 12 * 60)), "5h 12m");
        assert_eq!(human(Duration::from_secs(42 * 60)), "42m");
        assert_eq!(human(Duration::from_secs(17)), "17s");
    }
}
