//! The memory limits of a render: no function builds a value past `max_value_len`, and all of
//! them together build no more than `max_built`, each checked before the memory is taken; what
//! would pass a limit is an error that names the limit, its value and the action, and ordinary
//! templates never come near them.
//!
//! Each attack here asks for gigabytes (or exponentially many bytes) if a check is missing; with
//! the limits below it stops after a few megabytes. The same attacks run through the binary under
//! an address-space limit in `tests/hostile/templates.rs`.

// Test code: a broken fixture should stop the run loudly.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};

use image_update_template::{ExecErrorKind, Limits, Template, TemplateData, Value, flux};

/// Limits a quarter (value) and an eighth (budget) of the defaults, so each attack is cheap.
fn small() -> Limits {
    Limits {
        max_value_len: 1 << 20,
        max_built: 8 << 20,
        ..Limits::default()
    }
}

fn exec(t: &Template, limits: &Limits) -> Result<String, image_update_template::ExecError> {
    t.execute_with_limits(&Value::Invalid, limits)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The limit error `text` (Go's builtins and Sprig) ends with.
fn limit(text: &str) -> String {
    limit_of(&Template::parse("t", text).unwrap(), &small())
}

fn limit_of(t: &Template, limits: &Limits) -> String {
    let started = std::time::Instant::now();
    let e = match exec(t, limits) {
        Ok(out) => panic!(
            "rendered {} bytes instead of stopping at a limit",
            out.len()
        ),
        Err(e) => e,
    };
    assert_eq!(e.kind, ExecErrorKind::Limit, "{}", e.message);
    // Even a debug build stops within a moment: nothing exponential is walked.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}: {}",
        started.elapsed(),
        e.message
    );
    e.message
}

fn assert_has(message: &str, parts: &[&str]) {
    for p in parts {
        assert!(message.contains(p), "{p:?} not in {message}");
    }
}

const VALUE: &str = "limit of 1048576 bytes or elements for one value (max_value_len)";
const BUDGET: &str = "limit of 8388608 bytes built by one execution (max_built;";

#[test]
fn doubling_a_list_then_joining_it_is_refused_before_the_join_copies() {
    // 4,096 references to one 1 MB string: joined, 4 GB.
    let e = limit(
        r#"{{$l := list (repeat 1000000 "x")}}{{range until 12}}{{$l = concat $l $l}}{{end}}{{join "" $l}}"#,
    );
    assert_has(
        &e,
        &[
            "template: t:1:83: executing \"t\" at <join \"\" $l>: error calling join: ",
            VALUE,
        ],
    );
    // The same list printed, turned to strings or JSON, or copied deeply.
    for f in [
        "print $l",
        "toString $l",
        "toJson $l",
        "cat $l",
        "squote $l",
    ] {
        let t = format!(
            r#"{{{{$l := list (repeat 1000000 "x")}}}}{{{{range until 12}}}}{{{{$l = concat $l $l}}}}{{{{end}}}}{{{{{f}}}}}"#
        );
        assert_has(&limit(&t), &[VALUE]);
    }
    // Strings are shared, not copied: 4,096 elements are cheap.
    let t = Template::parse(
        "t",
        r#"{{$l := list (repeat 1000000 "x")}}{{range until 12}}{{$l = concat $l $l}}{{end}}{{len (toStrings $l)}}"#,
    )
    .unwrap();
    assert_eq!(exec(&t, &small()).unwrap(), "4096");
    assert_has(
        &limit(
            r#"{{$l := list (repeat 1000000 "x")}}{{range until 12}}{{$l = concat $l $l}}{{end}}{{$l}}"#,
        ),
        &["output exceeds this engine's limit of 16777216 bytes (max_output)"],
    );
}

#[test]
fn many_values_each_under_the_value_limit_stop_at_the_budget() {
    // Kept: 100 values of 1 MB.
    let e =
        limit(r#"{{$l := list}}{{range until 100}}{{$l = append $l (repeat 1000000 "x")}}{{end}}"#);
    assert_has(
        &e,
        &["error calling repeat: building 1000000 more bytes", BUDGET],
    );
    // Lists kept: each costs its elements' memory.
    let e = limit(r#"{{$l := list}}{{range until 100}}{{$l = append $l (until 100000)}}{{end}}"#);
    assert_has(
        &e,
        &["error calling until: building 100000 more elements", BUDGET],
    );
    // Thrown away at once: the budget counts what is built, not what is kept.
    let e = limit(r#"{{range until 100}}{{$x := printf "%1000000d" 1}}{{end}}"#);
    assert_has(&e, &["error calling printf", BUDGET]);
    // A dict grown one entry at a time pays for every entry.
    let e = limit(r#"{{$d := dict}}{{range until 1000000}}{{$_ := set $d (print .) .}}{{end}}"#);
    assert_has(&e, &["error calling", BUDGET]);
}

#[test]
fn nested_print_without_sprig_is_refused_before_it_allocates() {
    // Go's builtins alone (an Argo CD branch template): 64 B, then 4 KB, 256 KB, 4 MB, 4 GB.
    let text = format!(
        "b{{{{with print \"{}\"}}}}{{{{with print{}}}}}{{{{with print{}}}}}{{{{with print{}}}}}{{{{len .}}}}{{{{end}}}}{{{{end}}}}{{{{end}}}}{{{{end}}}}",
        "x".repeat(64),
        " .".repeat(64),
        " .".repeat(64),
        " .".repeat(1000),
    );
    let t = Template::parse_go("branchName", &text).unwrap();
    let e = limit_of(&t, &small());
    assert_has(
        &e,
        &[
            "template: branchName:1:",
            "error calling print: result of more than 1048576 bytes exceeds",
            VALUE,
        ],
    );
    // printf with a repeated argument and with wide padding.
    let t = format!(
        r#"{{{{$s := printf "%1000000s" "x"}}}}{{{{printf "{}" $s}}}}"#,
        "%[1]s".repeat(2000)
    );
    assert_has(&limit(&t), &["error calling printf", VALUE]);
    let t = format!(
        r#"{{{{printf "{}"{}}}}}"#,
        "%1000000d".repeat(2000),
        " 1".repeat(2000)
    );
    assert_has(&limit(&t), &["error calling printf", VALUE]);
    let t = format!(
        r#"{{{{println {}}}}}"#,
        "(printf \"%1000000d\" 1) ".repeat(2)
    );
    assert_has(&limit(&t), &["error calling println", VALUE]);
}

#[test]
fn long_ranges_are_counted_before_they_are_made() {
    assert_has(
        &limit("{{range until 100000000}}{{end}}"),
        &["error calling until: result of 100000000 elements", VALUE],
    );
    assert_has(
        &limit("{{range untilStep 0 100000000 1}}{{end}}"),
        &["error calling untilStep", VALUE],
    );
    assert_has(&limit("{{seq 100000000}}"), &["error calling seq", VALUE]);
    // Under the value limit, over the budget: 1,000,000 elements are 32 MB.
    assert_has(
        &limit("{{range until 1000000}}{{end}}"),
        &[
            "error calling until: building 1000000 more elements",
            BUDGET,
        ],
    );
    // Overflowing bounds neither panic nor loop.
    let t = Template::parse("t", "{{len (untilStep 0 9223372036854775807 9223372036854775806)}} {{seq 9223372036854775807}}.").unwrap();
    assert_eq!(exec(&t, &small()).unwrap(), "2 .");
    assert_eq!(
        exec(
            &Template::parse(
                "t",
                "{{len (untilStep 9223372036854775807 -9223372036854775808 -9223372036854775807)}}"
            )
            .unwrap(),
            &small()
        )
        .unwrap(),
        "3"
    );
}

#[test]
fn functions_that_multiply_their_input_are_sized_first() {
    let big = r#"{{$s := repeat 100000 "x"}}{{$n := repeat 100000 "\n"}}"#;
    for f in [
        r#"replace "x" $s $s"#,
        r#"replace "" $s $s"#,
        r#"wrapWith 1 $s $s"#,
        r#"indent 1000000 $n"#,
        r#"nindent 1000000 $n"#,
        r#"regexReplaceAll "x" $s (repeat 1000 "${0}")"#,
        r#"regexReplaceAll "x" $s "$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0$0""#,
        r#"regexReplaceAllLiteral "x" $s $s"#,
        r#"quote $s $s $s $s $s $s $s $s $s $s $s"#,
        r#"js (repeat 200000 "<")"#,
        r#"html (repeat 300000 "<")"#,
        r#"urlquery (repeat 400000 "<")"#,
        r#"b64enc (repeat 800000 "x")"#,
        r#"b32enc (repeat 700000 "x")"#,
        r#"join $s (list $s $s $s $s $s $s $s $s $s $s $s)"#,
        r#"cat $s $s $s $s $s $s $s $s $s $s $s"#,
    ] {
        let e = limit(&format!("{big}{{{{{f}}}}}"));
        assert!(e.contains(VALUE) || e.contains(BUDGET), "{f}: {e}");
    }
    // Lists: counted (at 32 bytes each, and strings and lists at 64 more) before they are made.
    for f in [
        r#"splitList "" (repeat 1000000 "x")"#,
        r#"split "" (repeat 1000000 "x")"#,
        r#"regexFindAll "" (repeat 1000000 "x") -1"#,
        r#"regexSplit "" (repeat 1000000 "x") -1"#,
        r#"fromJson (printf "[%s0]" (repeat 400000 "0,"))"#,
    ] {
        let e = limit(&format!("{{{{{f}}}}}"));
        assert!(e.contains(VALUE) || e.contains(BUDGET), "{f}: {e}");
    }
    // keys of many dicts: 3,000 x 1,000 keys.
    let t = format!(
        r#"{{{{$d := dict}}}}{{{{range until 1000}}}}{{{{$_ := set $d (print .) 1}}}}{{{{end}}}}{{{{keys {}}}}}"#,
        "$d ".repeat(3000)
    );
    assert_has(
        &limit(&t),
        &["error calling keys: result of 3000000 elements", VALUE],
    );
}

#[test]
fn values_that_share_or_contain_themselves_stop_quickly() {
    // 2^60 paths through 60 lists of two.
    let dag = r#"{{$a := list "x"}}{{range until 60}}{{$a = list $a $a}}{{end}}"#;
    for (f, what) in [
        ("deepCopy $a", BUDGET),
        ("toJson $a", VALUE),
        ("toPrettyJson $a", VALUE),
        ("print $a", VALUE),
        ("printf \"%#v\" $a", VALUE),
        ("toString $a", VALUE),
        ("$a", "(max_output)"),
    ] {
        let e = limit(&format!("{dag}{{{{{f}}}}}"));
        assert!(e.contains(what), "{f}: {e}");
    }
    // Compared as Go compares them: each pair of lists once.
    let two = r#"{{$a := list "x"}}{{$b := list "x"}}{{range until 60}}{{$a = list $a $a}}{{$b = list $b $b}}{{end}}"#;
    let t = Template::parse(
        "t",
        &format!("{two}{{{{deepEqual $a $b}}}} {{{{has $a (list $b)}}}} {{{{len (uniq (list $a $b $a))}}}}"),
    )
    .unwrap();
    assert_eq!(exec(&t, &small()).unwrap(), "true true 1");
    // Comparing every pair of a long list is refused before it starts.
    assert_has(
        &limit("{{uniq (until 100000)}}"),
        &[
            "error calling uniq",
            "exceed this engine's limit of 50000000 steps (max_steps)",
        ],
    );
    // A map that holds itself twice: 2^100 paths to the print depth.
    let twice = r#"{{$d := dict}}{{$_ := set $d "a" $d}}{{$_ := set $d "b" $d}}"#;
    for f in ["print $d", "mustToJson $d", "$d", "deepCopy $d"] {
        let t = Template::parse("t", &format!("{twice}{{{{{f}}}}}")).unwrap();
        let started = std::time::Instant::now();
        let r = exec(&t, &small()).map(|out| out.len());
        assert!(r.is_err(), "{f}: {r:?}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "{f}"
        );
    }
}

#[test]
fn template_recursion_stops_at_the_depth_limit() {
    let e = limit(r#"{{define "r"}}{{template "r" .}}{{template "r" .}}{{end}}{{template "r" .}}"#);
    assert!(e.ends_with("exceeded maximum template depth (100)"), "{e}");
    // Recursion that builds: each level a 1 MB value.
    let e = limit(
        r#"{{define "r"}}{{$x := repeat 1000000 "x"}}{{template "r" .}}{{end}}{{template "r" .}}"#,
    );
    assert_has(&e, &["executing \"r\"", BUDGET]);
}

#[test]
fn default_limits_are_documented_values() {
    let d = Limits::default();
    assert_eq!(
        (d.max_output, d.max_value_len, d.max_built, d.max_steps),
        (16 << 20, 4 << 20, 64 << 20, 50_000_000)
    );
    // At the default limits, the attack of the issue stops at the join.
    let t = Template::parse(
        "commit message",
        r#"{{$l := list (repeat 4000000 "x")}}{{range until 12}}{{$l = concat $l $l}}{{end}}{{join "" $l}}"#,
    )
    .unwrap();
    let e = exec(&t, &d).unwrap_err();
    assert_has(
        &e.message,
        &["limit of 4194304 bytes or elements for one value (max_value_len)"],
    );
    // Values up to the limit are built.
    let t = Template::parse("t", r#"{{len (repeat 4194304 "x")}}"#).unwrap();
    assert_eq!(exec(&t, &d).unwrap(), "4194304");
}

fn cases_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/templates")
}

fn files(dir: &str, ext: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs_err::read_dir(cases_root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    paths.sort();
    paths
}

#[test]
fn ordinary_templates_render_the_same_with_a_budget_64_times_smaller() {
    let tight = Limits {
        max_built: 1 << 20,
        ..Limits::default()
    };
    let mut rendered = 0;
    for report in files("reports", "json") {
        let json: serde_json::Value =
            serde_json::from_str(&fs_err::read_to_string(&report).unwrap()).unwrap();
        let data = TemplateData::from_report_json(&json).unwrap();
        let mut templates: Vec<Option<String>> = vec![None];
        templates.extend(
            files("cases", "tmpl")
                .iter()
                .map(|p| Some(fs_err::read_to_string(p).unwrap())),
        );
        for text in &templates {
            let default = flux::render_commit_message(text.as_deref(), &data);
            let small = flux::render_commit_message_with_limits(text.as_deref(), &data, &tight);
            assert_eq!(
                default.as_ref().map_err(ToString::to_string),
                small.as_ref().map_err(ToString::to_string),
                "{} over {}",
                text.as_deref().unwrap_or("(default)"),
                report.display()
            );
            rendered += usize::from(default.is_ok());
        }
    }
    assert!(rendered > 500, "{rendered}");
}

/// Reading is work too: a loop of scans of a large string (`contains`, `regexMatch`, `eq`,
/// `hasPrefix`) pays steps for the bytes each call reads, so it stops at the step limit in
/// moments instead of scanning for hours.
#[test]
fn scanning_large_values_costs_steps() {
    for scan in [
        r#"contains "y" $s"#,
        r#"regexMatch "y$" $s"#,
        r#"eq $s "y""#,
        r#"hasSuffix "y" $s"#,
        r#"len $l"#,
    ] {
        let text = format!(
            r#"{{{{$s := repeat 1000000 "x"}}}}{{{{$l := until 1000000}}}}{{{{range until 4000}}}}{{{{range until 4000}}}}{{{{if {scan}}}}}y{{{{end}}}}{{{{end}}}}{{{{end}}}}"#
        );
        let t = Template::parse("t", &text).unwrap();
        let message = limit_of(&t, &Limits::default());
        assert_has(&message, &["max_steps"]);
    }
}
