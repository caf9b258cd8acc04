//! Argo CD users: Applications, Argo CD Image Updater's annotations and `ImageUpdater` CRD, and
//! KubeSphere's `kind: argocd`, written back to git byte-exactly.
//!
//! ```text
//!  files (the tree, policy files)
//!        │ collect (catalog.rs)
//!        ▼
//!  Catalog: Applications ─ AppConfigs (annotations.rs, crd.rs, kubesphere.rs)
//!           └ Selections: one per Application and image alias ──> the reflector (PolicyConfig)
//!        │                                                            │ chosen images
//!        │ plan (plan.rs), reading the target files                   ▼
//!        ▼
//!  WriteBack: FilePlans (edits + new text + changes), AppPlans (images, commit data, git branches)
//! ```
//!
//! # Inputs
//!
//! * Applications (`argoproj.io/v1alpha1`; `spec.source`, `spec.sources[]` or
//!   `spec.sourceHydrator.drySource`; Kustomize, Helm, plugin and directory sources), read by
//!   [`application`];
//! * what an Application is asked to do, from one of: its `argocd-image-updater.argoproj.io/*`
//!   annotations ([`annotations`]), an `ImageUpdater` CR of `argocd-image-updater.argoproj.io`
//!   ([`crd`]), or a KubeSphere `ImageUpdater` with `kind: argocd` ([`kubesphere`]); the rules that
//!   pick one are in [`catalog`].
//!
//! # Policy keys
//!
//! Every image of every managed Application becomes one [`catalog::Selection`]: the selection
//! engine's [`PolicyConfig`](crate::reflector::selection::PolicyConfig) (strategy from the update
//! strategy and the constraint after the image, `allow-tags`, `ignore-tags`, platforms), the
//! repository to list, and a policy key, under which the chosen image is looked up:
//!
//! * `APP_NAMESPACE:APP/ALIAS` for annotations and the CRD: the Application's namespace (the
//!   controller's, `argocd` by default, when the manifest has none), its name, and the image's
//!   alias, or without one its repository path as Argo CD Image Updater names it
//!   (`ghcr.io/acme/web` → `acme/web`, so `argocd:shop/acme/web`). Application names cannot hold
//!   `/`, so the key splits unambiguously at the first `/` of its name.
//! * `NAMESPACE:ALIAS` for a KubeSphere updater, exactly the keys the reflector's definitions
//!   already give its entries (the updater's namespace; the alias, or the image as written
//!   without its constraint): one KubeSphere updater names one Application, so its keys need no
//!   Application part.
//!
//! A key is also a valid `--policy NAMESPACE:NAME=IMAGE` key and a marker setter, so a supplied
//! result or a `$imagepolicy` marker can name an Argo image.
//!
//! # Write-back
//!
//! [`plan::plan`] takes the chosen image of each key and plans, per Application, what Argo CD Image
//! Updater would write (see [`writers`] and [`target`]): the Application itself (the `argocd`
//! method, KubeSphere's `built-in`), a `.argocd-source-APP.yaml` override file, a kustomization's
//! `images:`, or Helm value paths. Files are edited by splicing ([`crate::yaml::edit`]): a changed value keeps
//! its bytes' place and quoting, a new entry is inserted as whole lines in the file's own
//! indentation. Argo CD Image Updater re-serialises these files; the bytes that may differ from
//! its output are exactly these:
//!
//! * nothing outside the changed scalars and the inserted lines moves: comments, blank lines,
//!   key order, indentation, quoting, `---`, `%YAML`, CRLF, anchors and unknown keys stay;
//! * an existing override file's entries keep their order (Argo sorts Helm parameters by name
//!   when it rewrites the file; here a new parameter is inserted before the first one named after
//!   it, so a sorted file stays sorted and an unsorted one is not reordered), and a replaced Helm
//!   parameter keeps any extra keys it had;
//! * a new value is double-quoted only when it would not read back as the same string (a number,
//!   a boolean, YAML 1.1 ones included); a replaced scalar keeps its quote style;
//! * a blank (whitespace-only) file is replaced whole, as Argo does.
//!
//! # Commit and branch data
//!
//! [`plan::AppPlan`] carries the commit message data Argo CD Image Updater gives its template
//! (`.AppName`, `.AppChanges` with `.Image`, `.OldTag`, `.NewTag`, `.Labels`) and, for the git
//! method, the repository, checkout branch, rendered write branch (`base:write`, cut to 255
//! bytes; or the pull-request branch) and credentials reference; both are rendered with
//! `image_update_template::argocd`.

pub(crate) mod annotations;
pub(crate) mod application;
pub(crate) mod catalog;
pub(crate) mod config;
pub(crate) mod crd;
pub(crate) mod definitions;
pub(crate) mod kubesphere;
pub(crate) mod plan;
pub(crate) mod settings;
pub(crate) mod spec_update;
pub(crate) mod target;
pub(crate) mod writers;
