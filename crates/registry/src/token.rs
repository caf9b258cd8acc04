//! The token flow: which credential a registry gets, which challenge it
//! answers `GET /v2/` with, and the `Authorization` header for a scope:
//! Basic, a registry token, or a Bearer token fetched from the challenge's
//! realm (with the credential, or an OAuth2 refresh-token grant for an
//! identity token), cached until shortly before it expires.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::auth::{Challenge, TokenResponse, choose_challenge};
use crate::transport::{Request, lock};
use crate::url::{self, Url};
use crate::{
    Context, Credential, CredentialSource, Error, MAX_SMALL, RegistryClient, Repository, Result,
    Secret, basic_header, context, error, error_detail, refusal, status_error, strip_query,
};

/// A Bearer token's `Authorization` header and when to stop using it.
pub(crate) struct CachedToken {
    pub(crate) header: Secret,
    pub(crate) expires: Instant,
}

impl RegistryClient {
    /// The credential for `repo` and where it came from, looked up once;
    /// its secrets are registered for redaction before anything is sent.
    pub(crate) fn credential(&self, repo: &Repository) -> Result<(Credential, CredentialSource)> {
        let key = (repo.registry().to_owned(), repo.repository().to_owned());
        if let Some(provider) = self.cloud_provider(repo) {
            // Asked each time: the login is renewed as it ages.
            let found = self.cloud_credential(repo, provider)?;
            lock(&self.credentials).insert(key, found.clone());
            return Ok(found);
        }
        if let Some(c) = lock(&self.credentials).get(&key) {
            return Ok(c.clone());
        }
        let found = self
            .settings
            .credentials
            .lookup_with_source(repo.registry(), repo.repository())?;
        self.secrets.add_credential(&found.0);
        lock(&self.credentials).insert(key, found.clone());
        Ok(found)
    }

    /// The `Authorization` header value for `scope` on the registry of `repo`.
    pub(crate) fn authorization(&self, repo: &Repository, scope: &str) -> Result<Option<Secret>> {
        let ctx = context(repo);
        let host = repo.api_host().to_owned();
        // The credential first: its secrets are then known to the redaction
        // before any answer is read.
        let (credential, source) = self.credential(repo)?;
        let challenge = self.challenge(repo)?;
        match challenge {
            Challenge::Anonymous => Ok(None),
            Challenge::Basic => match credential {
                Credential::Anonymous => Ok(None),
                Credential::Basic { username, password } => {
                    Ok(Some(basic_header(&username, &password)))
                }
                Credential::RegistryToken(t) => {
                    Ok(Some(Secret::new(format!("Bearer {}", t.expose()))))
                }
                Credential::IdentityToken { .. } => Err(Error::Auth {
                    context: Box::new(ctx),
                    message: format!(
                        "the registry wants Basic auth but the credential from {source} is an identity token"
                    ),
                    detail: String::new(),
                    refusal: None,
                }),
            },
            Challenge::Bearer { realm, service } => {
                if let Credential::RegistryToken(t) = &credential {
                    return Ok(Some(Secret::new(format!("Bearer {}", t.expose()))));
                }
                let key = (host, scope.to_owned());
                if let Some(t) = lock(&self.tokens).get(&key)
                    && t.expires > Instant::now()
                {
                    return Ok(Some(t.header.clone()));
                }
                let fetched =
                    self.fetch_token(repo, &realm, service.as_deref(), scope, &credential, source);
                let (token, lifetime) = match fetched {
                    // A cloud login's password the token service says expired: one new
                    // login, then the token asked for again.
                    Err(Error::Auth {
                        refusal: Some(_),
                        ref detail,
                        ..
                    }) if detail.to_ascii_lowercase().contains("expired")
                        && self.expire_cloud_login(repo) =>
                    {
                        let (credential, source) = self.credential(repo)?;
                        self.fetch_token(
                            repo,
                            &realm,
                            service.as_deref(),
                            scope,
                            &credential,
                            source,
                        )?
                    }
                    other => other?,
                };
                let header = Secret::new(format!("Bearer {}", token.expose()));
                // Refresh a little early so a token does not expire in flight.
                let expires = Instant::now() + lifetime.saturating_sub(Duration::from_secs(10));
                lock(&self.tokens).insert(
                    key,
                    CachedToken {
                        header: header.clone(),
                        expires,
                    },
                );
                Ok(Some(header))
            }
        }
    }

    /// `GET /v2/` once per host to learn the authentication scheme.
    fn challenge(&self, repo: &Repository) -> Result<Challenge> {
        let host = repo.api_host().to_owned();
        if let Some(c) = lock(&self.challenges).get(&host) {
            return Ok(c.clone());
        }
        let ctx = Context {
            registry: repo.registry().to_owned(),
            repository: None,
        };
        let url = self.registry_url(repo, "/v2/");
        let resp = self.transport.send(&Request {
            method: "GET",
            url,
            accept: None,
            authorization: None,
            body: None,
            secret_body: false,
            context: &ctx,
            max_body: MAX_SMALL,
            extra: Default::default(),
        })?;
        let challenge = match resp.status {
            200..=299 => Challenge::Anonymous,
            401 => choose_challenge(&resp.headers_all("www-authenticate")).ok_or_else(|| {
                Error::Auth {
                    context: Box::new(ctx.clone()),
                    message: format!(
                        "{} answered 401 without a Basic or Bearer challenge",
                        resp.url
                    ),
                    detail: String::new(),
                    refusal: None,
                }
            })?,
            _ => return Err(status_error(&ctx, "GET", &resp)),
        };
        lock(&self.challenges).insert(host, challenge.clone());
        Ok(challenge)
    }

    fn fetch_token(
        &self,
        repo: &Repository,
        realm: &str,
        service: Option<&str>,
        scope: &str,
        credential: &Credential,
        source: CredentialSource,
    ) -> Result<(Secret, Duration)> {
        let ctx = &context(repo);
        let auth_err = |message: String| Error::Auth {
            context: Box::new(ctx.clone()),
            message,
            detail: String::new(),
            refusal: None,
        };
        let realm_url =
            Url::parse(realm).ok_or_else(|| auth_err(format!("invalid token realm {realm:?}")))?;
        self.token_requests.fetch_add(1, Ordering::Relaxed);
        let resp = match credential {
            Credential::IdentityToken { token, .. } => {
                // OAuth2 refresh-token grant.
                let mut form = format!(
                    "grant_type=refresh_token&client_id=image-update&scope={}",
                    url::encode_component(scope)
                );
                if let Some(s) = service {
                    form.push_str(&format!("&service={}", url::encode_component(s)));
                }
                form.push_str("&refresh_token=");
                form.push_str(&url::encode_component(token.expose()));
                self.transport.send(&Request {
                    method: "POST",
                    url: realm_url,
                    accept: Some("application/json"),
                    authorization: None,
                    body: Some(("application/x-www-form-urlencoded", Secret::new(form))),
                    secret_body: true,
                    context: ctx,
                    max_body: MAX_SMALL,
                    extra: Default::default(),
                })?
            }
            _ => {
                let mut url = realm_url;
                if let Some(s) = service {
                    url = url.with_query("service", s);
                }
                url = url.with_query("scope", scope);
                let header = match credential {
                    Credential::Basic { username, password } => {
                        url = url.with_query("account", username);
                        Some(basic_header(username, password))
                    }
                    _ => None,
                };
                self.transport.send(&Request {
                    method: "GET",
                    url,
                    accept: Some("application/json"),
                    authorization: header.as_ref(),
                    body: None,
                    secret_body: false,
                    context: ctx,
                    max_body: MAX_SMALL,
                    extra: Default::default(),
                })?
            }
        };
        if resp.status != 200 {
            let refused = resp.status == 401 || resp.status == 403;
            return Err(Error::Auth {
                context: Box::new(ctx.clone()),
                message: format!(
                    "token request to {} answered HTTP {}{}",
                    strip_query(&resp.url),
                    resp.status,
                    resp.attempts
                ),
                detail: error_detail(&resp.body).unwrap_or_default(),
                refusal: refused
                    .then(|| Box::new(refusal(repo, credential, source, resp.status == 403))),
            });
        }
        let parsed: TokenResponse = serde_json::from_slice(&resp.body).map_err(|e| {
            auth_err(format!(
                "invalid token response from {}: {}",
                strip_query(&resp.url),
                error::describe_json_error(&e)
            ))
        })?;
        let (token, lifetime) = parsed.into_parts().ok_or_else(|| {
            auth_err(format!(
                "token response from {} has no token",
                strip_query(&resp.url)
            ))
        })?;
        self.secrets.add(&token);
        Ok((Secret::new(token), lifetime))
    }
}
