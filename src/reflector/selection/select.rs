//! Choosing a tag, in two steps.
//!
//! Step 1, [`PolicySpec::filter_tags`], is pure string work: it applies the
//! exclusion list, `allow-tags`, `ignore-tags`, `filterTags` and the
//! strategy's own admission test (is it semver, is it in range, is it the
//! followed tag, is it a number) and counts what each one dropped. Step 2,
//! [`PolicySpec::choose`], ranks what survived. Only newest-build needs data
//! that a tag string does not carry (the image creation time); keeping that
//! lookup in step 2 means a registry is asked about surviving tags only,
//! which is what makes newest-build affordable on rate-limited registries.
//!
//! # Tie-breaking
//! Flux ranks filtered tags in Go map order, so equal candidates win at
//! random. We use fixed rules instead, chosen so that a filtered selection
//! behaves like Flux's *unfiltered* one (which iterates tags in descending
//! byte order) and like Argo CD where Flux has no equivalent:
//! * semver: among equal precedence (`1.0.0` / `v1.0.0` / `1.0.0+b`), the
//!   byte-wise **greatest** original tag wins (`v1.0.0`, `1.0.0+b`);
//! * numerical: among equal values (`1`, `1.0`, `01`), the byte-wise
//!   **smallest** original tag wins (Flux keeps the later of equal values,
//!   and its list is in descending order);
//! * newest-build: among equal creation times the byte-wise **greatest** tag
//!   wins (Argo CD's documented rule);
//! * two tags whose `filterTags` extraction gives the same key collapse into
//!   one candidate carrying the byte-wise **smallest** original tag (Flux's
//!   last-write-wins map over its descending list); the others are counted as
//!   `duplicate_key`.
//!
//! NaN (numerical) ranks below every number in both orders.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{HashMap, HashSet};
use std::fmt;

use semver::Version;
use serde::Serialize;

use super::fasthash::FastState;
use super::filter::TagFilter;
use super::spec::{Compiled, PolicySpec, Strategy};
use super::{alphabetical, numerical, semver::parse_tag};
use image_update_registry::time::Timestamp;

/// A listed tag, with its image creation time when the caller knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagInfo {
    /// The tag as listed by the registry.
    pub tag: String,
    /// The image config's `created` time, if known.
    pub created: Option<Timestamp>,
}

impl TagInfo {
    /// A tag with no known creation time.
    pub fn new(tag: impl Into<String>) -> Self {
        Self {
            tag: tag.into(),
            created: None,
        }
    }
}

/// How many tags an exclusion pattern dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PatternCount {
    /// The exclusion regex.
    pub pattern: String,
    /// Tags dropped by it (a tag is counted under the first pattern that
    /// matches it).
    pub count: usize,
}

/// How many tags each filter dropped. Every listing of a tag is counted
/// exactly once, under the first step that dropped it (the steps run in the
/// order described at [`PolicySpec::filter_tags`]), so
/// `listed == eligible + total()`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Drops {
    /// Repeated listings of a tag that passed every other step (only one is
    /// ranked). Registries never list a tag twice; tags files might. A
    /// repeated tag that a filter drops is counted by that filter each time;
    /// with a `filterTags` extract template, candidates are keys, so repeats
    /// count as `duplicate_key` instead.
    pub duplicate_tag: usize,
    /// Dropped by the exclusion list, per pattern.
    pub excluded: Vec<PatternCount>,
    /// Rejected by `allow-tags`.
    pub allow_tags: usize,
    /// Matched an `ignore-tags` glob.
    pub ignore_tags: usize,
    /// Not matched by the `filterTags` pattern.
    pub filter_pattern: usize,
    /// Collapsed because another listing produced the same extracted key.
    pub duplicate_key: usize,
    /// Not a candidate for the strategy: not strict semver (semver), not the
    /// followed tag (digest).
    pub not_candidate: usize,
    /// Semver, but outside the range.
    pub outside_range: usize,
    /// newest-build only: no creation time available for the tag.
    pub no_created_time: usize,
    /// newest-build only: the tag has no image for any of the policy's
    /// platforms (without platforms: no image with a real platform at all,
    /// e.g. an index of attestations only).
    pub no_platform: usize,
}

impl Drops {
    /// Total dropped by the exclusion list.
    pub fn excluded_total(&self) -> usize {
        self.excluded.iter().map(|p| p.count).sum()
    }

    /// Total dropped by every filter.
    pub fn total(&self) -> usize {
        self.duplicate_tag
            + self.excluded_total()
            + self.allow_tags
            + self.ignore_tags
            + self.filter_pattern
            + self.duplicate_key
            + self.not_candidate
            + self.outside_range
            + self.no_created_time
            + self.no_platform
    }

    /// Human-readable parts, one per non-zero counter, e.g.
    /// `3 excluded by ^.*\.sig$`, `1,150 not semver`,
    /// `2 without an image for linux/arm64`.
    pub fn describe(
        &self,
        strategy: &Strategy,
        allow: Option<&str>,
        pattern: Option<&str>,
        platforms: &[String],
    ) -> Vec<String> {
        let mut parts = Vec::new();
        let mut push = |n: usize, what: String| {
            if n > 0 {
                parts.push(format!("{} {what}", thousands(n)));
            }
        };
        push(self.duplicate_tag, "listed twice".into());
        for p in &self.excluded {
            push(p.count, format!("excluded by {}", p.pattern));
        }
        push(
            self.allow_tags,
            format!("not allowed by allow-tags {}", allow.unwrap_or("")),
        );
        push(self.ignore_tags, "ignored by ignore-tags".into());
        push(
            self.filter_pattern,
            format!("not matching filterTags pattern {}", pattern.unwrap_or("")),
        );
        push(
            self.duplicate_key,
            "collapsed onto the same extracted key".into(),
        );
        let not_candidate = match strategy {
            Strategy::SemVer { .. } => "not semver".to_owned(),
            Strategy::Digest { tag } => format!("not the followed tag {tag}"),
            _ => "not a candidate".to_owned(),
        };
        push(self.not_candidate, not_candidate);
        push(self.outside_range, "outside range".into());
        push(self.no_created_time, "without a creation time".into());
        push(
            self.no_platform,
            if platforms.is_empty() {
                "without an image for any platform".to_owned()
            } else {
                format!("without an image for {}", platforms.join(" or "))
            },
        );
        parts
    }
}

/// Formats `n` with comma thousands separators: `1204` → `1,204`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Why no tag could be chosen.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// Nothing survived; the message says how many tags each filter dropped.
    #[error("{0}")]
    NoTag(Box<NoTag>),
    /// Numerical policy: a candidate is not a number (Flux's wording).
    #[error("failed to parse invalid numeric value '{0}'")]
    InvalidNumber(String),
    /// The caller's creation-time lookup failed.
    #[error("looking up the creation time of tag '{tag}'")]
    Lookup {
        /// The tag being looked up.
        tag: String,
        /// The caller's error.
        #[source]
        source: LookupError,
    },
}

/// Details of [`SelectError::NoTag`]. Displays as, e.g.,
/// `no tag satisfies semver range ">=2.0.0": 1,204 tags listed, 3 excluded
/// by ^.*\.sig$, 1,150 not semver, 51 outside range`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoTag {
    /// The strategy.
    pub strategy: Strategy,
    /// How many tags were listed.
    pub listed: usize,
    /// What each filter dropped.
    pub drops: Drops,
    /// The `allow-tags` value, for the message.
    pub allow: Option<String>,
    /// The `filterTags` pattern, for the message.
    pub pattern: Option<String>,
    /// The policy's platforms, for the message.
    pub platforms: Vec<String>,
}

impl fmt::Display for NoTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let strategy = &self.strategy;
        match strategy {
            Strategy::SemVer { .. } => write!(f, "no tag satisfies {strategy}")?,
            _ => write!(f, "no tag qualifies for the {strategy} policy")?,
        }
        let listed = self.listed;
        write!(
            f,
            ": {} tag{} listed",
            thousands(listed),
            if listed == 1 { "" } else { "s" }
        )?;
        for part in self.drops.describe(
            strategy,
            self.allow.as_deref(),
            self.pattern.as_deref(),
            &self.platforms,
        ) {
            write!(f, ", {part}")?;
        }
        Ok(())
    }
}

/// Error type of a [`CreatedLookup`].
pub type LookupError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a [`CreatedLookup`] found out about the image behind a tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The image config's `created` time.
    At(Timestamp),
    /// The image has no usable creation time (counted as
    /// [`Drops::no_created_time`]).
    Unknown,
    /// The tag has no image for any of the policy's platforms (counted as
    /// [`Drops::no_platform`]).
    NoPlatform,
}

impl From<Option<Timestamp>> for Created {
    fn from(time: Option<Timestamp>) -> Self {
        time.map_or(Created::Unknown, Created::At)
    }
}

/// Supplies image creation times for newest-build (step 2).
///
/// Return [`Created::Unknown`] when the tag has no usable time and
/// [`Created::NoPlatform`] when it has no image for the policy's platforms
/// (Argo CD drops such tags silently; we drop and count them), and `Err` to
/// abort the selection. Implemented for closures
/// `FnMut(&str) -> Result<R, LookupError>` where `R` is [`Created`] or
/// `Option<Timestamp>`.
pub trait CreatedLookup {
    /// The creation time of the image behind `tag`.
    ///
    /// # Errors
    /// Whatever the caller's source of truth reports; it aborts selection.
    fn created(&mut self, tag: &str) -> Result<Created, LookupError>;
}

impl<F, R> CreatedLookup for F
where
    F: FnMut(&str) -> Result<R, LookupError>,
    R: Into<Created>,
{
    fn created(&mut self, tag: &str) -> Result<Created, LookupError> {
        self(tag).map(Into::into)
    }
}

/// A lookup for strategies that never ask (everything but newest-build).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCreatedTimes;

impl CreatedLookup for NoCreatedTimes {
    fn created(&mut self, _tag: &str) -> Result<Created, LookupError> {
        Ok(Created::Unknown)
    }
}

/// What the strategy ranks a candidate by.
#[derive(Debug, Clone)]
enum RankKey {
    Version(Version),
    Number(f64),
    Text,
    Created(Timestamp),
}

#[derive(Debug, Clone)]
struct Entry<'a> {
    tag: &'a str,
    key: Cow<'a, str>,
    rank: RankKey,
}

/// The result of step 1: the candidates that survived, borrowed from the
/// caller's tag list, plus the drop counts.
#[derive(Debug, Clone)]
pub struct Filtered<'a> {
    listed: usize,
    drops: Drops,
    entries: Vec<Entry<'a>>,
}

impl<'a> Filtered<'a> {
    /// How many tags were listed (before any filter).
    pub fn listed(&self) -> usize {
        self.listed
    }

    /// What each filter dropped so far.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// Number of surviving candidates.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing survived.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The surviving original tags, in input order. For newest-build these
    /// are exactly the tags step 2 will ask the lookup about, so a caller
    /// can fetch their metadata ahead of time (e.g. concurrently).
    pub fn tags(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.entries.iter().map(|e| e.tag)
    }
}

/// One ranked candidate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// The original tag.
    pub tag: String,
    /// What was ranked: the `filterTags` extraction, or the tag itself.
    pub key: String,
    /// The creation time (newest-build only).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "ser_time")]
    pub created: Option<Timestamp>,
}

fn ser_time<S: serde::Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.collect_str(t),
        None => s.serialize_none(),
    }
}

/// The outcome of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The chosen original tag.
    pub tag: String,
    /// The best candidates, best first; `candidates[0].tag == tag`. At most
    /// the `top` asked for (but always at least the winner).
    pub candidates: Vec<Candidate>,
    /// How many candidates were ranked in total.
    pub eligible: usize,
    /// How many tags were listed.
    pub listed: usize,
    /// What each filter dropped.
    pub drops: Drops,
}

impl PolicySpec {
    /// Step 1: applies every filter and the strategy's admission test.
    ///
    /// Order: exclusion list, `allow-tags`, `ignore-tags`, `filterTags`
    /// pattern, strategy admission, then de-duplication (a repeated tag,
    /// then, with an extract template, a repeated key). Argo CD's "ignore
    /// beats allow" holds because both drop. De-duplicating last means only
    /// survivors are hashed, which matters on 100,000-tag repositories.
    ///
    /// # Errors
    /// [`SelectError::InvalidNumber`] when a numerical candidate does not
    /// parse (Flux fails the whole policy in that case).
    pub fn filter_tags<'a, I>(&self, tags: I) -> Result<Filtered<'a>, SelectError>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let tags = tags.into_iter();
        let mut drops = Drops {
            excluded: self
                .config
                .exclude
                .iter()
                .map(|p| PatternCount {
                    pattern: p.clone(),
                    count: 0,
                })
                .collect(),
            ..Drops::default()
        };
        let expected = tags.size_hint().0;
        let collapse = self
            .filter
            .as_ref()
            .is_some_and(|f| !f.extract().is_empty());
        // Repeated tags: with an extract template the key map catches them
        // (equal tags give equal keys, counted as `duplicate_key`),
        // otherwise this set does.
        let mut seen: HashSet<&'a str, FastState> = HashSet::with_capacity_and_hasher(
            if collapse { 0 } else { expected },
            FastState::default(),
        );
        // With an extract template, equal keys collapse. The map owns the
        // keys (index into `entries`) until the end, so no key is cloned.
        let mut by_key: HashMap<String, usize, FastState> = HashMap::with_capacity_and_hasher(
            if collapse { expected } else { 0 },
            FastState::default(),
        );
        let mut entries: Vec<Entry<'a>> = Vec::with_capacity(expected);
        let mut listed = 0usize;
        let mut locs = self.filter.as_ref().map(TagFilter::locations);
        'tags: for tag in tags {
            listed += 1;
            for (re, count) in self.exclude.iter().zip(drops.excluded.iter_mut()) {
                if re.is_match(tag) {
                    count.count += 1;
                    continue 'tags;
                }
            }
            if self.allow.as_ref().is_some_and(|a| !a.allows(tag)) {
                drops.allow_tags += 1;
                continue;
            }
            if self.ignore.iter().any(|g| g.matches(tag)) {
                drops.ignore_tags += 1;
                continue;
            }
            let key: Cow<'a, str> = match &self.filter {
                None => Cow::Borrowed(tag),
                Some(f) if f.extract().is_empty() => {
                    if !f.is_match(tag) {
                        drops.filter_pattern += 1;
                        continue;
                    }
                    Cow::Borrowed(tag)
                }
                Some(f) => match locs.as_mut().and_then(|l| f.key_with(l, tag)) {
                    Some(k) => Cow::Owned(k),
                    None => {
                        drops.filter_pattern += 1;
                        continue;
                    }
                },
            };
            let rank = match &self.compiled {
                Compiled::SemVer(range) => match parse_tag(&key) {
                    None => {
                        drops.not_candidate += 1;
                        continue;
                    }
                    Some(v) if !range.matches(&v) => {
                        drops.outside_range += 1;
                        continue;
                    }
                    Some(v) => RankKey::Version(v),
                },
                Compiled::Numerical(_) => match numerical::parse_go_float(&key) {
                    Some(x) => RankKey::Number(x),
                    None => return Err(SelectError::InvalidNumber(key.into_owned())),
                },
                Compiled::Digest(followed) => {
                    if tag != followed {
                        drops.not_candidate += 1;
                        continue;
                    }
                    RankKey::Text
                }
                Compiled::Alphabetical(_) | Compiled::NewestBuild => RankKey::Text,
            };
            if collapse {
                match by_key.entry(key.into_owned()) {
                    MapEntry::Occupied(slot) => {
                        // A repeat of the same tag lands here too (same key)
                        // and is counted the same way, which keeps the
                        // counts independent of input order.
                        drops.duplicate_key += 1;
                        let kept = &mut entries[*slot.get()];
                        if tag < kept.tag {
                            kept.tag = tag;
                            kept.rank = rank;
                        }
                    }
                    MapEntry::Vacant(slot) => {
                        slot.insert(entries.len());
                        entries.push(Entry {
                            tag,
                            key: Cow::Borrowed(""),
                            rank,
                        });
                    }
                }
                continue;
            }
            if !seen.insert(tag) {
                drops.duplicate_tag += 1;
                continue;
            }
            entries.push(Entry { tag, key, rank });
        }
        for (key, index) in by_key {
            entries[index].key = Cow::Owned(key);
        }
        Ok(Filtered {
            listed,
            drops,
            entries,
        })
    }

    /// Step 2: ranks the survivors of step 1 and returns the winner plus the
    /// best `top` candidates.
    ///
    /// `lookup` is called once per surviving tag, and only when the strategy
    /// is newest-build; pass [`NoCreatedTimes`] otherwise.
    ///
    /// # Errors
    /// [`SelectError::NoTag`] when nothing qualifies, with a message saying
    /// why; [`SelectError::Lookup`] when the lookup fails.
    pub fn choose(
        &self,
        filtered: Filtered<'_>,
        lookup: &mut dyn CreatedLookup,
        top: usize,
    ) -> Result<Selection, SelectError> {
        let Filtered {
            listed,
            mut drops,
            mut entries,
        } = filtered;
        if matches!(self.compiled, Compiled::NewestBuild) {
            let mut kept = Vec::with_capacity(entries.len());
            for mut entry in entries {
                let created = lookup
                    .created(entry.tag)
                    .map_err(|source| SelectError::Lookup {
                        tag: entry.tag.to_owned(),
                        source,
                    })?;
                match created {
                    Created::At(t) => {
                        entry.rank = RankKey::Created(t);
                        kept.push(entry);
                    }
                    Created::Unknown => drops.no_created_time += 1,
                    Created::NoPlatform => drops.no_platform += 1,
                }
            }
            entries = kept;
        }
        if entries.is_empty() {
            return Err(SelectError::NoTag(Box::new(NoTag {
                strategy: self.config.strategy.clone(),
                listed,
                drops,
                allow: self.config.allow_tags.clone(),
                pattern: self.config.filter.as_ref().map(|f| f.pattern.clone()),
                platforms: self.config.platforms.clone(),
            })));
        }
        let eligible = entries.len();
        // Best first. Only the top `n` need ordering, so partition first:
        // O(len) instead of O(len log len) on large repositories.
        let better = |a: &Entry<'_>, b: &Entry<'_>| self.compare(b, a);
        let n = top.max(1).min(entries.len());
        if n < entries.len() {
            entries.select_nth_unstable_by(n - 1, better);
            entries.truncate(n);
        }
        entries.sort_unstable_by(better);
        let candidates: Vec<Candidate> = entries
            .into_iter()
            .map(|e| Candidate {
                tag: e.tag.to_owned(),
                key: e.key.into_owned(),
                created: match e.rank {
                    RankKey::Created(t) => Some(t),
                    _ => None,
                },
            })
            .collect();
        let tag = candidates
            .first()
            .map(|c| c.tag.clone())
            .unwrap_or_default();
        Ok(Selection {
            tag,
            candidates,
            eligible,
            listed,
            drops,
        })
    }

    /// Both steps over tags whose creation times (if any) are already known,
    /// e.g. from a tags file. Tags without a time count as
    /// `no_created_time` under newest-build. A tag listed twice is ranked
    /// once, with the last creation time given for it (Argo CD's
    /// overwrite rule).
    ///
    /// # Errors
    /// As [`PolicySpec::filter_tags`] and [`PolicySpec::choose`].
    pub fn select(&self, tags: &[TagInfo], top: usize) -> Result<Selection, SelectError> {
        let filtered = self.filter_tags(tags.iter().map(|t| t.tag.as_str()))?;
        if self.needs_created_time() {
            let times: HashMap<&str, Timestamp> = tags
                .iter()
                .filter_map(|t| Some((t.tag.as_str(), t.created?)))
                .collect();
            let mut lookup = |tag: &str| -> Result<Option<Timestamp>, LookupError> {
                Ok(times.get(tag).copied())
            };
            self.choose(filtered, &mut lookup, top)
        } else {
            self.choose(filtered, &mut NoCreatedTimes, top)
        }
    }

    /// `Greater` when `a` ranks above `b`; never `Equal` for distinct tags.
    fn compare(&self, a: &Entry<'_>, b: &Entry<'_>) -> Ordering {
        let greater_tag_wins = || a.tag.cmp(b.tag);
        match (&self.compiled, &a.rank, &b.rank) {
            (Compiled::SemVer(_), RankKey::Version(x), RankKey::Version(y)) => {
                x.cmp_precedence(y).then_with(greater_tag_wins)
            }
            (Compiled::Numerical(order), RankKey::Number(x), RankKey::Number(y)) => {
                numerical::rank(*x, *y, *order == super::Order::Asc).then_with(|| b.tag.cmp(a.tag))
            }
            (Compiled::Alphabetical(order), _, _) => {
                alphabetical::rank(&a.key, &b.key, *order).then_with(greater_tag_wins)
            }
            (_, RankKey::Created(x), RankKey::Created(y)) => x.cmp(y).then_with(greater_tag_wins),
            _ => greater_tag_wins(),
        }
    }
}

impl fmt::Display for Selection {
    /// Just the chosen tag.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.tag)
    }
}
