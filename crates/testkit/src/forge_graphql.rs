//! GitHub's GraphQL mutation for auto-merge, checked against GitHub's published GraphQL schema
//! (npm `@octokit/graphql-schema`, its introspection `schema.json`): the mutation must exist,
//! its input fields and variables must have the schema's names and types, enum values must be
//! the schema's, and every selected field must exist on the payload.
//!
//! Only the form the client sends is understood: one mutation with `input: { ... }` whose values
//! are variables, and a flat selection.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::openapi::descriptions_dir;

/// The schema's types by name.
fn types() -> Result<&'static HashMap<String, Value>, String> {
    static TYPES: OnceLock<Result<HashMap<String, Value>, String>> = OnceLock::new();
    TYPES
        .get_or_init(|| {
            let path = descriptions_dir().join("github-graphql.json");
            let text = fs_err::read(&path).map_err(|e| e.to_string())?;
            let doc: Value = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
            let schema = doc.get("data").unwrap_or(&doc)["__schema"].clone();
            let mut types = HashMap::new();
            for t in schema["types"].as_array().into_iter().flatten() {
                if let Some(name) = t["name"].as_str() {
                    types.insert(name.to_owned(), t.clone());
                }
            }
            let mutation = schema["mutationType"]["name"]
                .as_str()
                .unwrap_or("Mutation");
            if let Some(m) = types.get(mutation).cloned() {
                types.insert("__Mutation".into(), m);
            }
            Ok(types)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// `NON_NULL(X)` -> (`X`, required).
fn named(ty: &Value) -> (String, bool) {
    if ty["kind"] == "NON_NULL" {
        return (named(&ty["ofType"]).0, true);
    }
    (ty["name"].as_str().unwrap_or("").to_owned(), false)
}

/// Checks a GraphQL request body (`query` and `variables`).
///
/// # Errors
/// What does not match GitHub's schema.
pub fn check(body: &Value) -> Result<(), String> {
    let types = types()?;
    let query = body["query"].as_str().ok_or("no query")?;
    let shape = regex::Regex::new(
        r"^\s*mutation\s*\(([^)]*)\)\s*\{\s*(\w+)\s*\(\s*input:\s*\{([^}]*)\}\s*\)\s*\{([^}]*)\}\s*\}\s*$",
    )
    .unwrap();
    let caps = shape
        .captures(query)
        .ok_or_else(|| format!("not a mutation of the form the client sends: {query}"))?;
    let mut variables = HashMap::new();
    for def in regex::Regex::new(r"\$(\w+)\s*:\s*([\w!\[\]]+)")
        .unwrap()
        .captures_iter(&caps[1])
    {
        variables.insert(def[1].to_owned(), def[2].to_owned());
    }
    let field = types["__Mutation"]["fields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|f| f["name"] == caps[2])
        .ok_or_else(|| format!("GitHub has no mutation {}", &caps[2]))?;
    let input_arg = field["args"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["name"] == "input")
        .ok_or("the mutation takes no input")?;
    let input_type = &types[&named(&input_arg["type"]).0];
    let fields: HashMap<String, Value> = input_type["inputFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| Some((f["name"].as_str()?.to_owned(), f["type"].clone())))
        .collect();
    let mut given = Vec::new();
    for pair in regex::Regex::new(r"(\w+)\s*:\s*\$(\w+)")
        .unwrap()
        .captures_iter(&caps[3])
    {
        let (key, var) = (&pair[1], &pair[2]);
        let ty = fields
            .get(key)
            .ok_or_else(|| format!("{} has no input field {key}", input_type["name"]))?;
        let declared = variables
            .get(var)
            .ok_or_else(|| format!("variable ${var} is not declared"))?;
        let (ty_name, _) = named(ty);
        if declared.trim_end_matches('!') != ty_name {
            return Err(format!(
                "{key} is {ty_name}, the variable ${var} is {declared}"
            ));
        }
        let value = &body["variables"][var];
        match types.get(&ty_name).map(|t| t["kind"].clone()) {
            Some(Value::String(kind)) if kind == "ENUM" => {
                let ok = types[&ty_name]["enumValues"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|v| v["name"] == *value);
                if !ok {
                    return Err(format!("{value} is not a {ty_name}"));
                }
            }
            Some(_) if ty_name == "ID" || ty_name == "String" => {
                if !value.is_string() {
                    return Err(format!("${var} is not a string"));
                }
            }
            Some(_) => {}
            None => return Err(format!("GitHub has no type {ty_name}")),
        }
        given.push(key.to_owned());
    }
    for (name, ty) in &fields {
        if named(ty).1 && !given.contains(name) {
            return Err(format!("the required input field {name} is missing"));
        }
    }
    let payload = &types[&named(&field["type"]).0];
    for selected in caps[4].split_whitespace() {
        if !payload["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|f| f["name"] == selected)
        {
            return Err(format!("{} has no field {selected}", payload["name"]));
        }
    }
    Ok(())
}
