//! The gate over the registry: discovery steps in cosign's order, each
//! verified before the next is asked for, so an image signed where cosign
//! looks first costs the fewest requests.

use std::collections::HashSet;
use std::sync::Mutex;

use image_update_registry::signatures::{Discovery, SignatureLimits, Step};
use image_update_registry::{RegistryClient, Repository};

use crate::material::SignatureLayer;
use crate::policy::{Policy, Rejected, Verified};

/// A registry failure while looking for signatures (not "unsigned": the
/// caller fails the policy rather than choose an older tag).
pub type GateError = image_update_registry::Error;

/// A verification policy with its discovery settings.
#[derive(Debug)]
pub struct Gate {
    policy: Policy,
    limits: SignatureLimits,
    steps: Vec<Step>,
    /// Registries that answered 404 to the referrers API: not asked again.
    no_referrers: Mutex<HashSet<String>>,
}

impl Gate {
    /// A gate with the default limits and every discovery step.
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            limits: SignatureLimits::default(),
            steps: Step::ALL.to_vec(),
            no_referrers: Mutex::new(HashSet::new()),
        }
    }

    /// Other limits.
    #[must_use]
    pub fn with_limits(mut self, limits: SignatureLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Other steps, in the order given (empty: every step).
    #[must_use]
    pub fn with_steps(mut self, steps: Vec<Step>) -> Self {
        if !steps.is_empty() {
            self.steps = steps;
        }
        self
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Checks the manifest `digest` of `repo`.
    ///
    /// # Errors
    /// A registry failure (other than "no signature there").
    pub fn check(
        &self,
        client: &RegistryClient,
        repo: &Repository,
        digest: &str,
    ) -> Result<Result<Verified, Rejected>, GateError> {
        let mut rejected = Rejected {
            reasons: Vec::new(),
            found: false,
        };
        let host = repo.api_host().to_owned();
        for step in &self.steps {
            if *step == Step::Referrers
                && self
                    .no_referrers
                    .lock()
                    .is_ok_and(|set| set.contains(&host))
            {
                continue;
            }
            let blobs = match client.signatures(repo, digest, *step, &self.limits)? {
                Discovery::Found { blobs, oversized } => {
                    // Material too large to read is found, and is why the
                    // image is not signed when nothing else verifies.
                    rejected.found |= !oversized.is_empty();
                    rejected
                        .reasons
                        .extend(oversized.iter().map(|o| format!("{step}: {o}")));
                    if blobs.is_empty() {
                        continue;
                    }
                    blobs
                }
                Discovery::Nothing => continue,
                Discovery::Unsupported => {
                    if let Ok(mut set) = self.no_referrers.lock() {
                        set.insert(host.clone());
                    }
                    continue;
                }
            };
            let layers: Vec<SignatureLayer> = blobs
                .into_iter()
                .map(|b| SignatureLayer {
                    origin: format!("{step}: {}", b.origin),
                    media_type: b.media_type,
                    annotations: b.annotations,
                    data: b.data,
                })
                .collect();
            match self.policy.verify(digest, &layers) {
                Ok(v) => return Ok(Ok(v)),
                Err(r) => {
                    rejected.found |= r.found;
                    rejected.reasons.extend(r.reasons);
                }
            }
        }
        Ok(Err(rejected))
    }
}
