//! The supply-chain gate: before image-update writes a tag, the image it
//! names must be signed by a required signer (and, see [`age`], old enough,
//! by a time the user trusts).
//!
//! Signatures are found the ways cosign writes them (the registry crate's
//! `signatures` module: the OCI referrers API, the `sha256-<hex>` referrers
//! tag, the legacy `sha256-<hex>.sig` tag) and verified here, offline:
//!
//! * **material** ([`material`]): cosign's simple-signing layers (payload,
//!   signature annotation, certificate, Rekor bundle annotation) and
//!   Sigstore bundles v0.1–v0.3 (DSSE envelopes with an in-toto statement,
//!   message signatures);
//! * **binding**: the signed content names the exact manifest digest
//!   (`docker-manifest-digest`, the statement's subject, the message
//!   digest);
//! * **keys** ([`keys`]): ECDSA P-256/P-384, Ed25519, RSA (PEM);
//! * **keyless** ([`cert`], [`tlog`], [`merkle`], [`note`], [`trust`]):
//!   the Fulcio certificate chains to a certificate authority of the
//!   trusted root and was valid, for code signing, at the time the
//!   transparency log integrated the entry; that entry's signed entry
//!   timestamp and (bundles v0.2+) inclusion proof and signed checkpoint
//!   verify with the root's log keys; the logged body is this signature;
//!   the subject alternative name and OIDC issuer match the policy.
//!
//! Everything fails closed: material that cannot be read or checked counts
//! as not signed. Counts and sizes are bounded at every step.
//!
//! ```text
//! Gate::check(client, repo, digest)
//!   └─ registry: discovery steps, in order, until one verifies
//!        └─ Policy::verify(digest, layers) ─> Verified { signed_by } | Rejected { reasons }
//! ```

pub mod age;
pub mod cert;
pub mod gate;
pub mod keys;
pub mod material;
pub mod merkle;
pub mod note;
pub mod policy;
pub mod tlog;
pub mod trust;
pub mod values;

pub use gate::{Gate, GateError};
pub use keys::PublicKey;
pub use material::SignatureLayer;
pub use policy::{
    IdentityConfig, KeyConfig, Matcher, Policy, Rejected, Require, SignedBy, Signer, Verified,
    VerifyConfig, from_config,
};
pub use trust::TrustedRoot;
pub use values::{KeySource, Pattern, RootSource, SignerNames, SignerValues};
