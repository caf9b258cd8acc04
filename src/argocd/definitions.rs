//! The catalog's selections as the reflector's definitions, so that `--fetch` lists and selects
//! the tags of an Argo CD image exactly as it does for a Flux ImagePolicy.
//!
//! A selection's pull secret becomes the definition's registry credential:
//!
//! * `pullsecret:NAMESPACE/NAME`: a `kubernetes.io/dockerconfigjson` Secret among the policy
//!   documents (the `--policies` files, the tree's Secrets of that type);
//! * `secret:NAMESPACE/NAME#FIELD`: the field of a Secret among the policy documents, holding
//!   `USER:PASSWORD`;
//! * `env:VARIABLE`: `USER:PASSWORD` in the environment of the run;
//! * `ext:/PATH`: a program printing `USER:PASSWORD`, as Argo CD Image Updater runs it. The
//!   annotation comes from the repository, so the program runs only if the operator allowed that
//!   exact program (`--allow-credential-program`, the registry settings'
//!   `allowed_credential_programs`, checked when fetching), and never one that lies inside the
//!   tree being updated (symlinks resolved, checked here).
//!
//! `USER:PASSWORD` becomes a Docker `config.json` for the image's registry, kept as a
//! [`Secret`](image_update_registry::Secret) like every credential.

use std::path::Path;

use base64::Engine;
use serde_json::Value;

use image_update_registry::settings::{KeyConfig, VerifyConfig};
use image_update_verify::PublicKey;

use super::catalog::{Catalog, DefinedBy, Selection};
use super::config::CosignKeyRef;
use super::settings::PullSecret;
use crate::diagnostic::Diagnostic;
use crate::input::SizeLimit;
use crate::policies::PolicyDocument;
use crate::reflector::definitions::{
    Definition, Kind, RegistryCredential, is_secret, secret_config_json,
};
use crate::reflector::selection::spec::GateConfig;
use crate::sink::door::Door;
use crate::yaml;

/// The prefixes of the variables an `env:` pull secret may not name: image-update's own
/// (`IMAGE_UPDATE_GIT_TOKEN`, `IMAGE_UPDATE_REGISTRY_*`...), the GitHub Action's inputs (its
/// `token`), the runner's (`GITHUB_TOKEN`, `ACTIONS_RUNTIME_TOKEN`), and the cloud identity the
/// registry logins use (`AWS_SECRET_ACCESS_KEY`, `AZURE_CLIENT_SECRET`...).
const RESERVED_ENV_PREFIXES: [&str; 9] = [
    "IMAGE_UPDATE_",
    "INPUT_",
    "GITHUB_",
    "ACTIONS_",
    "RUNNER_",
    "AWS_",
    "AZURE_",
    "GOOGLE_",
    "GCE_",
];

/// Where a run's environment variables come from (the process, or a test's map).
pub(crate) trait Environment {
    fn var(&self, name: &str) -> Option<String>;
}

/// The process environment.
pub(crate) struct ProcessEnvironment;

impl Environment for ProcessEnvironment {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// One definition per selection of `catalog` that the reflector does not define already (a
/// KubeSphere entry is read by the reflector under the same key).
///
/// # Errors
/// Every pull secret that cannot be had, at the setting that names it.
pub(crate) fn definitions(
    catalog: &Catalog<'_>,
    documents: &[PolicyDocument],
    secrets_dir: Option<&Path>,
    env: &dyn Environment,
    tree: Option<&Path>,
) -> Result<Vec<Definition>, Vec<Diagnostic>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for s in catalog
        .selections
        .iter()
        .filter(|s| s.defined_by == DefinedBy::Selection)
    {
        let credentials = match &s.pull_secret {
            None => None,
            Some(secret) => match credential(s, secret, documents, env, tree) {
                Ok(c) => Some(c),
                Err(message) => {
                    errors.push(
                        Diagnostic::error(format!("{}: {message}", s.source))
                            .at(s.location.clone()),
                    );
                    continue;
                }
            },
        };
        let gate = match &s.verify {
            None => GateConfig::default(),
            Some(key) => match signer(key, documents, secrets_dir) {
                Ok(verify) => GateConfig {
                    verify: Some(verify),
                    ..GateConfig::default()
                },
                Err(message) => {
                    errors.push(
                        Diagnostic::error(format!(
                            "{}: imagesVerification.cosignKey: {message}",
                            s.source
                        ))
                        .at(key.location.clone()),
                    );
                    continue;
                }
            },
        };
        let labels = catalog
            .apps
            .iter()
            .find(|a| a.id == s.app)
            .map(|a| a.labels.clone())
            .unwrap_or_default();
        out.push(Definition {
            key: s.key.clone(),
            source: s.source.clone(),
            image: s.image.clone(),
            repository: s.repository.clone(),
            config: s.config.clone(),
            location: s.location.clone(),
            insecure: false,
            provider: image_update_registry::Provider::Generic,
            credentials,
            previous: None,
            observed_previous: None,
            labels,
            // Argo CD Image Updater has no place for a minimum age or an alias (the settings
            // file's and the front end's apply); its imagesVerification key is required besides
            // theirs.
            gate,
            kind: Kind::ArgoCd {
                app: s.app.to_string(),
            },
            notes: Vec::new(),
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn credential(
    s: &Selection,
    secret: &PullSecret,
    documents: &[PolicyDocument],
    env: &dyn Environment,
    tree: Option<&Path>,
) -> Result<RegistryCredential, String> {
    match secret {
        PullSecret::DockerConfig { namespace, name } => {
            let (value, origin) = find_secret(documents, namespace, name)?.ok_or_else(|| {
                format!(
                    "pull secret pullsecret:{namespace}/{name}: no Secret {namespace}/{name} among the policy files and the tree's dockerconfigjson Secrets"
                )
            })?;
            Ok(RegistryCredential::Secret {
                config_json: image_update_registry::Secret::new(secret_config_json(
                    value, &origin,
                )?),
                origin,
            })
        }
        PullSecret::SecretField {
            namespace,
            name,
            field,
        } => {
            let (value, origin) = find_secret(documents, namespace, name)?.ok_or_else(|| {
                format!(
                    "pull secret secret:{namespace}/{name}#{field}: no Secret {namespace}/{name} among the policy files"
                )
            })?;
            let pair = secret_field(value, field)
                .ok_or_else(|| format!("{origin} has no field {field:?} (data or stringData)"))?;
            basic(s, &pair, &format!("{origin} field {field:?}"))
        }
        PullSecret::Env(variable) => {
            // The annotation comes from the repository; its image names the registry the value is
            // sent to. The credentials image-update and the runner hold for other purposes are
            // never that value.
            if let Some(prefix) = RESERVED_ENV_PREFIXES
                .iter()
                .find(|p| variable.starts_with(**p))
            {
                return Err(format!(
                    "pull secret env:{variable}: variables named {prefix}* hold image-update's, the CI runner's or the cloud identity's own settings and credentials, so a repository cannot name them; give the registry credentials in a variable of another name"
                ));
            }
            let pair = env.var(variable).ok_or_else(|| {
                format!(
                    "pull secret env:{variable}: the environment variable {variable} is not set"
                )
            })?;
            basic(s, &pair, &format!("environment variable {variable}"))
        }
        PullSecret::Ext(program) => program_credential(program, tree),
    }
}

/// An `ext:` program, checked before it can run: an absolute path that exists, outside the tree
/// being updated whether its symlinks are resolved or not (anyone who can change the repository
/// could change a program there). Whether the operator allows it is checked when fetching.
fn program_credential(program: &str, tree: Option<&Path>) -> Result<RegistryCredential, String> {
    let what = format!("pull secret ext:{program}");
    if !program.starts_with('/') {
        return Err(format!("{what}: the program must be an absolute path"));
    }
    let resolved = fs_err::canonicalize(program).map_err(|e| format!("{what}: {e}"))?;
    if let Some(tree) = tree {
        let inside = |p: &Path| {
            p.starts_with(tree) || fs_err::canonicalize(tree).is_ok_and(|t| p.starts_with(t))
        };
        if inside(Path::new(program)) || inside(&resolved) {
            return Err(format!(
                "{what}: the program lies inside the tree being updated ({}), where whoever can change the repository can change it, so it is never run; install it outside the tree and allow it with --allow-credential-program",
                resolved.display()
            ));
        }
    }
    Ok(RegistryCredential::Program {
        given: program.to_owned(),
        path: resolved,
        origin: what,
    })
}

/// The most bytes of a key read from `--secrets-dir`: Kubernetes keeps a Secret under 1 MiB.
const MAX_KEY_FILE: SizeLimit = SizeLimit(1 << 20);

/// The signer `imagesVerification.cosignKey` names: the field of its Secret among `documents` (a
/// Secret manifest in a policy file or among a package's items), else the file `SECRET/KEY` below
/// `secrets_dir` (a Secret mounted as a volume, `--secrets-dir`), read through that directory's
/// door (no path out of it, regular files only, at most [`MAX_KEY_FILE`]); its PEM must be a
/// public key.
///
/// # Errors
/// No Secret and no file holds the key, a Secret without the field, a file that cannot be read,
/// a key that does not parse: each a message naming the Secret, never the key's text.
fn signer(
    key: &CosignKeyRef,
    documents: &[PolicyDocument],
    secrets_dir: Option<&Path>,
) -> Result<VerifyConfig, String> {
    let CosignKeyRef {
        namespace,
        secret_name,
        key: field,
        ..
    } = key;
    let pem = match find_secret(documents, namespace, secret_name)? {
        Some((value, origin)) => secret_field(value, field)
            .ok_or_else(|| format!("{origin} has no field {field:?} (data or stringData)"))?,
        None => {
            let Some(dir) = secrets_dir else {
                return Err(format!(
                    "no Secret {namespace}/{secret_name} among the policy documents (--policies files, the package's items), and no --secrets-dir where it is mounted"
                ));
            };
            let rel = format!("{secret_name}/{field}");
            let missing = || {
                format!(
                    "no Secret {namespace}/{secret_name} among the policy documents (--policies files, the package's items), and no file {}",
                    dir.join(&rel).display()
                )
            };
            let door =
                Door::new(dir).map_err(|e| format!("--secrets-dir {}: {e}", dir.display()))?;
            match door.read(&rel, MAX_KEY_FILE) {
                Ok(Some(text)) => text,
                Ok(None) => return Err(missing()),
                Err(refusal) => return Err(format!("--secrets-dir: {refusal}")),
            }
        }
    };
    PublicKey::from_pem(&pem).map_err(|e| format!("{key} is not a public key: {e}"))?;
    Ok(VerifyConfig {
        keys: vec![KeyConfig {
            pem: Some(pem),
            // Reports name the key after its Secret.
            name: Some(key.to_string()),
            ..KeyConfig::default()
        }],
        ..VerifyConfig::default()
    })
}

/// The Secret `namespace`/`name` among `documents`, and how to name it (`Ok(None)`: none).
///
/// # Errors
/// The Secret is defined twice, differently (`crate::same_object`): naming both places and the
/// first field that differs, never its values.
fn find_secret<'d>(
    documents: &'d [PolicyDocument],
    namespace: &str,
    name: &str,
) -> Result<Option<(&'d Value, String)>, String> {
    let mut found = documents.iter().flat_map(|doc| {
        yaml::objects(&doc.document)
            .into_iter()
            .filter(|o| {
                let (ns, n) = yaml::namespace_name(o.value);
                is_secret(o.value) && ns == namespace && n == name
            })
            .map(move |o| (o, doc))
    });
    let Some((first, first_doc)) = found.next() else {
        return Ok(None);
    };
    for (other, doc) in found {
        if let Some(d) = crate::same_object::difference(first.value, other.value) {
            return Err(crate::same_object::message(
                &format!("Secret {namespace}/{name}"),
                &first_doc.location(&first, &d.pointer),
                Some(&doc.location(&other, &d.pointer)),
                &d,
            ));
        }
    }
    Ok(Some((
        first.value,
        format!("Secret {namespace}/{name} in {}", first_doc.origin),
    )))
}

/// A Secret's field: `stringData`, else `data` (base64).
fn secret_field(secret: &Value, field: &str) -> Option<String> {
    if let Some(text) = secret
        .get("stringData")
        .and_then(|d| d.get(field))
        .and_then(Value::as_str)
    {
        return Some(text.to_owned());
    }
    let encoded = secret.get("data")?.get(field)?.as_str()?;
    let compact: String = encoded.split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(compact)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

/// `USER:PASSWORD` (from `what`) as a Docker `config.json` for the selection's registry.
fn basic(s: &Selection, pair: &str, what: &str) -> Result<RegistryCredential, String> {
    let pair = pair.trim();
    if !pair.contains(':') {
        return Err(format!("{what} does not hold USER:PASSWORD"));
    }
    let auth = base64::engine::general_purpose::STANDARD.encode(pair);
    let config = serde_json::json!({
        "auths": {s.repository.registry(): {"auth": auth}},
    });
    Ok(RegistryCredential::Secret {
        origin: what.to_owned(),
        config_json: image_update_registry::Secret::new(config.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argocd::application::InputFile;
    use crate::argocd::catalog::{CollectOptions, collect};
    use std::collections::BTreeMap;

    struct Env(BTreeMap<&'static str, &'static str>);

    impl Environment for Env {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).map(|v| (*v).to_owned())
        }
    }

    const APP: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: shop\n  labels: {team: a}\n  annotations:\n    argocd-image-updater.argoproj.io/image-list: web=registry.example.test/acme/web:^1, api=ghcr.io/acme/api, db=ghcr.io/acme/db\n    argocd-image-updater.argoproj.io/web.pull-secret: pullsecret:argocd/regcred\n    argocd-image-updater.argoproj.io/api.pull-secret: secret:argocd/tokens#ghcr\n    argocd-image-updater.argoproj.io/db.pull-secret: env:DB_CREDS\nspec:\n  source: {repoURL: https://git.example.test/fleet, path: shop, kustomize: {}}\n";

    const SECRETS: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: regcred, namespace: argocd}\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{\"auths\":{\"registry.example.test\":{\"auth\":\"dTpw\"}}}'\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: tokens, namespace: argocd}\ndata:\n  ghcr: Ym90OnNlY3JldA==\n";

    fn documents() -> Vec<PolicyDocument> {
        yaml::parse_documents(SECRETS)
            .unwrap()
            .into_iter()
            .map(|document| PolicyDocument {
                document,
                origin: "secrets.yaml".into(),
                positions: true,
                dir: None,
                supplies: true,
            })
            .collect()
    }

    fn config_json(c: &RegistryCredential) -> Value {
        match c {
            RegistryCredential::Secret { config_json, .. } => {
                serde_json::from_str(config_json.expose()).unwrap()
            }
            other => panic!("not a Secret: {other:?}"),
        }
    }

    #[test]
    fn pull_secrets_become_registry_credentials() {
        let files = [InputFile {
            origin: "apps/shop.yaml".into(),
            tree_path: Some("apps/shop.yaml".into()),
            text: APP,
        }];
        let catalog = collect(&files, &CollectOptions::default()).unwrap();
        let env = Env([("DB_CREDS", "dbuser:dbpass")].into());
        let defs = definitions(&catalog, &documents(), None, &env, None).unwrap();
        let by_alias = |alias: &str| {
            defs.iter()
                .find(|d| d.key.name == format!("shop/{alias}"))
                .unwrap()
        };
        let web = by_alias("web");
        assert_eq!(web.labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(
            web.kind,
            Kind::ArgoCd {
                app: "argocd/shop".into()
            }
        );
        assert_eq!(
            config_json(web.credentials.as_ref().unwrap())["auths"]["registry.example.test"]["auth"],
            "dTpw"
        );
        let api = config_json(by_alias("api").credentials.as_ref().unwrap());
        // bot:secret
        assert_eq!(api["auths"]["ghcr.io"]["auth"], "Ym90OnNlY3JldA==");
        let db = config_json(by_alias("db").credentials.as_ref().unwrap());
        assert_eq!(db["auths"]["ghcr.io"]["auth"], "ZGJ1c2VyOmRicGFzcw==");
        // Nothing of a credential shows in Debug.
        assert!(!format!("{defs:?}").contains("dTpw"));
        assert!(!format!("{defs:?}").contains("Ym90"));
    }

    #[test]
    fn missing_secrets_and_programs_are_errors_at_the_setting() {
        let text = APP
            .replace("env:DB_CREDS", "ext:/nonexistent/bin/creds")
            .replace("pullsecret:argocd/regcred", "pullsecret:argocd/absent");
        let files = [InputFile {
            origin: "apps/shop.yaml".into(),
            tree_path: Some("apps/shop.yaml".into()),
            text: &text,
        }];
        let catalog = collect(&files, &CollectOptions::default()).unwrap();
        let errors =
            definitions(&catalog, &documents(), None, &Env(BTreeMap::new()), None).unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages
                .iter()
                .any(|m| m.contains("no Secret argocd/absent"))
        );
        assert!(
            messages
                .iter()
                .any(|m| m.contains("pull secret ext:/nonexistent/bin/creds: ")
                    && m.contains("No such file"))
        );
        assert!(messages.iter().all(|m| m.starts_with("apps/shop.yaml:")));
    }

    #[test]
    fn programs_inside_the_tree_are_never_run() {
        let outside = tempfile::tempdir().unwrap();
        let tree = tempfile::tempdir().unwrap();
        let program = outside.path().join("creds");
        fs_err::write(&program, "#!/bin/sh\necho u:p\n").unwrap();
        let inside = tree.path().join("creds");
        fs_err::write(&inside, "#!/bin/sh\necho u:p\n").unwrap();
        let link_in = outside.path().join("link-in");
        std::os::unix::fs::symlink(&inside, &link_in).unwrap();
        let link_out = tree.path().join("link-out");
        std::os::unix::fs::symlink(&program, &link_out).unwrap();
        let resolved = fs_err::canonicalize(&program).unwrap();
        match program_credential(program.to_str().unwrap(), Some(tree.path())).unwrap() {
            RegistryCredential::Program { path, given, .. } => {
                assert_eq!(path, resolved);
                assert_eq!(given, program.to_str().unwrap());
            }
            other => panic!("{other:?}"),
        }
        for refused in [&inside, &link_in, &link_out] {
            let e = program_credential(refused.to_str().unwrap(), Some(tree.path())).unwrap_err();
            assert!(e.contains("inside the tree being updated"), "{e}");
        }
        assert!(
            program_credential("relative/creds", None)
                .unwrap_err()
                .contains("absolute path")
        );
    }

    #[test]
    fn env_pull_secrets_cannot_name_the_tools_own_credentials() {
        for variable in [
            "IMAGE_UPDATE_GIT_TOKEN",
            "IMAGE_UPDATE_REGISTRY_GHCR_IO",
            "INPUT_TOKEN",
            "GITHUB_TOKEN",
            "ACTIONS_RUNTIME_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "AZURE_CLIENT_SECRET",
        ] {
            let text = APP.replace("env:DB_CREDS", &format!("env:{variable}"));
            let files = [InputFile {
                origin: "apps/shop.yaml".into(),
                tree_path: Some("apps/shop.yaml".into()),
                text: &text,
            }];
            let catalog = collect(&files, &CollectOptions::default()).unwrap();
            let env = Env([(variable_static(variable), "user:token")].into());
            let errors = definitions(&catalog, &documents(), None, &env, None).unwrap_err();
            let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
            assert!(
                messages
                    .iter()
                    .any(|m| m.contains(&format!("env:{variable}: variables named"))),
                "{messages:?}"
            );
        }
    }

    const SIGNED: &str = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: shop, namespace: argocd}\nspec:\n  source: {repoURL: https://git.example.test/fleet, path: shop, kustomize: {}}\n---\napiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: fleet, namespace: argocd}\nspec:\n  imagesVerification:\n    cosignKey: {secretName: org-key, key: cosign.pub}\n  applicationRefs:\n  - namePattern: shop\n    images:\n    - {alias: web, imageName: 'ghcr.io/acme/web:^1'}\n";

    fn catalog_of(text: &str, fetching: bool) -> Catalog<'_> {
        let files = [InputFile {
            origin: "apps/shop.yaml".into(),
            tree_path: Some("apps/shop.yaml".into()),
            text,
        }];
        let options = CollectOptions {
            fetching,
            ..CollectOptions::default()
        };
        collect(&files, &options).unwrap()
    }

    fn key_secret(pem: &str, field: &str) -> Vec<PolicyDocument> {
        let text = format!(
            "apiVersion: v1\nkind: Secret\nmetadata: {{name: org-key, namespace: argocd}}\ndata:\n  {field}: {}\n",
            base64::engine::general_purpose::STANDARD.encode(pem)
        );
        yaml::parse_documents(&text)
            .unwrap()
            .into_iter()
            .map(|document| PolicyDocument {
                document,
                origin: "keys.yaml".into(),
                positions: true,
                dir: None,
                supplies: true,
            })
            .collect()
    }

    /// `imagesVerification.cosignKey` becomes a signer the gate requires, read from the Secret
    /// among the documents, else from `--secrets-dir` (the layout of a Secret volume, its
    /// symlinks included); a key that cannot be had is an error at the field.
    #[test]
    fn images_verification_is_a_required_signer() {
        let pem = image_update_testkit::sigstore::TestKey::p256().public_pem();
        let env = Env(BTreeMap::new());
        // Without fetching, nothing checks a result: the image is left alone, with a warning.
        let catalog = catalog_of(SIGNED, false);
        assert!(catalog.selections.is_empty());
        assert!(
            catalog.diagnostics[0]
                .to_string()
                .contains("must be signed with the key cosign.pub of Secret argocd/org-key (imagesVerification), which only a fetched result is checked against"),
            "{:?}",
            catalog.diagnostics
        );
        let catalog = catalog_of(SIGNED, true);
        let signers = |defs: &[Definition]| -> Vec<String> {
            defs[0]
                .gate
                .verify
                .iter()
                .flat_map(|v| &v.keys)
                .map(|k| format!("{:?} {}", k.name, k.pem.as_deref() == Some(pem.as_str())))
                .collect()
        };
        let defs =
            definitions(&catalog, &key_secret(&pem, "cosign.pub"), None, &env, None).unwrap();
        assert_eq!(
            signers(&defs),
            ["Some(\"cosign.pub of Secret argocd/org-key\") true"]
        );
        let error = |documents: &[PolicyDocument], dir: Option<&Path>| -> String {
            let errors = definitions(&catalog, documents, dir, &env, None).unwrap_err();
            assert_eq!(errors.len(), 1, "{errors:?}");
            errors[0].to_string()
        };
        let message = error(&key_secret(&pem, "other.pub"), None);
        assert!(
            message.starts_with("apps/shop.yaml:12:16: error: apps/shop.yaml (Application argocd/shop, image \"web\"): imagesVerification.cosignKey: Secret argocd/org-key in keys.yaml has no field \"cosign.pub\""),
            "{message}"
        );
        let message = error(&key_secret("not a key", "cosign.pub"), None);
        assert!(
            message.contains(
                "cosign.pub of Secret argocd/org-key is not a public key: no PEM PUBLIC KEY block"
            ),
            "{message}"
        );
        assert!(!message.contains("not a key"), "{message}");
        assert!(
            error(&[], None).contains("no Secret argocd/org-key among the policy documents (--policies files, the package's items), and no --secrets-dir where it is mounted")
        );
        // Mounted as Kubernetes mounts a Secret volume: KEY -> ..data/KEY, ..data -> ..TIMESTAMP.
        let dir = tempfile::tempdir().unwrap();
        let mounted = dir.path().join("org-key");
        fs_err::create_dir_all(mounted.join("..2026_01_01_00_00_00.1")).unwrap();
        fs_err::write(mounted.join("..2026_01_01_00_00_00.1/cosign.pub"), &pem).unwrap();
        std::os::unix::fs::symlink("..2026_01_01_00_00_00.1", mounted.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/cosign.pub", mounted.join("cosign.pub")).unwrap();
        let defs = definitions(&catalog, &[], Some(dir.path()), &env, None).unwrap();
        assert_eq!(
            signers(&defs),
            ["Some(\"cosign.pub of Secret argocd/org-key\") true"]
        );
        // A link out of the directory is not followed.
        let outside = tempfile::tempdir().unwrap();
        fs_err::write(outside.path().join("cosign.pub"), &pem).unwrap();
        fs_err::remove_file(mounted.join("cosign.pub")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("cosign.pub"),
            mounted.join("cosign.pub"),
        )
        .unwrap();
        let message = error(&[], Some(dir.path()));
        assert!(message.contains("--secrets-dir: "), "{message}");
        fs_err::remove_file(mounted.join("cosign.pub")).unwrap();
        let message = error(&[], Some(dir.path()));
        assert!(message.contains("and no file "), "{message}");
    }

    fn variable_static(name: &str) -> &'static str {
        Box::leak(name.to_owned().into_boxed_str())
    }
}
