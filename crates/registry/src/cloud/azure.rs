//! Azure Container Registry (`NAME.azurecr.io`, `.azurecr.cn`,
//! `.azurecr.us`): an Entra ID access token for the registry's audience
//! (`https://containerregistry.azure.net`, not Azure Resource Manager's),
//! from the first of (the Azure SDKs' order):
//!
//! 1. a service principal's secret: `AZURE_TENANT_ID`, `AZURE_CLIENT_ID`,
//!    `AZURE_CLIENT_SECRET`;
//! 2. workload identity: `AZURE_FEDERATED_TOKEN_FILE`, `AZURE_CLIENT_ID`,
//!    `AZURE_TENANT_ID` (a federated assertion);
//! 3. a managed identity: the instance metadata service, `Metadata: true`
//!    (`AZURE_CLIENT_ID` picks a user-assigned identity);
//!    `AZURE_POD_IDENTITY_AUTHORITY_HOST` moves it;
//!
//! at `AZURE_AUTHORITY_HOST`, else the registry's cloud's authority (the
//! registry's domain tells public, China or US Government). The token is
//! exchanged at the registry's `/oauth2/exchange` for a refresh token,
//! whose JWT `exp` says how long it holds; that token is the registry
//! password of the null GUID user, as `az acr login --expose-token` gives
//! it, for the registry's usual token flow.

use std::time::Duration;

use super::{Call, Ctx, Held, Value, jwt, now, read_small, seconds};
use crate::url::Url;
use crate::{Result, Secret};

/// The username of an ACR refresh token.
const NULL_GUID: &str = "00000000-0000-0000-0000-000000000000";
/// ACR's own audience, which registries that refuse ARM tokens require.
const RESOURCE: &str = "https://containerregistry.azure.net";
const IMDS_DEFAULT: &str = "http://169.254.169.254";
/// How long an exchanged refresh token holds when its `exp` cannot be read
/// (ACR's are three hours).
const REFRESH_LIFE: i64 = 3 * 3600;

/// An ACR host, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AcrHost {
    /// The cloud's Entra ID authority.
    pub authority: &'static str,
}

impl AcrHost {
    /// `NAME.azurecr.io` (public), `.azurecr.cn` (China), `.azurecr.us`
    /// (US Government); `None` for any other host.
    pub(crate) fn parse(host: &str) -> Option<Self> {
        let (name, domain) = host.split_once('.')?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return None;
        }
        let authority = match domain {
            "azurecr.io" => "https://login.microsoftonline.com",
            "azurecr.cn" => "https://login.chinacloudapi.cn",
            "azurecr.us" => "https://login.microsoftonline.us",
            _ => return None,
        };
        Some(Self { authority })
    }
}

/// Log in to an ACR registry: an Entra token, exchanged for the
/// registry's refresh token.
pub(super) fn login(ctx: &Ctx<'_>, host: &AcrHost) -> Result<Held> {
    let authority = ctx
        .env
        .get("AZURE_AUTHORITY_HOST")
        .unwrap_or(host.authority)
        .trim()
        .trim_end_matches('/')
        .to_owned();
    let entra = ctx.identity(&format!("azure|{authority}"), || {
        entra_token(ctx, &authority)
    })?;
    let Value::Token(token) = &entra.value else {
        return Err(ctx.failed(&entra.identity, "", "internal error: no access token"));
    };
    let identity = &entra.identity;
    let url = Url::new(ctx.registry_scheme(), ctx.host, "/oauth2/exchange");
    let enc = crate::url::encode_unreserved;
    let mut form = format!(
        "grant_type=access_token&service={}&access_token={}",
        enc(ctx.host),
        enc(token.expose())
    );
    if let Some(tenant) = jwt::claims(token.expose())
        .and_then(|c| {
            c.get("tid")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        })
        .or_else(|| ctx.env.get("AZURE_TENANT_ID").map(str::to_owned))
    {
        form.push_str(&format!("&tenant={}", enc(&tenant)));
    }
    let resp = ctx.send(
        Call::new("POST", url.clone()).form(Secret::new(form)),
        identity,
    )?;
    let (refresh, _) = ctx.token_field(
        identity,
        &resp,
        "refresh_token",
        &format!("the exchange at {url}"),
    )?;
    let obtained = now();
    let expires = jwt::claims(&refresh)
        .and_then(|c| seconds(c.get("exp")))
        .unwrap_or(obtained + REFRESH_LIFE);
    Ok(Held {
        value: Value::Login {
            username: NULL_GUID.to_owned(),
            password: Secret::new(refresh),
        },
        identity: identity.clone(),
        obtained,
        expires: Some(expires),
    })
}

/// The Entra ID token, from the first source configured.
fn entra_token(ctx: &Ctx<'_>, authority: &str) -> Result<Held> {
    let env = ctx.env;
    let client = env.get("AZURE_CLIENT_ID").unwrap_or("").trim();
    let tenant = env.get("AZURE_TENANT_ID").unwrap_or("").trim();
    let scope = format!("{RESOURCE}/.default");
    let enc = crate::url::encode_unreserved;
    let (identity, form) = if let Some(secret) = env.get("AZURE_CLIENT_SECRET") {
        let identity = format!(
            "service principal {client} of tenant {tenant} (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_CLIENT_SECRET)"
        );
        ctx.secret(secret.trim());
        (
            identity,
            format!(
                "grant_type=client_credentials&client_id={}&scope={}&client_secret={}",
                enc(client),
                enc(&scope),
                enc(secret.trim())
            ),
        )
    } else if let Some(file) = env.get("AZURE_FEDERATED_TOKEN_FILE") {
        let identity = format!(
            "workload identity {client} of tenant {tenant} (AZURE_FEDERATED_TOKEN_FILE {file})"
        );
        let assertion = read_small(file).map_err(|e| ctx.failed(&identity, "", e))?;
        let assertion = assertion.trim();
        ctx.secret(assertion);
        (
            identity,
            format!(
                "grant_type=client_credentials&client_id={}&scope={}&client_assertion_type={}&client_assertion={}",
                enc(client),
                enc(&scope),
                enc("urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                enc(assertion)
            ),
        )
    } else {
        return managed_identity(ctx, client);
    };
    if client.is_empty() || tenant.is_empty() || tenant.contains(['/', '?', '#']) {
        return Err(ctx.failed(
            &identity,
            "",
            "AZURE_CLIENT_ID and AZURE_TENANT_ID (a tenant ID or domain) are both needed",
        ));
    }
    let url = Url::parse(&format!("{authority}/{tenant}/oauth2/v2.0/token")).ok_or_else(|| {
        ctx.failed(
            &identity,
            "",
            format!("AZURE_AUTHORITY_HOST {authority:?} is not an http(s) URL"),
        )
    })?;
    let resp = ctx.send(
        Call::new("POST", url.clone()).form(Secret::new(form)),
        &identity,
    )?;
    token_answer(ctx, &resp, &identity, &url)
}

/// A managed identity's token from the instance metadata service.
fn managed_identity(ctx: &Ctx<'_>, client: &str) -> Result<Held> {
    let base = ctx
        .env
        .get("AZURE_POD_IDENTITY_AUTHORITY_HOST")
        .unwrap_or(IMDS_DEFAULT)
        .trim()
        .trim_end_matches('/')
        .to_owned();
    let identity = if client.is_empty() {
        format!("the managed identity (IMDS at {base})")
    } else {
        format!("the managed identity {client} (IMDS at {base})")
    };
    let mut url = Url::parse(&format!("{base}/metadata/identity/oauth2/token"))
        .ok_or_else(|| {
            ctx.failed(
                &identity,
                "",
                format!("AZURE_POD_IDENTITY_AUTHORITY_HOST {base:?} is not an http(s) URL"),
            )
        })?
        .with_query("api-version", "2018-02-01")
        .with_query("resource", RESOURCE);
    if !client.is_empty() {
        url = url.with_query("client_id", client);
    }
    let flag = Secret::new("true");
    let headers = [("Metadata", &flag)];
    let mut call = Call::new("GET", url.clone());
    call.headers = &headers;
    call.metadata = true;
    call.timeout = Some(Duration::from_secs(2));
    call.retries = Some(2);
    let resp = ctx.send(call, &identity).map_err(|e| {
        let message = match e {
            crate::Error::Login { message, .. } => message,
            other => other.to_string(),
        };
        ctx.failed(
            "",
            "",
            format!(
                "no Azure credentials: neither AZURE_CLIENT_SECRET nor AZURE_FEDERATED_TOKEN_FILE is set, and {identity} did not answer: {message}"
            ),
        )
    })?;
    token_answer(ctx, &resp, &identity, &url)
}

/// An Entra ID or IMDS token answer: `access_token`, `expires_in` (a
/// number from Entra ID, a string from IMDS) or IMDS's `expires_on`.
fn token_answer(
    ctx: &Ctx<'_>,
    resp: &crate::transport::Response,
    identity: &str,
    url: &Url,
) -> Result<Held> {
    let (token, value) = ctx.token_field(identity, resp, "access_token", &url.to_string())?;
    let obtained = now();
    let expires = seconds(value.get("expires_in"))
        .map(|s| obtained + s)
        .or_else(|| seconds(value.get("expires_on")))
        .unwrap_or(obtained + 3600);
    Ok(Held {
        value: Value::Token(Secret::new(token)),
        identity: identity.to_owned(),
        obtained,
        expires: Some(expires),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registries_and_their_clouds() {
        assert_eq!(
            AcrHost::parse("myreg.azurecr.io").unwrap().authority,
            "https://login.microsoftonline.com"
        );
        assert_eq!(
            AcrHost::parse("myreg.azurecr.cn").unwrap().authority,
            "https://login.chinacloudapi.cn"
        );
        assert_eq!(
            AcrHost::parse("myreg.azurecr.us").unwrap().authority,
            "https://login.microsoftonline.us"
        );
        for host in [
            "azurecr.io",
            "my-reg.azurecr.io",
            "myreg.azurecr.io.evil.example",
            "a.b.azurecr.io",
            "myreg.azurecr.io:443",
            "MyReg.azurecr.io",
        ] {
            assert_eq!(AcrHost::parse(host), None, "{host}");
        }
    }
}
