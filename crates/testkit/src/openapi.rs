//! A provider's published API description (OpenAPI 3 or Swagger 2, JSON) as a test oracle.
//!
//! A loopback fake of a forge checks every request it receives against the description
//! ([`ApiDescription::check_request`]: the operation must exist for the method and path, every
//! path and query parameter must be declared and of its type, the JSON body must validate
//! against the operation's schema and hold no field the schema does not name), and checks every
//! answer it gives ([`ApiDescription::check_response`]: the status must be documented for the
//! operation and the body must validate against its schema). [`ApiDescription::sample`] builds
//! the smallest answer the schema accepts, which a fake then fills with its state, so that the
//! fake answers with every field the provider's clients may rely on.
//!
//! Schemas are validated with the `jsonschema` crate (draft 7) after two rewrites: OpenAPI's
//! `nullable: true` and Swagger's `x-nullable: true` become "or null", and examples are dropped.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};

/// Where the API descriptions installed by `scripts/api-descriptions.sh` are:
/// `IMAGE_UPDATE_API_DESCRIPTIONS`, else `target/api-descriptions` of the workspace.
#[must_use]
pub fn descriptions_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("IMAGE_UPDATE_API_DESCRIPTIONS") {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/api-descriptions")
        .components()
        .collect()
}

/// The committed descriptions of this crate (`api/`).
#[must_use]
pub fn committed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("api")
}

/// The operation a request matched.
#[derive(Clone, Debug)]
pub struct Matched {
    /// `get`, `post`...
    pub method: String,
    /// The path template, e.g. `/repos/{owner}/{repo}/pulls`.
    pub template: String,
    /// The operation's id, when it has one.
    pub operation_id: String,
    /// Path parameters, decoded.
    pub params: HashMap<String, String>,
    /// Query parameters, decoded.
    pub query: Vec<(String, String)>,
    /// The JSON body (`Null` when there is none).
    pub body: Value,
}

struct Operation {
    method: String,
    template: String,
    segments: Vec<String>,
    item: Value,
    op: Value,
}

/// A loaded description.
pub struct ApiDescription {
    /// The file it came from.
    pub path: PathBuf,
    swagger2: bool,
    base_path: String,
    doc: Arc<Value>,
    operations: Vec<Operation>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl std::fmt::Debug for ApiDescription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiDescription")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl ApiDescription {
    /// Loads a description. `base_path` is stripped from request paths (`/api/v1`); the
    /// description's own `basePath` (Swagger) is used when it is `None`.
    ///
    /// # Errors
    /// An unreadable file or a document that is not an API description.
    pub fn load(path: &Path, base_path: Option<&str>) -> Result<ApiDescription, String> {
        let text = fs_err::read(path).map_err(|e| e.to_string())?;
        let mut doc: Value =
            serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let swagger2 = doc.get("swagger").is_some();
        if !swagger2 && doc.get("openapi").is_none() {
            return Err(format!(
                "{}: not an OpenAPI or Swagger document",
                path.display()
            ));
        }
        let base_path = base_path
            .map(str::to_owned)
            .or_else(|| {
                doc.get("basePath")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned();
        if let Some(components) = doc.get_mut("components").and_then(Value::as_object_mut) {
            components.remove("examples");
        }
        rewrite(&mut doc);
        let mut operations = Vec::new();
        if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
            for (template, item) in paths {
                for method in ["get", "put", "post", "delete", "patch", "head", "options"] {
                    if let Some(op) = item.get(method) {
                        operations.push(Operation {
                            method: method.to_owned(),
                            template: template.clone(),
                            segments: template
                                .trim_start_matches('/')
                                .split('/')
                                .map(str::to_owned)
                                .collect(),
                            item: item.clone(),
                            op: op.clone(),
                        });
                    }
                }
            }
        }
        Ok(ApiDescription {
            path: path.to_owned(),
            swagger2,
            base_path,
            doc: Arc::new(doc),
            operations,
            validators: Mutex::new(HashMap::new()),
        })
    }

    /// The operation `method` + `target` (path and query) names, checked with its body.
    ///
    /// # Errors
    /// Every way the request departs from the description.
    pub fn check_request(
        &self,
        method: &str,
        target: &str,
        body: &[u8],
    ) -> Result<Matched, String> {
        let method = method.to_ascii_lowercase();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let Some(rest) = path.strip_prefix(&self.base_path) else {
            return Err(format!(
                "{path} is not under the API's base path {}",
                self.base_path
            ));
        };
        let segments: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
        let mut best: Option<(usize, &Operation, HashMap<String, String>)> = None;
        let mut path_exists = false;
        for op in &self.operations {
            let Some(params) = match_path(&op.segments, &segments) else {
                continue;
            };
            path_exists = true;
            if op.method != method {
                continue;
            }
            let literal = op.segments.iter().filter(|s| !s.contains('{')).count();
            if best.as_ref().is_none_or(|(l, _, _)| literal > *l) {
                best = Some((literal, op, params));
            }
        }
        let Some((_, op, params)) = best else {
            return Err(if path_exists {
                format!(
                    "the description has no {} operation on {path}",
                    method.to_uppercase()
                )
            } else {
                format!("the description has no path matching {path}")
            });
        };
        let query: Vec<(String, String)> = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (
                    crate::registry::percent_decode(k),
                    crate::registry::percent_decode(v),
                )
            })
            .collect();
        let name = format!("{} {}", method.to_uppercase(), op.template);
        let parameters = self.parameters(op);
        for (key, value) in &query {
            let Some(param) = parameters
                .iter()
                .find(|p| p["in"] == "query" && p["name"] == key.as_str())
            else {
                return Err(format!(
                    "{name}: the query parameter `{key}` is not in the description"
                ));
            };
            check_scalar(self.param_schema(param), value)
                .map_err(|e| format!("{name}: query parameter `{key}`={value:?}: {e}"))?;
        }
        for param in &parameters {
            let pname = param["name"].as_str().unwrap_or("");
            match param["in"].as_str() {
                Some("path") => {
                    let Some(value) = params.get(pname) else {
                        return Err(format!("{name}: no path parameter `{pname}`"));
                    };
                    check_scalar(self.param_schema(param), value)
                        .map_err(|e| format!("{name}: path parameter `{pname}`={value:?}: {e}"))?;
                }
                Some("query")
                    if param["required"] == true && !query.iter().any(|(k, _)| k == pname) =>
                {
                    return Err(format!(
                        "{name}: the required query parameter `{pname}` is missing"
                    ));
                }
                _ => {}
            }
        }
        let body_schema = if self.swagger2 {
            parameters
                .iter()
                .find(|p| p["in"] == "body")
                .map(|p| (p["schema"].clone(), p["required"] == true))
        } else {
            let request_body = self.resolve(&op.op["requestBody"]);
            request_body["content"]["application/json"]["schema"]
                .is_object()
                .then(|| {
                    (
                        request_body["content"]["application/json"]["schema"].clone(),
                        request_body["required"] == true,
                    )
                })
        };
        let body_value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            serde_json::from_slice(body)
                .map_err(|e| format!("{name}: the body is not JSON: {e}"))?
        };
        match (&body_schema, &body_value) {
            (None, Value::Null) => {}
            (None, _) => return Err(format!("{name}: sent a body, but the operation takes none")),
            (Some((_, true)), Value::Null) => {
                return Err(format!("{name}: the operation requires a body"));
            }
            (Some(_), Value::Null) => {}
            (Some((schema, _)), value) => {
                self.validate(&format!("{name} request"), schema, value)?;
                let mut unknown = Vec::new();
                self.unknown_fields(schema, value, "", &mut unknown, 0);
                if !unknown.is_empty() {
                    return Err(format!(
                        "{name}: the body has fields the description does not name: {}",
                        unknown.join(", ")
                    ));
                }
            }
        }
        Ok(Matched {
            method,
            template: op.template.clone(),
            operation_id: op.op["operationId"].as_str().unwrap_or("").to_owned(),
            params,
            query,
            body: body_value,
        })
    }

    /// Checks an answer to `matched`: the status must be documented and the body valid.
    ///
    /// # Errors
    /// What is wrong with the answer.
    pub fn check_response(
        &self,
        matched: &Matched,
        status: u16,
        body: &Value,
    ) -> Result<(), String> {
        let name = format!("{} {}", matched.method.to_uppercase(), matched.template);
        let schema = self
            .response_schema(matched, status)
            .ok_or_else(|| format!("{name}: status {status} is not a documented answer"))?;
        match schema {
            Some(schema) => self.validate(&format!("{name} {status}"), &schema, body),
            None if body.is_null() => Ok(()),
            None => Ok(()),
        }
    }

    /// Whether `status` is a documented answer of `matched`.
    #[must_use]
    pub fn documents(&self, matched: &Matched, status: u16) -> bool {
        self.response_schema(matched, status).is_some()
    }

    /// Validates `body` against the component (`#/components/schemas/NAME` or
    /// `#/definitions/NAME`) named `pointer`.
    ///
    /// # Errors
    /// The validation errors.
    pub fn check_component(&self, pointer: &str, body: &Value) -> Result<(), String> {
        self.validate(pointer, &json!({ "$ref": pointer }), body)
    }

    /// The smallest body the schema of `matched`'s `status` answer accepts.
    #[must_use]
    pub fn sample(&self, matched: &Matched, status: u16) -> Value {
        match self.response_schema(matched, status) {
            Some(Some(schema)) => self.sample_schema(&schema, 0),
            _ => Value::Null,
        }
    }

    /// The smallest value a schema accepts.
    #[must_use]
    pub fn sample_schema(&self, schema: &Value, depth: usize) -> Value {
        let schema = self.resolve(schema);
        if depth > 24 {
            return Value::Null;
        }
        if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
            let mut out = Map::new();
            for part in all {
                if let Value::Object(o) = self.sample_schema(part, depth + 1) {
                    out.extend(o);
                }
            }
            if let Value::Object(o) = self.sample_object(&schema, depth) {
                out.extend(o);
            }
            return Value::Object(out);
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(key).and_then(Value::as_array) {
                if options.iter().any(|o| self.resolve(o)["type"] == "null") {
                    return Value::Null;
                }
                if let Some(first) = options.first() {
                    return self.sample_schema(first, depth + 1);
                }
            }
        }
        if let Some(first) = schema
            .get("enum")
            .and_then(Value::as_array)
            .and_then(|e| e.first())
        {
            return first.clone();
        }
        let ty = match &schema["type"] {
            Value::String(t) => t.clone(),
            Value::Array(types) if types.iter().any(|t| t == "null") => return Value::Null,
            Value::Array(types) => types
                .first()
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
            _ if schema.get("properties").is_some() => "object".to_owned(),
            _ => String::new(),
        };
        match ty.as_str() {
            "object" => self.sample_object(&schema, depth),
            "array" => {
                let min = schema["minItems"].as_u64().unwrap_or(0);
                if min == 0 {
                    json!([])
                } else {
                    Value::Array(
                        (0..min)
                            .map(|_| self.sample_schema(&schema["items"], depth + 1))
                            .collect(),
                    )
                }
            }
            "string" => match schema["format"].as_str() {
                Some("date-time") => json!("2026-01-02T03:04:05Z"),
                Some("date") => json!("2026-01-02"),
                Some("uri" | "url") => json!("https://forge.example/x"),
                Some("email") => json!("bot@forge.example"),
                _ => {
                    let min = schema["minLength"].as_u64().unwrap_or(1).max(1);
                    Value::String("x".repeat(usize::try_from(min).unwrap_or(1)))
                }
            },
            "integer" | "number" => json!(schema["minimum"].as_i64().unwrap_or(1).max(1)),
            "boolean" => json!(false),
            "null" => Value::Null,
            _ => json!({}),
        }
    }

    /// The smallest value of the schema found by walking `path` from `schema`: property
    /// names, and `[]` for an array's items (through `$ref`s and `allOf`).
    #[must_use]
    pub fn sample_at(&self, schema: &Value, path: &[&str]) -> Value {
        let mut current = self.resolve(schema);
        for step in path {
            let next = if *step == "[]" {
                current["items"].clone()
            } else {
                let mut found = current["properties"][*step].clone();
                if found.is_null() {
                    for branch in current["allOf"].as_array().into_iter().flatten() {
                        let branch = self.resolve(branch);
                        if !branch["properties"][*step].is_null() {
                            found = branch["properties"][*step].clone();
                            break;
                        }
                    }
                }
                found
            };
            current = self.resolve(&next);
        }
        self.sample_schema(&current, 0)
    }

    fn sample_object(&self, schema: &Value, depth: usize) -> Value {
        let mut out = Map::new();
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in required {
            let property = &schema["properties"][name];
            out.insert(name.to_owned(), self.sample_schema(property, depth + 1));
        }
        Value::Object(out)
    }

    /// `Some(None)`: documented without a body schema; `None`: not documented.
    fn response_schema(&self, matched: &Matched, status: u16) -> Option<Option<Value>> {
        let op = self
            .operations
            .iter()
            .find(|o| o.method == matched.method && o.template == matched.template)?;
        let responses = &op.op["responses"];
        let response = responses
            .get(status.to_string())
            .or_else(|| responses.get(format!("{}XX", status / 100)))
            .or_else(|| responses.get("default"))?;
        let response = self.resolve(response);
        let schema = if self.swagger2 {
            response.get("schema").cloned()
        } else {
            response["content"]
                .as_object()
                .and_then(|c| c.get("application/json").or_else(|| c.values().next()))
                .and_then(|m| m.get("schema"))
                .cloned()
        };
        Some(schema)
    }

    fn parameters(&self, op: &Operation) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for list in [&op.item["parameters"], &op.op["parameters"]] {
            for param in list.as_array().into_iter().flatten() {
                let param = self.resolve(param);
                out.retain(|p| !(p["name"] == param["name"] && p["in"] == param["in"]));
                out.push(param);
            }
        }
        out
    }

    fn param_schema(&self, param: &Value) -> Value {
        if param.get("schema").is_some() {
            self.resolve(&param["schema"])
        } else {
            param.clone()
        }
    }

    /// Follows `$ref`s (`#/...` pointers into the document).
    fn resolve(&self, value: &Value) -> Value {
        let mut value = value.clone();
        for _ in 0..16 {
            let Some(pointer) = value.get("$ref").and_then(Value::as_str) else {
                return value;
            };
            let Some(target) = pointer.strip_prefix('#').and_then(|p| self.doc.pointer(p)) else {
                return value;
            };
            value = target.clone();
        }
        value
    }

    fn validate(&self, what: &str, schema: &Value, value: &Value) -> Result<(), String> {
        let key = schema.to_string();
        let validator = {
            let cached = self.validators.lock().unwrap().get(&key).cloned();
            match cached {
                Some(v) => v,
                None => {
                    let mut root = Map::new();
                    root.insert("$ref".into(), json!("#/x-validated"));
                    root.insert("x-validated".into(), schema.clone());
                    for key in ["components", "definitions", "responses", "parameters"] {
                        if let Some(v) = self.doc.get(key) {
                            root.insert(key.into(), v.clone());
                        }
                    }
                    let validator = jsonschema::options()
                        .with_draft(jsonschema::Draft::Draft7)
                        .should_validate_formats(false)
                        .build(&Value::Object(root))
                        .map_err(|e| {
                            format!("{what}: the description's schema does not compile: {e}")
                        })?;
                    let validator = Arc::new(validator);
                    self.validators
                        .lock()
                        .unwrap()
                        .insert(key, Arc::clone(&validator));
                    validator
                }
            }
        };
        let errors: Vec<String> = validator
            .iter_errors(value)
            .take(5)
            .map(|e| format!("{} at `{}`", e, e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("{what}: does not validate: {}", errors.join("; ")))
        }
    }

    /// Object fields of `value` that `schema` names nowhere (`properties` of the schema, its
    /// `allOf`/`anyOf`/`oneOf` branches, unless `additionalProperties` allows any).
    fn unknown_fields(
        &self,
        schema: &Value,
        value: &Value,
        at: &str,
        out: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 16 {
            return;
        }
        let schema = self.resolve(schema);
        match value {
            Value::Object(fields) => {
                let mut names: HashMap<String, Value> = HashMap::new();
                let mut open = false;
                self.collect_properties(&schema, &mut names, &mut open, 0);
                if open {
                    return;
                }
                for (key, field) in fields {
                    match names.get(key) {
                        Some(sub) => {
                            self.unknown_fields(sub, field, &format!("{at}.{key}"), out, depth + 1)
                        }
                        None => out.push(format!("`{at}.{key}`")),
                    }
                }
            }
            Value::Array(items) => {
                let item_schema = self.resolve(&schema["items"]);
                if item_schema.is_object() {
                    for (i, item) in items.iter().enumerate() {
                        self.unknown_fields(
                            &item_schema,
                            item,
                            &format!("{at}[{i}]"),
                            out,
                            depth + 1,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    fn collect_properties(
        &self,
        schema: &Value,
        names: &mut HashMap<String, Value>,
        open: &mut bool,
        depth: usize,
    ) {
        if depth > 16 {
            return;
        }
        let schema = self.resolve(schema);
        if let Some(props) = schema["properties"].as_object() {
            for (k, v) in props {
                names.insert(k.clone(), v.clone());
            }
        }
        match &schema["additionalProperties"] {
            Value::Bool(true) => *open = true,
            Value::Object(o) if !o.is_empty() => *open = true,
            _ => {}
        }
        let mut branches = false;
        for key in ["allOf", "anyOf", "oneOf"] {
            for branch in schema[key].as_array().into_iter().flatten() {
                branches = true;
                let branch = self.resolve(branch);
                if branch["type"] == "object"
                    || branch.get("properties").is_some()
                    || branch.get("allOf").is_some()
                {
                    self.collect_properties(&branch, names, open, depth + 1);
                }
            }
        }
        if schema.get("properties").is_none() && !branches && schema["type"] != "object" {
            *open = true;
        }
        if schema["type"] == "object" && schema.get("properties").is_none() && !branches {
            *open = true;
        }
    }
}

/// A path against a template's segments: the path parameters, or `None`.
fn match_path(template: &[String], path: &[&str]) -> Option<HashMap<String, String>> {
    if template.len() != path.len() {
        return None;
    }
    let mut params = HashMap::new();
    for (t, p) in template.iter().zip(path) {
        let p = crate::registry::percent_decode(p);
        if !t.contains('{') {
            if *t != p {
                return None;
            }
            continue;
        }
        if t.starts_with('{') && t.ends_with('}') && t.matches('{').count() == 1 {
            if p.is_empty() {
                return None;
            }
            params.insert(t[1..t.len() - 1].to_owned(), p);
            continue;
        }
        // `{index}.{diffType}`: literal text between parameters.
        let pattern = regex_of(t);
        let caps = pattern.0.captures(&p)?;
        for name in &pattern.1 {
            params.insert(name.clone(), caps.name(name)?.as_str().to_owned());
        }
    }
    Some(params)
}

fn regex_of(template: &str) -> (regex::Regex, Vec<String>) {
    let mut pattern = String::from("^");
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        let name = rest[open + 1..close].to_owned();
        pattern.push_str(&format!("(?P<{name}>[^./]+)"));
        names.push(name);
        rest = &rest[(close + 1).min(rest.len())..];
    }
    pattern.push_str(&regex::escape(rest));
    pattern.push('$');
    (regex::Regex::new(&pattern).unwrap(), names)
}

/// A path or query value against a scalar schema (`type`, `enum`, `minimum`).
fn check_scalar(schema: Value, value: &str) -> Result<(), String> {
    let ty = schema["type"].as_str().unwrap_or("string");
    match ty {
        "integer" => {
            let n: i64 = value.parse().map_err(|_| "not an integer".to_owned())?;
            if let Some(min) = schema["minimum"].as_i64()
                && n < min
            {
                return Err(format!("below the minimum {min}"));
            }
        }
        "number" => {
            value
                .parse::<f64>()
                .map_err(|_| "not a number".to_owned())?;
        }
        "boolean" if value != "true" && value != "false" => {
            return Err("not a boolean".to_owned());
        }
        "array" => {
            for item in value.split(',') {
                check_scalar(schema["items"].clone(), item)?;
            }
            return Ok(());
        }
        _ => {}
    }
    if let Some(values) = schema["enum"].as_array()
        && !values.iter().any(|v| {
            v.as_str() == Some(value) || (!v.is_string() && v.to_string().as_str() == value)
        })
    {
        return Err(format!("not one of {}", Value::Array(values.clone())));
    }
    Ok(())
}

/// Rewrites the document for a JSON Schema validator: `nullable` and `x-nullable` become "or
/// null"; `example` keywords are dropped.
fn rewrite(value: &mut Value) {
    rewrite_in(value, false);
}

/// `names`: `value` is a map of property names (whose keys are not keywords).
fn rewrite_in(value: &mut Value, names: bool) {
    match value {
        Value::Object(map) => {
            if !names {
                map.remove("example");
            }
            for (key, v) in map.iter_mut() {
                rewrite_in(v, !names && key == "properties");
            }
            if names {
                return;
            }
            let a = map.remove("nullable") == Some(Value::Bool(true));
            let b = map.remove("x-nullable") == Some(Value::Bool(true));
            let nullable = a || b;
            if nullable {
                let inner = Value::Object(std::mem::take(map));
                map.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_in(v, false)),
        _ => {}
    }
}
