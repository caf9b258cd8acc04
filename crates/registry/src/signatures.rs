//! Finding an image's signatures the ways cosign stores them, one discovery
//! step at a time (the caller stops at the first step whose signatures
//! verify):
//!
//! 1. [`Step::Referrers`]: the OCI 1.1 referrers API,
//!    `GET /v2/<name>/referrers/<digest>`, keeping Sigstore bundles and
//!    cosign signature artifacts (registries without the API answer 404:
//!    [`Discovery::Unsupported`]);
//! 2. [`Step::ReferrersTag`]: the referrers tag schema, an index under the
//!    tag `sha256-<hex>` (what cosign, through go-containerregistry, writes
//!    on registries without the API);
//! 3. [`Step::SigTag`]: the legacy tag `sha256-<hex>.sig`, one manifest
//!    whose layers are simple-signing payloads.
//!
//! A referrer manifest or a signature blob is read without a request when
//! its descriptor embeds it (the OCI descriptor's `data`, checked against
//! the digest and size) or when an earlier run cached it by digest (with a
//! cache directory: `<cache_dir>/sha256/`, content-addressed, checked on
//! every read); so a bundle found through the referrers API costs three
//! requests the first time (the list, the referrer manifest, the bundle:
//! each document is named only by the one before it) and one (the list)
//! afterwards.
//!
//! Every request goes through the client (credentials, retries, deadline,
//! redaction). Counts and sizes are bounded by [`SignatureLimits`]: a
//! registry cannot make the client read more than
//! `max_manifests × max_layers` blobs of `max_blob` bytes per step.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

use super::{Error, MAX_DOCUMENT, RegistryClient, Repository, Result, context};

/// Artifact type of a Sigstore bundle v0.3 referrer.
pub const BUNDLE_ARTIFACT: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// Artifact type of a cosign simple-signing manifest pushed as a referrer.
pub const COSIGN_SIG_ARTIFACT: &str = "application/vnd.dev.cosign.artifact.sig.v1+json";
/// Layer media type of a simple-signing payload.
pub const SIMPLE_SIGNING_LAYER: &str = "application/vnd.dev.cosign.simplesigning.v1+json";

/// One discovery step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    Referrers,
    ReferrersTag,
    SigTag,
}

impl Step {
    /// Every step, in cosign's order.
    pub const ALL: [Step; 3] = [Step::Referrers, Step::ReferrersTag, Step::SigTag];
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Referrers => "referrers API",
            Step::ReferrersTag => "referrers tag",
            Step::SigTag => "signature tag",
        })
    }
}

/// Bounds of one discovery step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureLimits {
    /// Signature manifests read (referrers, index entries).
    pub max_manifests: usize,
    /// Layers read per manifest.
    pub max_layers: usize,
    /// Largest payload or bundle blob.
    pub max_blob: u64,
    /// Referrers pages followed.
    pub max_pages: usize,
    /// Bytes of blobs read in one step, all manifests together.
    pub max_total: u64,
}

impl Default for SignatureLimits {
    fn default() -> Self {
        Self {
            max_manifests: 16,
            max_layers: 16,
            max_blob: 1024 * 1024,
            max_pages: 4,
            max_total: 16 * 1024 * 1024,
        }
    }
}

/// One signature layer and its blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureBlob {
    /// Where it was found: `referrer sha256:…`, `tag sha256-….sig`, with
    /// the layer number when the manifest has several.
    pub origin: String,
    pub media_type: String,
    pub annotations: BTreeMap<String, String>,
    pub data: Vec<u8>,
}

/// Signature material passed over for its size: its descriptor declares
/// more bytes than the limit, so it was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Oversized {
    /// Where it was listed, as [`SignatureBlob::origin`].
    pub origin: String,
    /// `signature layer` (a payload or a bundle) or `referrer manifest`.
    pub what: &'static str,
    /// The size its descriptor declares.
    pub size: u64,
    /// The limit it is over.
    pub limit: u64,
}

impl fmt::Display for Oversized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: the {} declares {} bytes, over the {} limit on signature material, so it was not read",
            self.origin,
            self.what,
            self.size,
            bytes(self.limit)
        )
    }
}

/// A size as written in limits: `1 MiB`, `64 KiB`, else bytes.
fn bytes(n: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= 1024 && n.is_multiple_of(1024) {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// What one step found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Discovery {
    /// Signature layers (possibly none that verify), and the signature
    /// material passed over for its size (one of the two is not empty).
    Found {
        blobs: Vec<SignatureBlob>,
        oversized: Vec<Oversized>,
    },
    /// Nothing at this step.
    Nothing,
    /// The registry has no referrers API (404 on the endpoint).
    Unsupported,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Desc {
    #[serde(default)]
    media_type: String,
    digest: String,
    #[serde(default)]
    size: u64,
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    /// The content itself, base64 (OCI image-spec 1.1 descriptors may embed
    /// it); used only when it has the descriptor's digest and size.
    #[serde(default)]
    data: Option<String>,
}

impl Desc {
    /// The embedded content, when present and true to the descriptor.
    fn embedded(&self) -> Option<Vec<u8>> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(self.data.as_deref()?)
            .ok()?;
        (bytes.len() as u64 == self.size && super::sha256_digest(&bytes) == self.digest)
            .then_some(bytes)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Doc {
    #[serde(default)]
    artifact_type: Option<String>,
    #[serde(default)]
    config: Option<Desc>,
    #[serde(default)]
    layers: Vec<Desc>,
    #[serde(default)]
    manifests: Vec<Desc>,
}

/// A step's result from what it read and what it passed over.
fn found(blobs: Vec<SignatureBlob>, oversized: Vec<Oversized>) -> Discovery {
    if blobs.is_empty() && oversized.is_empty() {
        Discovery::Nothing
    } else {
        Discovery::Found { blobs, oversized }
    }
}

/// Whether a referrer of this artifact type can hold a signature.
fn signature_artifact(artifact_type: Option<&str>) -> bool {
    artifact_type.is_some_and(|t| {
        t == COSIGN_SIG_ARTIFACT || t.starts_with("application/vnd.dev.sigstore.bundle")
    })
}

/// Whether a layer can hold signature material.
fn signature_layer(media_type: &str) -> bool {
    let m = media_type.split(';').next().unwrap_or_default().trim();
    m == SIMPLE_SIGNING_LAYER || m.starts_with("application/vnd.dev.sigstore.bundle")
}

/// `sha256:abc…` as the tag cosign derives from it: `sha256-abc…`.
pub fn digest_tag(digest: &str) -> Option<String> {
    let (alg, hex) = digest.split_once(':')?;
    (!alg.is_empty()
        && !hex.is_empty()
        && alg.bytes().all(|b| b.is_ascii_alphanumeric())
        && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    .then(|| format!("{alg}-{hex}"))
}

impl RegistryClient {
    /// Runs one discovery step for the manifest `digest` of `repo`.
    ///
    /// # Errors
    /// Registry failures other than "not there" (which is
    /// [`Discovery::Nothing`] or [`Discovery::Unsupported`]), malformed
    /// documents, and limits exceeded.
    pub fn signatures(
        &self,
        repo: &Repository,
        digest: &str,
        step: Step,
        limits: &SignatureLimits,
    ) -> Result<Discovery> {
        self.boundary(repo, false, || {
            self.signatures_inner(repo, digest, step, limits)
        })
    }

    fn signatures_inner(
        &self,
        repo: &Repository,
        digest: &str,
        step: Step,
        limits: &SignatureLimits,
    ) -> Result<Discovery> {
        let ctx = context(repo);
        let invalid = |url: String, message: String| Error::InvalidResponse {
            context: Box::new(ctx.clone()),
            url,
            message,
        };
        let tag = digest_tag(digest)
            .ok_or_else(|| invalid(digest.to_owned(), "not a digest".to_owned()))?;
        let manifests: Vec<Desc> = match step {
            Step::Referrers => {
                let mut url = self.registry_url(
                    repo,
                    &format!("/v2/{}/referrers/{digest}", repo.repository()),
                );
                let mut found = Vec::new();
                for page in 0..limits.max_pages.max(1) {
                    let resp = self.send_authed(
                        repo,
                        "GET",
                        url.clone(),
                        Some(super::OCI_INDEX),
                        MAX_DOCUMENT,
                    )?;
                    if resp.status == 404 && page == 0 {
                        return Ok(Discovery::Unsupported);
                    }
                    if resp.status != 200 {
                        return Err(self.status_error(repo, "GET", &resp));
                    }
                    let doc: Doc = serde_json::from_slice(&resp.body).map_err(|e| {
                        invalid(
                            resp.url.to_string(),
                            format!("malformed referrers list: {e}"),
                        )
                    })?;
                    found.extend(
                        doc.manifests
                            .into_iter()
                            .filter(|d| signature_artifact(d.artifact_type.as_deref())),
                    );
                    match super::next_link(&resp).and_then(|l| resp.url.join(&l)) {
                        Some(next) if next.same_origin(&url) => url = next,
                        _ => break,
                    }
                }
                found
            }
            Step::ReferrersTag => {
                let index = match self.manifest_inner(repo, &tag) {
                    Ok(m) => m,
                    Err(e) if e.is_not_found() => return Ok(Discovery::Nothing),
                    Err(e) => return Err(e),
                };
                let doc: Doc = serde_json::from_slice(&index.bytes)
                    .map_err(|e| invalid(tag.clone(), format!("malformed referrers index: {e}")))?;
                doc.manifests
                    .into_iter()
                    .filter(|d| signature_artifact(d.artifact_type.as_deref()))
                    .collect()
            }
            Step::SigTag => {
                let sig_tag = format!("{tag}.sig");
                let m = match self.manifest_inner(repo, &sig_tag) {
                    Ok(m) => m,
                    Err(e) if e.is_not_found() => return Ok(Discovery::Nothing),
                    Err(e) => return Err(e),
                };
                let doc: Doc = serde_json::from_slice(&m.bytes).map_err(|e| {
                    invalid(
                        sig_tag.clone(),
                        format!("malformed signature manifest: {e}"),
                    )
                })?;
                let mut oversized = Vec::new();
                let blobs = self.layers(
                    repo,
                    &format!("tag {sig_tag}"),
                    &doc.layers,
                    limits,
                    &mut oversized,
                )?;
                return Ok(found(blobs, oversized));
            }
        };
        if manifests.is_empty() {
            return Ok(Discovery::Nothing);
        }
        if manifests.len() > limits.max_manifests {
            tracing::debug!(
                "{repo}@{digest}: {} signature referrers, reading the first {}",
                manifests.len(),
                limits.max_manifests
            );
        }
        let mut blobs: Vec<SignatureBlob> = Vec::new();
        let mut oversized = Vec::new();
        for d in manifests.iter().take(limits.max_manifests) {
            let read: u64 = blobs.iter().map(|b| b.data.len() as u64).sum();
            if read >= limits.max_total {
                tracing::debug!(
                    "{repo}@{digest}: signature blobs reached {read} bytes, reading no more"
                );
                break;
            }
            if !super::reference::valid_digest(&d.digest) {
                continue;
            }
            if d.size > MAX_DOCUMENT {
                oversized.push(Oversized {
                    origin: format!("referrer {}", d.digest),
                    what: "referrer manifest",
                    size: d.size,
                    limit: MAX_DOCUMENT,
                });
                continue;
            }
            // Embedded in the list, cached from an earlier run, or fetched;
            // a referrer listed but gone (deleted since) is skipped.
            let bytes = match self.known(d, MAX_DOCUMENT) {
                Some(bytes) => bytes,
                None => match self.manifest_inner(repo, &d.digest) {
                    Ok(m) => {
                        self.remember(&m.digest, &m.bytes);
                        m.bytes
                    }
                    Err(e) if e.is_not_found() => continue,
                    Err(e) => return Err(e),
                },
            };
            let doc: Doc = serde_json::from_slice(&bytes).map_err(|e| {
                invalid(
                    d.digest.clone(),
                    format!("malformed referrer manifest: {e}"),
                )
            })?;
            let artifact = doc
                .artifact_type
                .as_deref()
                .or(doc.config.as_ref().and_then(|c| c.artifact_type.as_deref()))
                .or(d.artifact_type.as_deref());
            if !signature_artifact(artifact) {
                continue;
            }
            blobs.extend(self.layers(
                repo,
                &format!("referrer {}", d.digest),
                &doc.layers,
                limits,
                &mut oversized,
            )?);
        }
        Ok(found(blobs, oversized))
    }

    /// The content `d` describes without asking the registry: embedded in
    /// the descriptor, or in the digest cache (content-addressed: a
    /// referrer manifest or a signature blob never changes under its
    /// digest). Checked against the digest either way.
    fn known(&self, d: &Desc, max: u64) -> Option<Vec<u8>> {
        if d.size > max {
            return None;
        }
        d.embedded()
            .or_else(|| self.digests.as_ref()?.get(&d.digest, max))
    }

    /// Keep a document fetched by `digest` (the fetch checked it) for later
    /// runs, when there is a cache directory.
    fn remember(&self, digest: &str, bytes: &[u8]) {
        if let Some(cache) = &self.digests {
            cache.put(digest, bytes);
        }
    }

    /// The signature layers of one manifest, with their blobs; those
    /// larger than the limit go to `oversized`, unread.
    fn layers(
        &self,
        repo: &Repository,
        origin: &str,
        layers: &[Desc],
        limits: &SignatureLimits,
        oversized: &mut Vec<Oversized>,
    ) -> Result<Vec<SignatureBlob>> {
        let several = layers.len() > 1;
        let named = |i: usize| {
            if several {
                format!("{origin} layer {}", i + 1)
            } else {
                origin.to_owned()
            }
        };
        let mut out = Vec::new();
        for (i, l) in layers.iter().enumerate().take(limits.max_layers) {
            if !signature_layer(&l.media_type) {
                continue;
            }
            if l.size > limits.max_blob {
                oversized.push(Oversized {
                    origin: named(i),
                    what: "signature layer",
                    size: l.size,
                    limit: limits.max_blob,
                });
                continue;
            }
            let data = match self.known(l, limits.max_blob) {
                Some(data) => data,
                None => {
                    let data = self.blob_inner(repo, &l.digest, limits.max_blob)?;
                    self.remember(&l.digest, &data);
                    data
                }
            };
            out.push(SignatureBlob {
                origin: named(i),
                media_type: l.media_type.clone(),
                annotations: l.annotations.clone(),
                data,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_from_digests() {
        assert_eq!(digest_tag("sha256:ab12").as_deref(), Some("sha256-ab12"));
        assert_eq!(digest_tag("sha256:"), None);
        assert_eq!(digest_tag("sha256:zz"), None);
        assert_eq!(digest_tag("latest"), None);
    }

    #[test]
    fn kinds() {
        assert!(signature_artifact(Some(BUNDLE_ARTIFACT)));
        assert!(signature_artifact(Some(COSIGN_SIG_ARTIFACT)));
        assert!(!signature_artifact(Some("application/spdx+json")));
        assert!(!signature_artifact(None));
        assert!(signature_layer(SIMPLE_SIGNING_LAYER));
        assert!(signature_layer(
            "application/vnd.dev.sigstore.bundle+json;version=0.3"
        ));
        assert!(!signature_layer("application/vnd.oci.image.layer.v1.tar"));
    }

    #[test]
    fn oversized_material_names_its_size_and_the_limit() {
        let o = Oversized {
            origin: "tag sha256-ab.sig".to_owned(),
            what: "signature layer",
            size: 52_000_000,
            limit: 1024 * 1024,
        };
        assert_eq!(
            o.to_string(),
            "tag sha256-ab.sig: the signature layer declares 52000000 bytes, over the 1 MiB limit on signature material, so it was not read"
        );
        assert_eq!(bytes(32 * 1024 * 1024), "32 MiB");
        assert_eq!(bytes(64 * 1024), "64 KiB");
        assert_eq!(bytes(1000), "1000 bytes");
    }
}
