//! A GitHub App's installation token: a JWT signed with the App's private key (RS256) proves the
//! App, the installation is found from the repository (`GET /repos/{owner}/{repo}/installation`)
//! unless given, and `POST /app/installations/{id}/access_tokens` returns a token limited to
//! that repository, valid for an hour (a run needs minutes).

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use rsa::pkcs1::DecodeRsaPrivateKey as _;
use rsa::pkcs8::DecodePrivateKey as _;
use rsa::signature::{SignatureEncoding as _, Signer as _};
use serde_json::{Value, json};
use sha2::Sha256;

use crate::error::{Error, ErrorKind};
use crate::http::{Http, Method, Repeat};
use crate::remote::Repository;
use crate::status::{enc, fail, invalid};
use image_update_secret::Secret;

/// The JWT for `app_id` (the App's ID, or its client ID), valid from a minute ago (clock drift)
/// for nine minutes (GitHub accepts at most ten).
pub(crate) fn jwt(app_id: &str, private_key: &Secret, now: u64) -> Result<Secret, Error> {
    let key = rsa::RsaPrivateKey::from_pkcs1_pem(private_key.expose())
        .or_else(|_| rsa::RsaPrivateKey::from_pkcs8_pem(private_key.expose()))
        .map_err(|_| {
            Error::config(
                "the GitHub App's private key is not an RSA private key in PEM (`BEGIN RSA \
                 PRIVATE KEY` or `BEGIN PRIVATE KEY`, as GitHub downloads it)",
            )
        })?;
    let issuer = match app_id.trim().parse::<u64>() {
        Ok(id) => json!(id),
        Err(_) if !app_id.trim().is_empty() => json!(app_id.trim()),
        Err(_) => return Err(Error::config("the GitHub App ID is empty")),
    };
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = json!({ "iat": now.saturating_sub(60), "exp": now + 540, "iss": issuer });
    let message = format!("{header}.{}", b64.encode(claims.to_string()));
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(key);
    let signature = signer
        .try_sign(message.as_bytes())
        .map_err(|_| Error::config("the GitHub App's private key cannot sign"))?;
    Ok(Secret::new(format!(
        "{message}.{}",
        b64.encode(signature.to_bytes())
    )))
}

/// An installation token for `repo`.
pub(crate) fn installation_token(
    http: &Http,
    repo: &Repository,
    app_id: &str,
    private_key: &Secret,
    installation: Option<u64>,
) -> Result<Secret, Error> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let jwt = jwt(app_id, private_key, now)?;
    let auth = Secret::new(format!("Bearer {}", jwt.expose()));
    http.hide(&jwt);
    http.hide(&auth);
    let refused_jwt = |status: u16, said: String, operation: &str| {
        Error::new(
            ErrorKind::Unauthorized,
            Some(status),
            format!(
                "{operation}: GitHub refused the App's JWT ({status}: {said}): the App ID `{}` or \
                 its private key is wrong (a revoked key, another App's key), or this machine's \
                 clock is off",
                app_id.trim()
            ),
        )
    };
    let id = match installation {
        Some(id) => id,
        None => {
            let operation = format!("finding the GitHub App's installation on {}", repo.path);
            let url = format!(
                "{}/repos/{}/{}/installation",
                repo.api,
                enc(repo.owner()),
                enc(repo.name())
            );
            let response = http.send(Method::Get, &url, &auth, None, Repeat::Safe, &operation)?;
            match response.status {
                200 => response
                    .json
                    .get("id")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| invalid(http, &response, &operation, "an installation id"))?,
                401 => {
                    return Err(refused_jwt(
                        401,
                        http.provider_message(&response),
                        &operation,
                    ));
                }
                404 => {
                    return Err(Error::new(
                        ErrorKind::NotFound,
                        Some(404),
                        format!(
                            "{operation}: the GitHub App `{}` is not installed on {} (or the \
                             repository does not exist): install it on the repository with \
                             `Pull requests` and `Contents` write permissions",
                            app_id.trim(),
                            repo.path
                        ),
                    ));
                }
                _ => return Err(fail(http, &response, &operation, &repo.path)),
            }
        }
    };
    let operation = format!(
        "getting an installation token of the GitHub App `{}` for {}",
        app_id.trim(),
        repo.path
    );
    let url = format!("{}/app/installations/{id}/access_tokens", repo.api);
    let body = json!({ "repositories": [repo.name()] });
    let response = http.send(
        Method::Post,
        &url,
        &auth,
        Some(&body),
        Repeat::Safe,
        &operation,
    )?;
    match response.status {
        201 => {
            let token = response
                .json
                .get("token")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| invalid(http, &response, &operation, "a token"))?;
            let token = Secret::new(token);
            http.hide(&token);
            Ok(token)
        }
        401 => Err(refused_jwt(
            401,
            http.provider_message(&response),
            &operation,
        )),
        404 | 422 => Err(Error::new(
            ErrorKind::NotFound,
            Some(response.status),
            format!(
                "{operation}: GitHub answered {} ({}): installation {id} does not exist or does \
                 not cover {}",
                response.status,
                http.provider_message(&response),
                repo.path
            ),
        )),
        _ => Err(fail(http, &response, &operation, &repo.path)),
    }
}
