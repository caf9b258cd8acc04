//! Each change's provenance: where the old and the new image were built from (their source,
//! revision and version, read by the registry client, `image_update_registry::provenance`), links
//! to the source's commit and to the changes between the two (`links`), and who signed the new
//! image and when it was released (the supply-chain gate's findings). Gathered only when an
//! output asks for it ([`crate::operation::FetchSettings::provenance`]), after the changes are
//! planned, once per image however many fields name it. Never a reason to fail: what is missing
//! is a note.

pub(crate) mod links;

use std::collections::{BTreeMap, HashMap};

use image_update_registry::provenance::{Fact, ImageFacts};
use image_update_template::provenance::{ImageSource, Provenance, Signer};

use image_update_registry::{Platform, RegistryClient, Repository};

use crate::outcome::Outcome;
use crate::policies::ImageRef;
use crate::reflector::Resolved;
use crate::reflector::gate::GateOutcome;
use crate::setter::{Field, Setter};
use links::Forge;

/// A change as provenance knows it: old value, new value, setter.
pub(crate) use crate::outcome::ProvenanceKey as ChangeKey;

/// The provenance of every change of `outcome` made by a policy fetched in this run.
pub(crate) fn gather(outcome: &Outcome) -> HashMap<ChangeKey, Provenance> {
    let by_key: HashMap<String, &Resolved> = outcome
        .fetched
        .iter()
        .filter(|r| r.lookup.is_some())
        .map(|r| (r.key.to_string(), r))
        .collect();
    let mut facts: HashMap<(String, String), Result<ImageFacts, String>> = HashMap::new();
    let mut out = HashMap::new();
    for c in &outcome.changes {
        let key = (c.old_value.clone(), c.new_value.clone(), c.setter.clone());
        if out.contains_key(&key) {
            continue;
        }
        let Some(setter) = Setter::parse(&c.setter) else {
            continue;
        };
        if setter.field == Field::Name {
            continue;
        }
        let Some(resolved) = by_key.get(&format!("{}:{}", setter.namespace, setter.name)) else {
            continue;
        };
        out.insert(key, one(resolved, setter.field, &c.old_value, &mut facts));
    }
    out
}

fn one(
    resolved: &Resolved,
    field: Field,
    old_value: &str,
    facts: &mut HashMap<(String, String), Result<ImageFacts, String>>,
) -> Provenance {
    let mut p = Provenance::default();
    let Some(lookup) = &resolved.lookup else {
        return p;
    };
    let latest = &resolved.latest;
    let mut look = |reference: &str| {
        facts
            .entry((lookup.repository.to_string(), reference.to_owned()))
            .or_insert_with(|| {
                lookup
                    .client
                    .provenance(&lookup.repository, reference, lookup.platform.as_ref())
                    .map_err(|e| {
                        if e.is_not_found() {
                            "is gone from the registry (404)".to_owned()
                        } else {
                            format!("could not be read: {e}")
                        }
                    })
            })
            .clone()
    };
    // The new side.
    p.new.image = latest.to_string();
    let new_ref = if latest.digest.is_empty() {
        latest.tag.clone()
    } else {
        latest.digest.clone()
    };
    match look(&new_ref) {
        Ok(f) => fill(&mut p.new, &f),
        Err(why) => p.notes.push(format!("the new image {} {why}", p.new.image)),
    }
    // The old side, as the field held it.
    let old = match field {
        Field::Image => match ImageRef::parse(old_value).or_else(|e| {
            // `NAME@DIGEST`, without a tag.
            old_value
                .split_once('@')
                .map(|(name, digest)| ImageRef::new(name, "").with_digest(digest))
                .ok_or(e)
        }) {
            Ok(r) if r.name == latest.name => Some(r),
            Ok(r) => {
                p.notes.push(format!(
                    "the old image {old_value} is of another repository than {}: not looked up",
                    latest.name
                ));
                p.old.image = r.to_string();
                None
            }
            Err(_) => {
                p.notes.push(format!(
                    "the old value {old_value:?} names no tag or digest: its side is empty"
                ));
                None
            }
        },
        Field::Tag => Some(ImageRef::new(&latest.name, old_value)),
        Field::Digest => Some(ImageRef::new(&latest.name, "").with_digest(old_value)),
        Field::Name => None,
    };
    if let Some(old) = old {
        p.old.image = if old.tag.is_empty() {
            format!("{}@{}", old.name, old.digest)
        } else {
            old.to_string()
        };
        let reference = if old.digest.is_empty() {
            old.tag.clone()
        } else {
            old.digest.clone()
        };
        if reference.is_empty() {
            p.notes
                .push("the old value names no tag or digest: its side is empty".to_owned());
        } else {
            match look(&reference) {
                Ok(f) => fill(&mut p.old, &f),
                Err(why) => p.notes.push(format!(
                    "the old image {} {why}: its side is empty",
                    p.old.image
                )),
            }
        }
    }
    link(
        &mut p,
        &forges(&lookup.client),
        tag_of(old_value, field),
        &latest.tag,
    );
    found_by_gate(&mut p, resolved.gate.as_ref());
    p
}

/// The forges the registry settings name for source hosts (`source_forges`).
fn forges(client: &RegistryClient) -> BTreeMap<String, Forge> {
    client
        .settings()
        .source_forges
        .iter()
        .filter_map(|(host, kind)| Some((host.clone(), Forge::parse(kind)?)))
        .collect()
}

/// The signer and release time the supply-chain gate found.
fn found_by_gate(p: &mut Provenance, gate: Option<&GateOutcome>) {
    if let Some(g) = gate {
        if let Some(who) = g.signed_by.first() {
            p.signer = signer(who, &p.new.revision);
        }
        if let Some(r) = &g.released {
            p.released.clone_from(&r.at);
            p.release_source.clone_from(&r.source);
        }
    }
}

/// The provenance of one image alone (`image-update policy IMAGE --provenance`): its side is
/// `new`, the links are to its commit (nothing to compare with).
pub(crate) fn of_image(
    client: &RegistryClient,
    repository: &Repository,
    image: &ImageRef,
    platform: Option<&Platform>,
    gate: Option<&GateOutcome>,
) -> Provenance {
    let mut p = Provenance::default();
    p.new.image = image.to_string();
    let reference = if image.digest.is_empty() {
        &image.tag
    } else {
        &image.digest
    };
    match client.provenance(repository, reference, platform) {
        Ok(f) => fill(&mut p.new, &f),
        Err(e) => p
            .notes
            .push(format!("{} could not be read: {e}", p.new.image)),
    }
    link(&mut p, &forges(client), String::new(), &image.tag);
    found_by_gate(&mut p, gate);
    p
}

/// The old image's tag, for a compare link by tags.
fn tag_of(old_value: &str, field: Field) -> String {
    match field {
        Field::Image => ImageRef::parse(old_value)
            .map(|r| r.tag)
            .unwrap_or_default(),
        Field::Tag => old_value.to_owned(),
        _ => String::new(),
    }
}

fn fill(side: &mut ImageSource, f: &ImageFacts) {
    side.digest.clone_from(&f.digest);
    let from = |x: &Fact| {
        let place = match x.tier {
            image_update_registry::provenance::Tier::Config => "config label",
            image_update_registry::provenance::Tier::Descriptor => "index descriptor annotation",
            image_update_registry::provenance::Tier::Manifest => "manifest annotation",
            image_update_registry::provenance::Tier::Index => "index annotation",
        };
        format!("{place} {}", x.key)
    };
    for (fact, value, source) in [
        (&f.source, &mut side.source, &mut side.source_from),
        (&f.revision, &mut side.revision, &mut side.revision_from),
        (&f.version, &mut side.version, &mut side.version_from),
    ] {
        if let Some(x) = fact {
            value.clone_from(&x.value);
            *source = from(x);
        }
    }
}

/// The links of `p` from its sides' facts: the source's web address, the new revision's commit,
/// the compare page (revisions, else versions, else the image tags).
fn link(p: &mut Provenance, forges: &BTreeMap<String, Forge>, old_tag: String, new_tag: &str) {
    let source = if p.new.source.is_empty() {
        p.old.source.clone()
    } else {
        p.new.source.clone()
    };
    if source.is_empty() {
        p.notes.push(
            "the image records no source (org.opencontainers.image.source): no links".to_owned(),
        );
        return;
    }
    let Some(repo) = links::normalise(&source, forges) else {
        p.notes.push(format!(
            "the source {source:?} names no repository: no links"
        ));
        return;
    };
    p.source_url.clone_from(&repo.url);
    let Some(forge) = repo.forge else {
        p.notes.push(format!(
            "the forge of {} is unknown (set it in the registry settings' source_forges): no links",
            repo.host
        ));
        return;
    };
    p.forge = forge.as_str().to_owned();
    if !p.old.source.is_empty()
        && links::normalise(&p.old.source, forges).map(|r| r.url) != Some(repo.url.clone())
    {
        p.notes.push(format!(
            "the source changed from {} to {}: no compare link",
            p.old.source, p.new.source
        ));
        if links::is_commit(&p.new.revision) {
            p.commit_url = links::commit_url(forge, &repo.url, &p.new.revision);
        }
        return;
    }
    let (old_rev, new_rev) = (p.old.revision.as_str(), p.new.revision.as_str());
    if !new_rev.is_empty() && old_rev.eq_ignore_ascii_case(new_rev) && p.old.digest != p.new.digest
    {
        p.notes.push(format!(
            "the old and new images have the same revision {new_rev}: it is likely a base image's, not linked"
        ));
        return;
    }
    if links::is_commit(new_rev) {
        p.commit_url = links::commit_url(forge, &repo.url, new_rev);
    } else if !new_rev.is_empty() {
        p.notes.push(format!(
            "the revision {new_rev:?} is not a commit id: no commit link"
        ));
    }
    if links::is_commit(old_rev) && links::is_commit(new_rev) {
        p.compare_url = links::compare_url(forge, &repo.url, old_rev, new_rev, false);
        "revision".clone_into(&mut p.compare_by);
        return;
    }
    let (old, new) = if !p.old.version.is_empty() && !p.new.version.is_empty() {
        (p.old.version.clone(), p.new.version.clone())
    } else {
        (old_tag, new_tag.to_owned())
    };
    if !old.is_empty() && !new.is_empty() && old != new {
        p.compare_url = links::compare_url(forge, &repo.url, &old, &new, true);
        "tag".clone_into(&mut p.compare_by);
        p.notes.push(format!(
            "compared by tag ({old}...{new}): a revision is missing; the repository's tags may be named otherwise"
        ));
    }
}

fn signer(who: &image_update_verify::SignedBy, revision: &str) -> Signer {
    match who {
        image_update_verify::SignedBy::Key { name, fingerprint } => Signer {
            kind: "key".to_owned(),
            name: name.clone(),
            fingerprint: fingerprint.clone(),
            ..Signer::default()
        },
        image_update_verify::SignedBy::Identity {
            subject,
            issuer,
            source_repository,
            source_digest,
            ..
        } => Signer {
            kind: "identity".to_owned(),
            subject: subject.clone(),
            issuer: issuer.clone(),
            source_repository: source_repository.clone(),
            source_digest: source_digest.clone(),
            // The strongest claim: the workflow that signed ran on the commit the image names.
            source_digest_matches: !source_digest.is_empty()
                && source_digest.eq_ignore_ascii_case(revision),
            ..Signer::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(source: &str, revision: &str, version: &str, digest: &str) -> ImageSource {
        ImageSource {
            source: source.to_owned(),
            revision: revision.to_owned(),
            version: version.to_owned(),
            digest: digest.to_owned(),
            ..ImageSource::default()
        }
    }

    fn linked(old: ImageSource, new: ImageSource) -> Provenance {
        let mut p = Provenance {
            old,
            new,
            ..Provenance::default()
        };
        link(&mut p, &BTreeMap::new(), "1.4.2".to_owned(), "1.5.0");
        p
    }

    #[test]
    fn links_by_revision_then_version_then_tag() {
        let src = "https://github.com/acme/web.git";
        let p = linked(
            side(src, "3f2a1b0", "1.4.2", "sha256:a"),
            side(src, "9c1d2e3", "1.5.0", "sha256:b"),
        );
        assert_eq!(p.source_url, "https://github.com/acme/web");
        assert_eq!(p.commit_url, "https://github.com/acme/web/commit/9c1d2e3");
        assert_eq!(
            p.compare_url,
            "https://github.com/acme/web/compare/3f2a1b0...9c1d2e3"
        );
        assert_eq!((p.compare_by.as_str(), p.notes.len()), ("revision", 0));
        let p = linked(
            side(src, "", "v1.4.2", "sha256:a"),
            side(src, "9c1d2e3", "v1.5.0", "sha256:b"),
        );
        assert_eq!(
            p.compare_url,
            "https://github.com/acme/web/compare/v1.4.2...v1.5.0"
        );
        assert_eq!(p.compare_by, "tag");
        let p = linked(side("", "", "", "sha256:a"), side(src, "", "", "sha256:b"));
        assert_eq!(
            p.compare_url,
            "https://github.com/acme/web/compare/1.4.2...1.5.0"
        );
    }

    #[test]
    fn what_is_not_linked_says_why() {
        let src = "https://github.com/acme/web";
        let p = linked(
            side(src, "abcdef0", "", "sha256:a"),
            side(src, "abcdef0", "", "sha256:b"),
        );
        assert!(p.compare_url.is_empty() && p.commit_url.is_empty());
        assert!(p.notes[0].contains("base image"), "{:?}", p.notes);
        let p = linked(side("", "", "", ""), side("", "", "", ""));
        assert!(p.source_url.is_empty() && p.notes[0].contains("no source"));
        let p = linked(
            side("", "", "", ""),
            side("https://git.acme.internal/a/b", "abcdef0", "", ""),
        );
        assert_eq!(p.source_url, "https://git.acme.internal/a/b");
        assert!(p.notes[0].contains("source_forges"), "{:?}", p.notes);
        let p = linked(
            side("https://github.com/acme/old", "abcdef0", "", "sha256:a"),
            side(src, "1234567", "", "sha256:b"),
        );
        assert!(p.compare_url.is_empty());
        assert_eq!(p.commit_url, "https://github.com/acme/web/commit/1234567");
        assert!(p.notes[0].contains("source changed"));
    }

    #[test]
    fn a_workflow_signing_the_images_own_commit_is_flagged() {
        let who = |digest: &str| image_update_verify::SignedBy::Identity {
            subject: "https://github.com/acme/web/.github/workflows/release.yml@refs/tags/v1.5.0"
                .into(),
            issuer: "https://token.actions.githubusercontent.com".into(),
            log_index: 1,
            integrated_time: "2026-11-26T10:00:00Z".into(),
            source_repository: "https://github.com/acme/web".into(),
            source_digest: digest.into(),
        };
        let s = signer(&who("9C1D2E3"), "9c1d2e3");
        assert!(s.source_digest_matches);
        assert_eq!(s.source_repository, "https://github.com/acme/web");
        assert!(!signer(&who("1234567"), "9c1d2e3").source_digest_matches);
        assert!(!signer(&who(""), "").source_digest_matches);
    }
}
