//! Go `text/template` with Sprig's hermetic functions, and Flux's commit-message data.
//!
//! Flux renders `spec.git.commit.messageTemplate` with Go's `text/template` and
//! `sprig.HermeticTxtFuncMap()` over its `TemplateData`; image-update must produce the same bytes.
//! No crate renders real Flux templates (they need Go's struct printing, struct map keys ranged in
//! sorted order, methods, Stringers and Go's error texts), so this crate carries its own engine,
//! checked against real Go by the differential suite (`tests/differential.rs`, expectations from
//! `tools/template-oracle`). Pure: no IO, no clock, no network.
//!
//! Use [`flux::render_commit_message`] for commit messages, [`argocd`] for Argo CD Image Updater's
//! commit messages and write-branch names, or [`Template`] for any Go template over a [`Value`]
//! ([`Template::parse_go`] without Sprig, as a `text/template` with no function map).
//!
//! # Supported subset
//!
//! - Text and actions, `{{-`/`-}}` trimming, `{{/* comments */}}`; pipelines, parenthesised pipelines,
//!   variables (`:=`, `=`), `$`; `if`/`else if`/`else`; `range` over slices, maps (keys in Go's
//!   `fmtsort` order: strings by bytes, structs field by field) and integers (Go 1.24), with one or two
//!   variables, `else`, `break`, `continue`; `with`/`else with` (Go 1.23)/`else`;
//!   `define`/`template`/`block`.
//! - Field access (with promotion through embedded structs), map index by field name, methods called
//!   as fields, with or without arguments (`.Changed.Changes`, `.AutomationObject.String`,
//!   `.Scope "pull"`, variadic `.Repo "a" "b"`), `fmt.Stringer`s (`.AutomationObject` prints
//!   `ns/name`), unexported fields (printed by `%#v`, refused by field access, left out of JSON),
//!   `json.Marshaler`s.
//! - Flux v0.x's `.Updated` and `.Changed.ImageResult` (file -> object -> image references, with
//!   go-containerregistry's `name.Tag`/`name.Digest` methods), which Flux v1 removed: they render,
//!   and [`flux::render`] returns a warning for each use ([`flux`], `legacy.rs`).
//! - Literals: interpreted and raw strings, characters, integers in every Go form (`0x1F`, `0o17`,
//!   `0b101`, `1_000`), floats (including hexadecimal), imaginary and complex numbers, `true`, `false`,
//!   `nil`.
//! - Go's builtins `and or not len index slice print printf println eq ne lt le gt ge html js urlquery
//!   call` with Go's semantics (short-circuit `and`/`or`, `eq` with several arguments, basic-kind
//!   comparison errors). Sprig's `slice` replaces Go's, as in Flux.
//! - Go's `fmt` for printing and `printf`: `%v %+v %#v %T %s %q %x %X %o %O %b %d %c %U %e %E %f %F %g
//!   %G %t %%`, width, precision, `*`, argument indexes `%[n]d`, flags `-+0 #`, and Go's error forms
//!   (`%!d(string=x)`, `%!s(MISSING)`, `%!(EXTRA ...)`).
//! - Sprig: every name of the hermetic map parses. Implemented: strings (`lower upper title untitle
//!   trim trimAll trimPrefix trimSuffix replace repeat substr trunc abbrev abbrevboth nospace initials
//!   swapcase camelcase snakecase kebabcase wrap wrapWith contains hasPrefix hasSuffix quote squote cat
//!   indent nindent plural toString`), hashes and encodings (`sha1sum sha256sum adler32sum b64enc b64dec
//!   b32enc b32dec`), lists (`list tuple first last rest initial append push prepend reverse uniq
//!   without has compact slice concat chunk sortAlpha join split splitList splitn toStrings until
//!   untilStep seq`, with their `must` forms), dicts (`dict get set unset hasKey pluck keys values pick
//!   omit dig`), defaults (`default empty coalesce all any ternary fail`), JSON (`toJson toPrettyJson
//!   toRawJson fromJson` and `must` forms), numbers (`int int64 float64 atoi toDecimal add add1 sub mul
//!   div mod max min biggest maxf minf floor ceil round`), types (`typeOf typeIs typeIsLike kindOf
//!   kindIs deepEqual deepCopy`), paths (`base dir clean ext isAbs` and `os` forms), regular
//!   expressions (`regexMatch regexFind regexFindAll regexReplaceAll regexReplaceAllLiteral regexSplit
//!   regexQuoteMeta` and `must` forms), `hello`.
//! - Unknown functions fail at parse time (`function "x" not defined`); errors carry Go's text,
//!   including `template: NAME:LINE:COL: executing "NAME" at <NODE>: ...`.
//!
//! # Resource limits
//!
//! See [`Limits`]: output size (16 MiB), `{{template}}` nesting (100), size of any string or list a
//! function builds (4 MiB; bounds `repeat`, `indent`, `printf`, `until`...), what all function
//! calls of one execution build together (64 MiB, list and map elements counted at the size of a
//! value slot), evaluation steps (50 million), and nesting of control structures and parentheses
//! at parse time (200). A function checks the size of its result and the budget left before it
//! allocates: it computes the size when it can (`repeat`, `join`, `concat`, `until`, `indent`,
//! `replace`...), or builds into a string that refuses to grow past what is left (printing, JSON,
//! escaping, `regexReplaceAll`, `wrapWith`); only results no longer than a small multiple of an
//! argument (case mapping, trimming) are measured once built. A value that shares its parts (a
//! list of a list twice, sixty times over) is printed, encoded and compared without walking its
//! exponentially many paths. So the memory of a render is the data and the template plus at most
//! the output, the budget and a transient copy a few times the size of one value, whatever the
//! text. Rendering any text never panics and always ends.
//!
//! # Known differences from Go
//!
//! The expectations come from Go 1.19 with Sprig 3.2.3 (Debian), and from Go 1.24 for `else with` and
//! range over an integer, which Go 1.19 lacks; Flux ships newer Go and Sprig 3.3.
//! - Error texts are Go 1.19's. Go 1.23 and later word two of them differently (`unexpected right
//!   paren` for `unexpected ")" in command`; `non-function .Values of type ...` for `non-function of
//!   type ...`): `scripts/template-oracle.sh` prints them as notes.
//! - Not implemented (they fail with [`ExecErrorKind::Unsupported`] when executed, after parsing
//!   fine): crypto and certificates (`bcrypt htpasswd genPrivateKey derivePassword buildCustomCert
//!   genCA... encryptAES decryptAES`), randomness (`randInt shuffle`), dates (`ago duration
//!   durationRound toDate mustToDate unixEpoch dateModify...`), `semver semverCompare`, `urlParse
//!   urlJoin`, `merge`/`mergeOverwrite` and the decimal float arithmetic `addf add1f subf mulf divf`.
//! - Strings are UTF-8 text: where Go would produce invalid UTF-8 (`trunc`, `substr` or `slice` cutting
//!   a multi-byte character, `"\xff"` literals), the bytes become U+FFFD.
//! - Values held in interface containers (elements of `list`, values of `dict`, `update.ImageRef`
//!   elements of `.Updated.Images`, the `name.Reference` field `.Reference`): Go names the static
//!   type (`interface {}`, `update.ImageRef`) in `can't evaluate field X in type ...` and `X is an
//!   unexported field of struct type ...`; this engine names the dynamic type (`update.imageRef`).
//! - Sprig's `keys` and `values` return Go map iteration order, which is random; here they are sorted.
//!   `.Changed.Changes`, `.Updated.Images` and `.Updated.Objects` are in a fixed order (files, then
//!   objects, sorted) where Flux's is unspecified.
//! - `.Updated` and `.Changed.ImageResult` are methods here (Flux v0.x had them as fields), so that
//!   `{{ . }}`, `{{ .Changed }}` and `toJson` print exactly what Flux v1 prints.
//! - Regular expressions run on the `regex` crate with Go's ASCII `\d \s \w \b`; error texts for invalid
//!   patterns differ from Go's. `b64dec`/`b32dec` error offsets may differ.
//! - Unicode tables are the `unicode-general-category` crate's (newer than Go 1.19's); case mapping is
//!   Go's one-rune mapping derived from Rust's.
//! - `camelcase`, `snakecase` and `kebabcase` follow xstrings 1.3.3 (Sprig 3.2.3); Sprig 3.3 uses a newer
//!   xstrings whose results differ for some inputs.
//! - Limits above; Go's own limit of 100,000 nested `{{template}}` calls is 100 here.

pub mod argocd;
mod capped;
mod error;
mod exec;
pub mod flux;
mod funcs;
mod gofmt;
mod json;
mod legacy;
mod lex;
mod parse;
pub mod provenance;
mod refname;
mod sprig;
mod supply_chain;
mod unicode;
mod value;

pub use error::{ExecError, ExecErrorKind, ParseError};
pub use exec::{Limits, Template};
pub use flux::{
    MessageError, ObjectId, RemovedFieldUse, Rendered, ReportError, TemplateData, UpdateChange,
    render_commit_message,
};
pub use legacy::InvalidImageRef;
pub use supply_chain::{ImageFindings, Signer, Skipped};
pub use value::{
    FieldDef, Kind, MapVal, Method, MethodFn, NamedType, SliceVal, StructVal, Type, Underlying,
    Value,
};

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, limits: &Limits) -> Result<String, String> {
        let t = Template::parse("t", text).map_err(|e| e.to_string())?;
        t.execute_with_limits(&Value::Invalid, limits)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn recursion_stops_at_the_template_depth_limit() {
        let err = run(
            r#"{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}"#,
            &Limits::default(),
        )
        .unwrap_err();
        assert!(
            err.ends_with("exceeded maximum template depth (100)"),
            "{err}"
        );
    }

    #[test]
    fn output_stops_at_the_output_limit() {
        let limits = Limits {
            max_output: 1000,
            ..Limits::default()
        };
        let err = run(r#"{{ range until 100 }}0123456789abcdef{{ end }}"#, &limits).unwrap_err();
        assert!(
            err.contains("output exceeds this engine's limit of 1000 bytes"),
            "{err}"
        );
    }

    #[test]
    fn repeat_and_indent_stop_at_the_value_limit() {
        let limits = Limits {
            max_value_len: 1000,
            ..Limits::default()
        };
        let err = run(r#"{{ repeat 2000 "x" }}"#, &limits).unwrap_err();
        assert!(
            err.contains(
                "error calling repeat: result of 2000 bytes exceeds this engine's limit of 1000 \
                 bytes or elements for one value (max_value_len)"
            ),
            "{err}"
        );
        let err = run(r#"{{ indent 2000 "x" }}"#, &limits).unwrap_err();
        assert!(err.contains("error calling indent"), "{err}");
        assert_eq!(run(r#"{{ repeat 3 "ab" }}"#, &limits).unwrap(), "ababab");
    }

    #[test]
    fn doubling_strings_stop_at_the_value_limit() {
        let err = run(r#"{{ $s := "x" }}{{ range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ len $s }}"#, &Limits::default()).unwrap_err();
        assert!(err.contains("exceeds this engine's limit"), "{err}");
    }

    #[test]
    fn long_loops_stop_at_the_step_limit() {
        let limits = Limits {
            max_steps: 10_000,
            ..Limits::default()
        };
        let err = run(r#"{{ range until 1000000 }}{{ end }}"#, &limits).unwrap_err();
        assert!(err.contains("limit"), "{err}");
        let err = run(r#"{{ range 100000000 }}{{ end }}"#, &limits).unwrap_err();
        assert!(
            err.contains("exceeds this engine's limit of 10000 steps"),
            "{err}"
        );
    }

    #[test]
    fn deep_nesting_is_refused_at_parse_time_and_fine_below() {
        let deep = format!("{{{{ {}1{} }}}}", "(".repeat(300), ")".repeat(300));
        let err = run(&deep, &Limits::default()).unwrap_err();
        assert!(
            err.contains("exceeded maximum nesting depth (200)"),
            "{err}"
        );
        let ok = format!("{{{{ {}1{} }}}}", "(".repeat(150), ")".repeat(150));
        assert_eq!(run(&ok, &Limits::default()).unwrap(), "1");
        let ifs = format!("{}x{}", "{{ if 1 }}".repeat(150), "{{ end }}".repeat(150));
        assert_eq!(run(&ifs, &Limits::default()).unwrap(), "x");
    }

    #[test]
    fn a_map_containing_itself_neither_hangs_nor_overflows() {
        let out = run(
            r#"{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ len (printf "%v" $d) }} {{ has $d (list $d) }} {{ toJson $d }}"#,
            &Limits::default(),
        );
        assert!(out.is_ok(), "{out:?}");
        let err = run(
            r#"{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ deepCopy $d }}"#,
            &Limits::default(),
        )
        .unwrap_err();
        assert!(err.contains("nested deeper"), "{err}");
    }

    #[test]
    fn unsupported_sprig_functions_parse_and_fail_when_run() {
        let err = run(
            r#"{{ if false }}{{ semver "1.0.0" }}{{ end }}ok"#,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(err, "ok");
        let t = Template::parse("t", r#"{{ randInt 1 2 }}"#).unwrap();
        let e = t.execute(&Value::Invalid).unwrap_err();
        assert_eq!(e.kind, ExecErrorKind::Unsupported);
    }

    #[test]
    fn flux_default_message_and_error_wrapping() {
        let data = TemplateData::new("ns", "auto");
        assert_eq!(
            render_commit_message(None, &data).unwrap(),
            flux::DEFAULT_MESSAGE
        );
        assert_eq!(
            render_commit_message(Some(""), &data).unwrap(),
            flux::DEFAULT_MESSAGE
        );
        let e = render_commit_message(Some("{{ nope }}"), &data).unwrap_err();
        assert!(matches!(e, MessageError::Parse(_)));
        // Flux v0.x's fields render, with a warning each.
        let r = flux::render(
            Some("{{ .Updated.Files }}\n{{ .Changed.ImageResult.Images }}"),
            &data,
            &Limits::default(),
        )
        .unwrap();
        assert_eq!(r.message, "map[]\n[]");
        let fields: Vec<(&str, usize, usize)> = r
            .warnings
            .iter()
            .map(|w| (w.field, w.line, w.column))
            .collect();
        assert_eq!(
            fields,
            [(".Updated", 1, 4), (".Changed.ImageResult", 2, 12)]
        );
        assert!(
            r.warnings[0]
                .to_string()
                .contains("which Flux v1 removed: it renders here as in Flux v0.x")
        );
        assert!(
            flux::render(Some("{{ .Changed }}"), &data, &Limits::default())
                .unwrap()
                .warnings
                .is_empty()
        );
        let e = render_commit_message(Some("{{ .Nope }}"), &data).unwrap_err();
        assert!(matches!(e, MessageError::Execute(_)));
    }

    #[test]
    fn plain_constructors_match_the_report_reader() {
        let mut data = TemplateData::new("flux-system", "auto");
        let id = ObjectId {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            namespace: "shop".into(),
        };
        data.add_change(
            "a.yaml",
            id.clone(),
            [UpdateChange {
                old_value: "1".into(),
                new_value: "2".into(),
                setter: "s".into(),
                provenance: None,
            }],
        );
        data.set_value("k", "v");
        let json = serde_json::json!({
            "automationObject": {"namespace": "flux-system", "name": "auto"},
            "values": {"k": "v"},
            "fileChanges": {"a.yaml": [{"object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": "shop"},
                "changes": [{"oldValue": "1", "newValue": "2", "setter": "s", "extra": 1}]}]}
        });
        let read = TemplateData::from_report_json(&json).unwrap();
        let t = "{{ . }}";
        assert_eq!(
            render_commit_message(Some(t), &data).unwrap(),
            render_commit_message(Some(t), &read).unwrap()
        );
        let bad = serde_json::json!({"fileChanges": {"a.yaml": [{"object": 3}]}});
        let e = TemplateData::from_report_json(&bad).unwrap_err();
        assert_eq!(
            e.to_string(),
            "report field fileChanges[\"a.yaml\"][0].object: expected an object"
        );
    }
}
