//! `image-update job` as the tests run it: its outcome ([`Ran`]: exit status, the JSON status
//! on stdout, stderr), and a CronJob's or Job's container run as the kubelet runs it ([`Pod`]),
//! from the manifests `image-update deploy` writes or `deploy/*.yaml`.
//!
//! [`Pod`] lays the container's volumes out under a directory that stands for the container's
//! `/`, as the kubelet does: a ConfigMap's or Secret's files (a projected volume's too) behind
//! its `..data` link to a timestamped directory, an `emptyDir` or a claim as an empty
//! directory, the termination message file. The container's arguments and environment values
//! are then used exactly, with only the mount roots rewritten (`/config/x.yaml` is
//! `ROOT/config/x.yaml`) and `$(VAR)` expanded as Kubernetes expands it; the environment is the
//! container's alone (the Secrets' keys it names), not the test's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fs_err as fs;
use libtest_mimic::Failed;
use serde_json::Value;

/// What a run of `image-update job` left: its exit status, its status (stdout, one JSON object)
/// and stderr.
#[derive(Debug, Clone)]
pub struct Ran {
    pub code: Option<i32>,
    pub status: Value,
    pub stderr: String,
}

impl Ran {
    /// The outcome of a finished run.
    ///
    /// # Errors
    /// stdout is not one JSON object.
    pub fn of(output: &Output) -> Result<Ran, Failed> {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let status = serde_json::from_str(&stdout).map_err(|e| {
            format!("stdout is not one JSON object ({e}):\n{stdout}\nstderr:\n{stderr}")
        })?;
        Ok(Ran {
            code: output.status.code(),
            status,
            stderr,
        })
    }

    /// Runs `command` (stdin closed) and reads its outcome.
    ///
    /// # Errors
    /// The command cannot be started, or stdout is not one JSON object.
    pub fn run(command: &mut Command) -> Result<Ran, Failed> {
        Ran::of(&command.stdin(Stdio::null()).output()?)
    }

    /// Fails unless the run exited with `code` and the status's `result` is `result`.
    ///
    /// # Errors
    /// Another exit status or result, with the status and stderr.
    pub fn expect(&self, code: i32, result: &str) -> Result<(), Failed> {
        if self.code == Some(code) && self.status["result"] == result {
            Ok(())
        } else {
            Err(format!(
                "expected exit {code} and result {result:?}, got {:?}: {:#}\n{}",
                self.code, self.status, self.stderr
            )
            .into())
        }
    }
}

/// The Secrets of the cluster a [`Pod`] runs in: by name, their keys and values.
pub type Secrets<'a> = &'a [(&'a str, &'a [(&'a str, &'a str)])];

/// The directory name the kubelet's atomic writer puts a volume's files in (behind `..data`).
const TIMESTAMPED: &str = "..2026_01_01_00_00_00.000000001";

/// A workload's container, ready to run as the kubelet would run it.
#[derive(Debug, Clone)]
pub struct Pod {
    root: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Pod {
    /// The Pod of the CronJob or Job named `workload` among `objects` (the manifests, with the
    /// ConfigMaps its volumes name), laid out under `root`; `secrets` are the cluster's Secrets
    /// its volumes and environment name, and `index` the completion index of a Pod of an Indexed
    /// Job (`JOB_COMPLETION_INDEX`).
    ///
    /// # Errors
    /// No such workload; a volume, a mount or an environment source this helper does not lay out
    /// (a `hostPath`, a `subPath`, `envFrom`...); a ConfigMap, Secret or key that is missing and
    /// not optional (the kubelet would not start the container); an Indexed Job without `index`.
    pub fn of(
        objects: &[Value],
        workload: &str,
        root: &Path,
        secrets: Secrets<'_>,
        index: Option<u32>,
    ) -> Result<Pod, Failed> {
        let object = objects
            .iter()
            .find(|o| {
                matches!(o["kind"].as_str(), Some("CronJob" | "Job"))
                    && o["metadata"]["name"] == workload
            })
            .ok_or_else(|| format!("no CronJob or Job {workload} among the manifests"))?;
        let job = match object["kind"].as_str() {
            Some("CronJob") => &object["spec"]["jobTemplate"]["spec"],
            _ => &object["spec"],
        };
        let indexed = job["completionMode"] == "Indexed";
        let pod = &job["template"]["spec"];
        let containers = pod["containers"].as_array().ok_or("no containers")?;
        let [container] = containers.as_slice() else {
            return Err(format!("{workload} has {} containers, not one", containers.len()).into());
        };
        if container.get("command").is_some() {
            return Err(
                "the container sets `command`: the image's entrypoint is the binary".into(),
            );
        }
        let volumes: BTreeMap<&str, &Value> = pod["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| Some((v["name"].as_str()?, v)))
            .collect();
        let mut mounts: Vec<String> = Vec::new();
        for mount in container["volumeMounts"].as_array().into_iter().flatten() {
            if mount.get("subPath").is_some() {
                return Err(format!("{workload}: a subPath mount: {mount}").into());
            }
            let at = text(&mount["mountPath"], "mountPath")?;
            let name = text(&mount["name"], "a mount's name")?;
            let volume = volumes
                .get(name)
                .ok_or_else(|| format!("{workload}: no volume {name}"))?;
            lay_out(volume, &below(root, at), objects, secrets)?;
            mounts.push(at.to_owned());
        }
        let message = container["terminationMessagePath"]
            .as_str()
            .unwrap_or("/dev/termination-log");
        let message_file = below(root, message);
        fs::create_dir_all(
            message_file
                .parent()
                .ok_or("the termination message path")?,
        )?;
        fs::write(&message_file, "")?;
        mounts.push(message.to_owned());
        // The longest mount first, so that a mount inside another is rewritten as itself.
        mounts.sort_by_key(|m| std::cmp::Reverse(m.len()));
        let rewrite = |value: &str| -> String {
            for m in &mounts {
                let inside = value == m
                    || value
                        .strip_prefix(m.as_str())
                        .is_some_and(|rest| rest.starts_with('/'));
                if inside {
                    return below(root, value).to_string_lossy().into_owned();
                }
            }
            value.to_owned()
        };
        let mut env: Vec<(String, String)> = Vec::new();
        if indexed {
            let index = index.ok_or("an Indexed Job's Pod needs its completion index")?;
            env.push(("JOB_COMPLETION_INDEX".to_owned(), index.to_string()));
        }
        if container.get("envFrom").is_some() {
            return Err("envFrom is not laid out by this helper".into());
        }
        for var in container["env"].as_array().into_iter().flatten() {
            let name = text(&var["name"], "an environment variable's name")?;
            if let Some(value) = var["value"].as_str() {
                let value = rewrite(&expand(value, &env));
                env.push((name.to_owned(), value));
                continue;
            }
            let reference = &var["valueFrom"]["secretKeyRef"];
            if reference.is_null() {
                return Err(format!("{name}: only value and secretKeyRef are laid out").into());
            }
            let secret = text(&reference["name"], "secretKeyRef.name")?;
            let key = text(&reference["key"], "secretKeyRef.key")?;
            match secret_value(secrets, secret, key) {
                Some(value) => env.push((name.to_owned(), value.to_owned())),
                None if reference["optional"] == true => {}
                None => {
                    return Err(format!(
                        "{name}: Secret {secret} has no key {key}, and the reference is not optional: \
                         the kubelet would not start the container"
                    )
                    .into());
                }
            }
        }
        let args = container["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| Ok(rewrite(&expand(text(a, "an argument")?, &env))))
            .collect::<Result<Vec<String>, Failed>>()?;
        Ok(Pod {
            root: root.to_owned(),
            args,
            env,
        })
    }

    /// The container's arguments, their mount roots rewritten.
    #[must_use]
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// Where the container's `path` is on this machine.
    #[must_use]
    pub fn path(&self, path: &str) -> PathBuf {
        below(&self.root, path)
    }

    /// The container's command: `program` (the binary the image runs) with the container's
    /// arguments, in the container's environment only; add what stands for the network (a
    /// proxy, its CA).
    #[must_use]
    pub fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        command
    }
}

fn text<'v>(value: &'v Value, what: &str) -> Result<&'v str, Failed> {
    value
        .as_str()
        .ok_or_else(|| format!("{what} is not a string: {value}").into())
}

/// The container's `path` under `root`.
fn below(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

fn secret_value<'s>(secrets: Secrets<'s>, name: &str, key: &str) -> Option<&'s str> {
    secrets
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, keys)| keys.iter().find(|(k, _)| *k == key))
        .map(|(_, v)| *v)
}

/// `$(VAR)` of the variables defined so far, as Kubernetes expands an argument or a value
/// (`$$` is a `$`; an undefined variable stays as written).
fn expand(text: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some(after) = rest.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = rest
            .strip_prefix("$(")
            .and_then(|r| r.split_once(')'))
            .filter(|(name, _)| env.iter().any(|(k, _)| k == name))
        {
            let value = env.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v);
            out.push_str(value.map_or("", String::as_str));
            rest = after;
        } else {
            out.push('$');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The files of `volume` under `dir`, as the kubelet lays them out.
fn lay_out(
    volume: &Value,
    dir: &Path,
    objects: &[Value],
    secrets: Secrets<'_>,
) -> Result<(), Failed> {
    if volume.get("emptyDir").is_some() || volume.get("persistentVolumeClaim").is_some() {
        fs::create_dir_all(dir)?;
        return Ok(());
    }
    let mut files: Vec<(String, String)> = Vec::new();
    let sources: Vec<&Value> = match volume["projected"]["sources"].as_array() {
        Some(sources) => sources.iter().collect(),
        None => vec![volume],
    };
    for source in sources {
        if let Some(map) = source.get("configMap") {
            let name = text(&map["name"], "configMap.name")?;
            let data = objects
                .iter()
                .find(|o| o["kind"] == "ConfigMap" && o["metadata"]["name"] == name)
                .map(|o| &o["data"]);
            let Some(data) = data.and_then(Value::as_object) else {
                if map["optional"] == true {
                    continue;
                }
                return Err(format!("no ConfigMap {name} among the manifests").into());
            };
            let all: Vec<(&str, &str)> = data
                .iter()
                .map(|(k, v)| Ok((k.as_str(), text(v, "a ConfigMap value")?)))
                .collect::<Result<_, Failed>>()?;
            files.extend(items(&map["items"], &all, &format!("ConfigMap {name}"))?);
        } else if let Some(secret) = source.get("secret") {
            let name = text(
                secret.get("secretName").unwrap_or(&secret["name"]),
                "secret name",
            )?;
            let Some((_, keys)) = secrets.iter().find(|(n, _)| *n == name) else {
                if secret["optional"] == true {
                    continue;
                }
                return Err(format!("no Secret {name} in the cluster").into());
            };
            files.extend(items(&secret["items"], keys, &format!("Secret {name}"))?);
        } else {
            return Err(format!("a volume this helper does not lay out: {source}").into());
        }
    }
    let data = dir.join(TIMESTAMPED);
    let mut tops: Vec<String> = Vec::new();
    for (path, content) in &files {
        let file = data.join(path);
        fs::create_dir_all(file.parent().ok_or("a volume item's path")?)?;
        fs::write(&file, content)?;
        let top = path.split('/').next().unwrap_or(path).to_owned();
        if !tops.contains(&top) {
            tops.push(top);
        }
    }
    fs::create_dir_all(&data)?;
    std::os::unix::fs::symlink(TIMESTAMPED, dir.join("..data"))?;
    for top in tops {
        std::os::unix::fs::symlink(format!("..data/{top}"), dir.join(&top))?;
    }
    Ok(())
}

/// The files a ConfigMap's or Secret's `items` select (every key when there are none), by path.
fn items(
    selected: &Value,
    all: &[(&str, &str)],
    what: &str,
) -> Result<Vec<(String, String)>, Failed> {
    let Some(selected) = selected.as_array() else {
        return Ok(all
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect());
    };
    selected
        .iter()
        .map(|item| {
            let key = text(&item["key"], "an item's key")?;
            let path = text(&item["path"], "an item's path")?;
            let value = all
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .ok_or_else(|| format!("{what} has no key {key}"))?;
            Ok((path.to_owned(), value.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_as_kubernetes_does() {
        let env = vec![("JOB_COMPLETION_INDEX".to_owned(), "3".to_owned())];
        assert_eq!(
            expand("/config/$(JOB_COMPLETION_INDEX)/a", &env),
            "/config/3/a"
        );
        assert_eq!(
            expand("$(UNSET) $$(JOB_COMPLETION_INDEX) $", &env),
            "$(UNSET) $(JOB_COMPLETION_INDEX) $"
        );
    }
}
