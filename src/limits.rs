//! Limits on what one object may list, shared by its readers (an Argo CD Application's images,
//! an Argo CD or KubeSphere `ImageUpdater`'s images and references), and the one wording of the
//! error for going over one. A leaf: it imports nothing of the crate. docs/security.md lists them.

/// The most images one Application follows (its `image-list`, its `applicationRefs` entry's
/// `images`, a KubeSphere updater's `spec.images`), far above any real Application's few: more is
/// an error where they are listed, read before any of them, so that a repository cannot make a
/// run read, select and write back without bound.
pub(crate) const MAX_IMAGES_PER_APPLICATION: usize = 10_000;

/// The error for `count` `items` listed by `what`, more than the `limit` read per `per`.
#[must_use]
pub(crate) fn over_limit(what: &str, count: usize, items: &str, limit: usize, per: &str) -> String {
    format!(
        "{what} lists {count} {items}; at most {limit} are read per {per} (split them over several)"
    )
}
