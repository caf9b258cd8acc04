//! Digest reflection: whether the chosen tag's digest must be looked up, and
//! how `observedPreviousRef` moves (Flux ImagePolicy
//! `spec.digestReflectionPolicy`, `status.latestRef`,
//! `status.observedPreviousRef`).
//!
//! This is a pure decision so the registry client is called only when the
//! policy requires it: `IfNotPresent` exists precisely to avoid a manifest
//! request on every run.

use super::spec::DigestReflection;
pub(crate) use crate::policies::ImageRef;

/// What to do about the digest of the newly chosen image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DigestAction {
    /// Record no digest (`Never`); an existing one is removed.
    None,
    /// Look the digest up in the registry now.
    Fetch,
    /// Keep the digest already recorded for this same name and tag.
    Keep(String),
}

/// Decides what to do about the digest of `name:tag`, given the previous
/// `latestRef`.
///
/// * `Never`: no digest, ever (switching to it drops a recorded digest).
/// * `IfNotPresent`: fetch when there is no previous ref, when its name or
///   tag differs, or when it has no digest; otherwise keep its digest even if
///   the registry has moved on.
/// * `Always`: fetch every time.
pub(crate) fn digest_action(
    policy: DigestReflection,
    previous: Option<&ImageRef>,
    name: &str,
    tag: &str,
) -> DigestAction {
    match policy {
        DigestReflection::Never => DigestAction::None,
        DigestReflection::Always => DigestAction::Fetch,
        DigestReflection::IfNotPresent => match previous {
            Some(prev) if prev.name == name && prev.tag == tag && !prev.digest.is_empty() => {
                DigestAction::Keep(prev.digest.clone())
            }
            _ => DigestAction::Fetch,
        },
    }
}

/// The new `observedPreviousRef`: when `latestRef` changes at all (name,
/// tag or digest), it becomes the old `latestRef`, which may be `None`;
/// otherwise it stays as it was.
pub(crate) fn next_observed_previous(
    old_latest: Option<&ImageRef>,
    new_latest: &ImageRef,
    old_observed_previous: Option<&ImageRef>,
) -> Option<ImageRef> {
    if old_latest == Some(new_latest) {
        old_observed_previous.cloned()
    } else {
        old_latest.cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::selection::{PolicyConfig, PolicySpec, Strategy, TagInfo};
    use DigestReflection::{Always, IfNotPresent, Never};

    const IMAGE: &str = "registry.example/team/app";

    /// One reconcile: choose a tag with `range`, then apply the digest
    /// decision against a registry whose digests are `registry_digest(tag)`.
    fn reconcile(
        range: &str,
        policy: DigestReflection,
        registry_digest: &dyn Fn(&str) -> String,
        latest: Option<&ImageRef>,
        observed: Option<&ImageRef>,
    ) -> (ImageRef, Option<ImageRef>) {
        let tags: Vec<TagInfo> = ["v1.0.0", "v1.1.0", "v1.1.1", "v2.0.0"]
            .map(TagInfo::new)
            .into();
        let spec = PolicySpec::new(PolicyConfig::new(Strategy::SemVer {
            range: range.into(),
        }))
        .unwrap();
        let tag = spec.select(&tags, 1).unwrap().tag;
        let digest = match digest_action(policy, latest, IMAGE, &tag) {
            DigestAction::None => String::new(),
            DigestAction::Fetch => registry_digest(&tag),
            DigestAction::Keep(d) => d,
        };
        let new = ImageRef::new(IMAGE, tag).with_digest(digest);
        let prev = next_observed_previous(latest, &new, observed);
        (new, prev)
    }

    /// Flux `TestImagePolicyReconciler_digestReflection`: the images are
    /// re-pushed between the two passes, so the registry digest of every
    /// tag changes from `D1:<tag>` to `D2:<tag>`.
    #[test]
    fn flux_digest_reflection_matrix() {
        let pass1 = |tag: &str| format!("D1:{tag}");
        let pass2 = |tag: &str| format!("D2:{tag}");
        let r1 = "1.1.x";
        // (name, policy 1, range 2, policy 2, digest after 1, digest after 2,
        //  observedPreviousRef {tag, digest} after 2); pass 1 uses range `1.1.x`.
        type Row<'a> = (
            &'a str,
            DigestReflection,
            &'a str,
            DigestReflection,
            &'a str,
            &'a str,
            Option<(&'a str, &'a str)>,
        );
        let rows: &[Row<'_>] = &[
            (
                "unset→unset",
                DigestReflection::default(),
                r1,
                Never,
                "",
                "",
                None,
            ),
            ("Never→Never", Never, r1, Never, "", "", None),
            (
                "Always→Always",
                Always,
                r1,
                Always,
                "D1:v1.1.1",
                "D2:v1.1.1",
                Some(("v1.1.1", "D1:v1.1.1")),
            ),
            (
                "IfNotPresent, range→v2.x",
                IfNotPresent,
                "v2.x",
                IfNotPresent,
                "D1:v1.1.1",
                "D2:v2.0.0",
                Some(("v1.1.1", "D1:v1.1.1")),
            ),
            (
                "IfNotPresent→IfNotPresent",
                IfNotPresent,
                r1,
                IfNotPresent,
                "D1:v1.1.1",
                "D1:v1.1.1",
                None,
            ),
            (
                "Never→IfNotPresent",
                Never,
                r1,
                IfNotPresent,
                "",
                "D2:v1.1.1",
                Some(("v1.1.1", "")),
            ),
            (
                "Always→Never",
                Always,
                r1,
                Never,
                "D1:v1.1.1",
                "",
                Some(("v1.1.1", "D1:v1.1.1")),
            ),
            (
                "IfNotPresent→Never",
                IfNotPresent,
                r1,
                Never,
                "D1:v1.1.1",
                "",
                Some(("v1.1.1", "D1:v1.1.1")),
            ),
            (
                "IfNotPresent→Always",
                IfNotPresent,
                r1,
                Always,
                "D1:v1.1.1",
                "D2:v1.1.1",
                Some(("v1.1.1", "D1:v1.1.1")),
            ),
            (
                "Always→IfNotPresent",
                Always,
                r1,
                IfNotPresent,
                "D1:v1.1.1",
                "D1:v1.1.1",
                None,
            ),
            (
                "IfNotPresent, range→=v1.1.1",
                IfNotPresent,
                "=v1.1.1",
                IfNotPresent,
                "D1:v1.1.1",
                "D1:v1.1.1",
                None,
            ),
        ];
        assert_eq!(rows.len(), 11);
        for &(name, p1, range2, p2, want1, want2, want_prev) in rows {
            let (latest1, prev1) = reconcile(r1, p1, &pass1, None, None);
            assert_eq!(latest1.digest, want1, "{name}: digest after pass 1");
            assert_eq!(
                prev1, None,
                "{name}: a first reconcile leaves observedPreviousRef nil"
            );
            let (latest2, prev2) = reconcile(range2, p2, &pass2, Some(&latest1), prev1.as_ref());
            assert_eq!(latest2.digest, want2, "{name}: digest after pass 2");
            let want_prev =
                want_prev.map(|(tag, digest)| ImageRef::new(IMAGE, tag).with_digest(digest));
            assert_eq!(prev2, want_prev, "{name}: observedPreviousRef after pass 2");
        }
    }

    #[test]
    fn if_not_present_refetches_when_name_changes() {
        let prev = ImageRef::new("old.example/app", "v1").with_digest("sha256:aa");
        assert_eq!(
            digest_action(IfNotPresent, Some(&prev), "new.example/app", "v1"),
            DigestAction::Fetch
        );
        assert_eq!(
            digest_action(IfNotPresent, Some(&prev), "old.example/app", "v1"),
            DigestAction::Keep("sha256:aa".into())
        );
        assert_eq!(
            digest_action(IfNotPresent, None, "old.example/app", "v1"),
            DigestAction::Fetch
        );
        assert_eq!(
            digest_action(Never, Some(&prev), "old.example/app", "v1"),
            DigestAction::None
        );
    }

    #[test]
    fn observed_previous_is_kept_while_latest_is_unchanged() {
        let a = ImageRef::new(IMAGE, "v1");
        let b = ImageRef::new(IMAGE, "v2");
        let c = ImageRef::new(IMAGE, "v2").with_digest("sha256:cc");
        assert_eq!(next_observed_previous(Some(&a), &b, None), Some(a.clone()));
        assert_eq!(
            next_observed_previous(Some(&b), &b, Some(&a)),
            Some(a.clone())
        );
        assert_eq!(
            next_observed_previous(Some(&b), &c, Some(&a)),
            Some(b.clone()),
            "digest change counts"
        );
        assert_eq!(next_observed_previous(None, &a, None), None);
    }
}
