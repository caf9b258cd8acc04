//! The CustomResourceDefinitions in `deploy/crds/`, checked the way a cluster
//! would check them, without a cluster:
//!
//! * each CRD is a valid `apiextensions.k8s.io/v1` object for every
//!   Kubernetes minor version from 1.30 to the newest PyPI's
//!   `kubernetes-validate` knows (strict:
//!   unknown fields are errors), and its schema is **structural** (the rules
//!   the API server enforces before it serves a CRD: a type on every node, no
//!   types or defaults inside `anyOf`/`allOf`/`oneOf`/`not`, fields named
//!   there also declared outside, `properties` and `additionalProperties`
//!   apart, only name restrictions on `metadata`); its printer columns point
//!   at fields of the schema; every field image-update reads from an
//!   ImageUpdater is declared;
//! * objects are validated against its `openAPIV3Schema` turned into a JSON
//!   Schema (draft 4, which OpenAPI 3.0's schema object extends), with unknown
//!   fields rejected as `kubectl apply` (strict field validation) rejects
//!   them, plus what the API server checks besides the schema (a served
//!   `apiVersion`, the `kind`, the name's syntax): seed 002's sample (one
//!   object per engine), every ImageUpdater anywhere under `testdata/`,
//!   `examples/` and `docs/`, and the objects `image-update create
//!   imageupdater` writes are accepted; each of `testdata/crd/invalid/` is
//!   rejected at the place its `# rejected at:` line names.
//!
//! PyPI's `kubernetes-validate` has no custom resources (it knows the
//! built-in kinds only), hence the JSON Schema for the objects.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // test harness code

use std::path::{Path, PathBuf};
use std::process::Command;

use image_update_testkit::{trial, trial_with};
use serde_json::{Map, Value, json};

const UPDATER_CRD: &str = "deploy/crds/gitops.kubesphere.io_imageupdaters.yaml";
const BIN: &str = env!("CARGO_BIN_EXE_image-update");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs_err::read_to_string(path).unwrap()
}

fn crd() -> Value {
    let docs = image_update::api::yaml::parse_values(&read(&root().join(UPDATER_CRD))).unwrap();
    assert_eq!(docs.len(), 1, "one CRD per file");
    docs[0].clone()
}

fn main() {
    let mut trials = vec![
        trial("crd: structural schema", &[], structural),
        trial(
            "crd: printer columns name schema fields",
            &[],
            printer_columns,
        ),
        trial(
            "crd: declares every field image-update reads",
            &[],
            fields_read_are_declared,
        ),
        trial("crd: served under the seed's REST paths", &[], names),
        trial(
            "crd: objects written by `create imageupdater` are accepted",
            &[],
            created_objects,
        ),
    ];
    trials.extend(image_update_testkit::kube::trials(
        "crd: a valid apiextensions.k8s.io/v1 object",
        || ((), vec![root().join(UPDATER_CRD)]),
    ));
    for (path, _) in fixtures("valid") {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        trials.push(trial_with(format!("valid: {name}"), &[], move || {
            let text = read(&path);
            for doc in image_update::api::yaml::parse_values(&text).unwrap() {
                validate(&doc).map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Ok(())
        }));
    }
    for (path, expected) in fixtures("invalid") {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        trials.push(trial_with(format!("invalid: {name}"), &[], move || {
            let doc = image_update::api::yaml::parse_one(&read(&path))
                .unwrap()
                .value;
            match validate(&doc) {
                Ok(()) => Err(format!("{} was accepted", path.display()).into()),
                Err(errors)
                    if errors
                        .split('\n')
                        .any(|e| e.starts_with(&format!("{expected}: "))) =>
                {
                    Ok(())
                }
                Err(errors) => Err(format!(
                    "{} was rejected, but not at {expected:?}:\n{errors}",
                    path.display()
                )
                .into()),
            }
        }));
    }
    trials.push(trial(
        "repository: every ImageUpdater is valid",
        &[],
        repository_updaters,
    ));
    image_update_testkit::run(trials);
}

/// The files of `testdata/crd/DIR`, with their `# rejected at:` pointer.
fn fixtures(dir: &str) -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = fs_err::read_dir(root().join("testdata/crd").join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .map(|p| {
            let at = read(&p)
                .lines()
                .find_map(|l| {
                    l.strip_prefix("# rejected at:")
                        .map(|s| s.trim().to_owned())
                })
                .unwrap_or_default();
            (p, at)
        })
        .collect();
    out.sort();
    out
}

/// The schema of the served version `version`, if there is one.
fn version_schema(crd: &Value, version: &str) -> Option<Value> {
    crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version && v["served"] == true)
        .map(|v| v["schema"]["openAPIV3Schema"].clone())
}

/// Validate an object as the API server would: apiVersion, kind, name, then
/// the version's schema with unknown fields refused. The errors are
/// `POINTER: message` lines.
fn validate(object: &Value) -> Result<(), String> {
    let crd = crd();
    let group = crd["spec"]["group"].as_str().unwrap();
    let kind = crd["spec"]["names"]["kind"].as_str().unwrap();
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let Some(version) = api_version
        .strip_prefix(group)
        .and_then(|v| v.strip_prefix('/'))
    else {
        return Err(format!(
            ": apiVersion {api_version:?} is not in group {group}"
        ));
    };
    let Some(schema) = version_schema(&crd, version) else {
        return Err(format!(": version {version} is not served"));
    };
    if object["kind"] != kind {
        return Err(format!(": kind {} is not {kind}", object["kind"]));
    }
    let mut errors = Vec::new();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    if !image_update::api::objects::dns_subdomain(name) {
        errors.push(format!(
            "/metadata/name: {name:?} is not a DNS-1123 subdomain"
        ));
    }
    if let Some(ns) = object["metadata"]["namespace"].as_str()
        && !image_update::api::objects::dns_label(ns)
    {
        errors.push(format!(
            "/metadata/namespace: {ns:?} is not a DNS-1123 label"
        ));
    }
    let json_schema = to_json_schema(&schema);
    let validator = jsonschema::draft4::new(&json_schema).unwrap();
    errors.extend(
        validator
            .iter_errors(object)
            .map(|e| format!("{}: {e}", e.instance_path())),
    );
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

/// An OpenAPI v3 schema of a CRD as a JSON Schema: the Kubernetes extensions
/// become what they mean (`x-kubernetes-int-or-string`: an integer or a
/// string; `x-kubernetes-preserve-unknown-fields`: anything below), and an
/// object with declared properties refuses others (strict field validation).
fn to_json_schema(schema: &Value) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in map {
        let converted = match k.as_str() {
            "properties" | "patternProperties" => Value::Object(
                v.as_object()
                    .unwrap()
                    .iter()
                    .map(|(name, s)| (name.clone(), to_json_schema(s)))
                    .collect(),
            ),
            "items" | "additionalProperties" | "not" if v.is_object() => to_json_schema(v),
            "allOf" | "anyOf" | "oneOf" => {
                Value::Array(v.as_array().unwrap().iter().map(to_json_schema).collect())
            }
            "x-kubernetes-int-or-string" if v == true => {
                out.insert(
                    "anyOf".to_owned(),
                    json!([{"type": "integer"}, {"type": "string"}]),
                );
                continue;
            }
            k if k.starts_with("x-kubernetes-") || k == "nullable" => continue,
            _ => v.clone(),
        };
        out.insert(k.clone(), converted);
    }
    let preserve = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if map.get("type") == Some(&json!("object"))
        && map.contains_key("properties")
        && !map.contains_key("additionalProperties")
        && !preserve
    {
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    Value::Object(out)
}

/// The structural-schema rules, every violation as `PATH: rule`.
fn structural_violations(node: &Value, path: &str, in_junctor: bool, out: &mut Vec<String>) {
    let Some(map) = node.as_object() else {
        out.push(format!("{path}: not a schema object"));
        return;
    };
    let flag = |k: &str| map.get(k) == Some(&Value::Bool(true));
    if in_junctor {
        for k in [
            "type",
            "description",
            "default",
            "additionalProperties",
            "nullable",
        ] {
            if map.contains_key(k) {
                out.push(format!("{path}: {k} inside allOf/anyOf/oneOf/not"));
            }
        }
        if map.keys().any(|k| k.starts_with("x-kubernetes-")) {
            out.push(format!(
                "{path}: an x-kubernetes extension inside allOf/anyOf/oneOf/not"
            ));
        }
    } else if !map.contains_key("type")
        && !flag("x-kubernetes-int-or-string")
        && !flag("x-kubernetes-preserve-unknown-fields")
    {
        out.push(format!("{path}: no type"));
    }
    if map.contains_key("properties") && map.contains_key("additionalProperties") {
        out.push(format!("{path}: both properties and additionalProperties"));
    }
    if let Some(items) = map.get("items") {
        if items.is_array() {
            out.push(format!("{path}: items is a list"));
        } else {
            structural_violations(items, &format!("{path}.items"), in_junctor, out);
        }
    }
    if let Some(Value::Object(extra)) = map.get("additionalProperties") {
        let v = Value::Object(extra.clone());
        structural_violations(&v, &format!("{path}.additionalProperties"), in_junctor, out);
    }
    let declared: Vec<&String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (name, s) in props {
            structural_violations(s, &format!("{path}.{name}"), in_junctor, out);
        }
    }
    for junctor in ["allOf", "anyOf", "oneOf", "not"] {
        let branches: Vec<&Value> = match map.get(junctor) {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v @ Value::Object(_)) => vec![v],
            _ => continue,
        };
        for (i, b) in branches.iter().enumerate() {
            let at = format!("{path}.{junctor}[{i}]");
            structural_violations(b, &at, true, out);
            if let Some(props) = b.get("properties").and_then(Value::as_object) {
                for name in props.keys() {
                    if !declared.contains(&name) {
                        out.push(format!(
                            "{at}: field {name} is not also declared outside {junctor}"
                        ));
                    }
                }
            }
        }
    }
}

fn structural() {
    let crd = crd();
    for version in crd["spec"]["versions"].as_array().unwrap() {
        let schema = &version["schema"]["openAPIV3Schema"];
        let mut violations = Vec::new();
        structural_violations(schema, "openAPIV3Schema", false, &mut violations);
        // metadata: only name and generateName may be restricted.
        if let Some(meta) = schema["properties"]["metadata"].as_object() {
            for (k, v) in meta {
                let ok = k == "type"
                    || (k == "properties"
                        && v.as_object()
                            .unwrap()
                            .keys()
                            .all(|p| p == "name" || p == "generateName"));
                if !ok {
                    violations.push(format!("openAPIV3Schema.metadata: {k} is not allowed"));
                }
            }
        }
        assert!(violations.is_empty(), "{}", violations.join("\n"));
        // The conversion is a valid JSON Schema.
        jsonschema::draft4::new(&to_json_schema(schema)).unwrap();
    }
    // And the rules are enforced: a schema breaking each one is caught.
    let broken = json!({
        "type": "object",
        "properties": {
            "a": {"properties": {"b": {"type": "string"}}},
            "c": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
        },
        "anyOf": [{"type": "object", "properties": {"z": {"enum": [1]}}}],
    });
    let mut violations = Vec::new();
    structural_violations(&broken, "s", false, &mut violations);
    assert_eq!(
        violations,
        [
            "s.a: no type",
            "s.c: both properties and additionalProperties",
            "s.anyOf[0]: type inside allOf/anyOf/oneOf/not",
            "s.anyOf[0]: field z is not also declared outside anyOf",
        ]
    );
}

/// The schema node at a dotted path (`.spec.fluxcd.interval`), if declared.
fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut node = schema;
    for part in path.trim_start_matches('.').split('.') {
        node = node.get("properties")?.get(part)?;
    }
    Some(node)
}

fn printer_columns() {
    let crd = crd();
    for version in crd["spec"]["versions"].as_array().unwrap() {
        let schema = &version["schema"]["openAPIV3Schema"];
        let columns = version["additionalPrinterColumns"].as_array().unwrap();
        assert!(columns.len() >= 4);
        for c in columns {
            let path = c["jsonPath"].as_str().unwrap();
            if path == ".metadata.creationTimestamp" {
                assert_eq!(c["type"], "date");
                continue;
            }
            let node =
                schema_at(schema, path).unwrap_or_else(|| panic!("{path} is not in the schema"));
            let ty = node["type"].as_str().unwrap();
            assert!(
                c["type"] == ty || (c["type"] == "string" && ty == "array"),
                "column {path}: {} for a {ty}",
                c["type"]
            );
        }
    }
}

/// Every field image-update reads from an ImageUpdater: the reflector's
/// (images and their policies) and the automation reader's.
fn fields_read_are_declared() {
    let crd = crd();
    let schema = version_schema(&crd, "v1alpha1").unwrap();
    let reflector = [
        ".spec.kind",
        ".spec.images",
        ".spec.argocd.update-strategy",
        ".spec.argocd.allow-tags",
        ".spec.argocd.ignore-tags",
        ".spec.argocd.platforms",
        ".spec.argocd.secret",
        ".spec.fluxcd.secret",
        ".spec.fluxcd.policy.semver.range",
        ".spec.fluxcd.policy.alphabetical.order",
        ".spec.fluxcd.policy.numerical.order",
    ];
    let automation = image_update::api::objects::IMAGE_UPDATER_FIELDS
        .iter()
        .map(|f| format!(".spec.{f}"));
    for path in reflector.iter().map(|s| (*s).to_owned()).chain(automation) {
        assert!(
            schema_at(&schema, &path).is_some(),
            "{path} is not declared"
        );
    }
}

/// The names the seed's REST paths use (`/namespaces/{namespace}/imageupdaters`).
fn names() {
    let crd = crd();
    assert_eq!(crd["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(
        crd["metadata"]["name"],
        "imageupdaters.gitops.kubesphere.io"
    );
    assert_eq!(crd["spec"]["group"], "gitops.kubesphere.io");
    assert_eq!(crd["spec"]["scope"], "Namespaced");
    assert_eq!(crd["spec"]["names"]["plural"], "imageupdaters");
    assert_eq!(crd["spec"]["names"]["kind"], "ImageUpdater");
    let versions = crd["spec"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["name"], "v1alpha1");
    assert_eq!(versions[0]["storage"], true);
    // The README lists the five paths and their kubectl commands.
    let readme = read(&root().join("README.md"));
    for path in [
        "POST /apis/gitops.kubesphere.io/v1alpha1/namespaces/{namespace}/imageupdaters",
        "GET /apis/gitops.kubesphere.io/v1alpha1/namespaces/{namespace}/imageupdaters/{imageupdater}",
        "GET /apis/gitops.kubesphere.io/v1alpha1/namespaces/{namespace}/imageupdaters",
        "PUT /apis/gitops.kubesphere.io/v1alpha1/namespaces/{namespace}/imageupdaters/{imageupdater}",
        "DELETE /apis/gitops.kubesphere.io/v1alpha1/namespaces/{namespace}/imageupdaters/{imageupdater}",
    ] {
        assert!(readme.contains(path), "the README does not list {path}");
    }
}

/// Every ImageUpdater of the repository's test data, examples and docs.
fn repository_updaters() {
    let mut found = 0;
    for dir in ["testdata", "examples", "docs"] {
        for entry in walk(&root().join(dir)) {
            if !entry.extension().is_some_and(|e| e == "yaml" || e == "yml") {
                continue;
            }
            // The invalid fixtures (`testdata/crd/invalid/`, the `err-` cases
            // of `deploy`) are meant to fail.
            if entry.starts_with(root().join("testdata/crd/invalid"))
                || entry
                    .components()
                    .any(|c| c.as_os_str().to_string_lossy().starts_with("err-"))
            {
                continue;
            }
            // Dangling symlinks and the like are fixtures of other tests.
            let Ok(text) = fs_err::read_to_string(&entry) else {
                continue;
            };
            if !text.contains("gitops.kubesphere.io") {
                continue;
            }
            let Ok(docs) = image_update::api::yaml::parse_values(&text) else {
                continue;
            };
            for doc in docs {
                if doc["kind"] == "ImageUpdater" {
                    validate(&doc).unwrap_or_else(|e| panic!("{}: {e}", entry.display()));
                    found += 1;
                }
            }
        }
    }
    assert!(found >= 5, "only {found} ImageUpdaters found");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = fs_err::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn created_objects() {
    for args in [
        vec![
            "create",
            "imageupdater",
            "demo",
            "--image",
            "nginx:^0.1",
            "--image",
            "myalias=some/image",
            "--kind",
            "argocd",
            "--app",
            "demo",
            "--app-namespace",
            "demo",
            "--write",
            "built-in",
            "--update-strategy",
            "nginx=semver",
            "--update-strategy",
            "myalias=latest",
            "--allow-tags",
            "nginx=any",
            "--ignore-tags",
            "nginx=*-dev",
            "--platforms",
            "nginx=linux/amd64",
            "--secret-ref",
            "nginx=docker-hub-secret",
        ],
        vec![
            "create",
            "imageupdater",
            "demo",
            "--namespace",
            "apps",
            "--image",
            "ghcr.io/acme/web",
            "--kind",
            "fluxcd",
            "--interval",
            "1m",
            "--git-repo-ref",
            "podinfo",
            "--checkout-branch",
            "main",
            "--author-name",
            "fluxcdbot",
            "--author-email",
            "fluxcdbot@users.noreply.github.com",
            "--commit-template",
            "{{range .Updated.Images}}{{println .}}{{end}}",
            "--push-branch",
            "main",
            "--git-repo-path",
            "./clusters/my-cluster",
            "--select-semver",
            "5.0.x",
            "--secret-ref",
            "docker-hub-secret",
            "--commit-value",
            "env=prod",
        ],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        let doc = image_update::api::yaml::parse_one(&String::from_utf8(out.stdout).unwrap())
            .unwrap()
            .value;
        validate(&doc).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
}
