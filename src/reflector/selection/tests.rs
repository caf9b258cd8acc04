//! Whole-pipeline table tests: Flux controller tables (`applyPolicy`,
//! `filterOutTags`, `calculateImageFromRepoTags`, `TestSemVer_Latest`,
//! `TestNumerical_Latest`), Argo CD's selection catalogue, tie-breaking,
//! drop counting and the two-step contract.

use std::cell::RefCell;

use super::*;

fn tag_infos(tags: &[&str]) -> Vec<TagInfo> {
    tags.iter().map(|t| TagInfo::new(*t)).collect()
}

fn semver(range: &str) -> PolicyConfig {
    PolicyConfig::new(Strategy::SemVer {
        range: range.into(),
    })
}

fn with_filter(mut config: PolicyConfig, pattern: &str, extract: &str) -> PolicyConfig {
    config.filter = Some(FilterTagsConfig {
        pattern: pattern.into(),
        extract: extract.into(),
    });
    config
}

fn pick(config: PolicyConfig, tags: &[&str]) -> Result<String, SelectError> {
    PolicySpec::new(config)
        .unwrap()
        .select(&tag_infos(tags), 10)
        .map(|s| s.tag)
}

#[test]
fn flux_semver_latest() {
    let table: &[(&str, &[&str], Option<&str>)] = &[
        (
            "1.0.x",
            &["1.0.0", "1.0.0.1", "1.0.0p", "1.0.1", "1.2.0", "0.1.0"],
            Some("1.0.1"),
        ),
        ("1.0.x", &["v1.2.3", "v1.0.0", "v0.1.0"], Some("v1.0.0")),
        ("1.0.x", &["b1.2.3", "b1.0.0", "b0.1.0"], None),
        ("1.0.x", &[], None),
        ("1.0.x", &["1.2.0"], None),
    ];
    for (range, tags, want) in table {
        assert_eq!(
            pick(semver(range), tags).ok().as_deref(),
            *want,
            "{range} {tags:?}"
        );
    }
}

#[test]
fn flux_numerical_latest() {
    let num = |order| PolicyConfig::new(Strategy::Numerical { order });
    let stamps = [
        "1606234201",
        "1606364286",
        "1606334092",
        "1606334284",
        "1606334201",
    ];
    let table: &[(Order, &[&str], &str)] = &[
        (
            Order::Asc,
            &[
                "-62", "-88", "73", "72", "15", "16", "15", "29", "-33", "-91",
            ],
            "73",
        ),
        (
            Order::Desc,
            &["5", "-8", "-78", "25", "70", "-4", "80", "92", "-20", "-24"],
            "-78",
        ),
        (
            Order::Asc,
            &[
                "47.40896403322944",
                "-27.8520927455902",
                "-27.930666514224427",
                "-31.352485948094568",
                "-50.41072694704882",
                "-21.962849842263736",
                "24.71884721436865",
                "-39.99177354004344",
                "53.47333823144817",
                "3.2008658570411086",
            ],
            "53.47333823144817",
        ),
        (
            Order::Desc,
            &[
                "-65.27202780220686",
                "57.82948329142309",
                "22.40184684363291",
                "-86.36934305697784",
                "-90.29082099756083",
                "-12.041712603564264",
                "77.70488240399305",
                "-38.98425003883552",
                "16.06867070412028",
                "53.735674335181216",
            ],
            "-90.29082099756083",
        ),
        (Order::Asc, &stamps, "1606364286"),
        (Order::Desc, &stamps, "1606234201"),
        (Order::Asc, &["1"], "1"),
        (Order::Desc, &["1"], "1"),
    ];
    for (order, tags, want) in table {
        assert_eq!(
            pick(num(*order), tags).unwrap(),
            *want,
            "{order:?} {tags:?}"
        );
    }
    for order in [Order::Asc, Order::Desc] {
        let err = pick(num(order), &["0", "1a", "b"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to parse invalid numeric value '1a'"
        );
        assert!(matches!(pick(num(order), &[]), Err(SelectError::NoTag(_))));
    }
    // Our own data: exponents, signs, infinities, hex floats.
    assert_eq!(
        pick(num(Order::Asc), &["1e3", "999", "+1000.5"]).unwrap(),
        "+1000.5"
    );
    assert_eq!(pick(num(Order::Asc), &["Inf", "1e308"]).unwrap(), "Inf");
    assert_eq!(
        pick(num(Order::Desc), &["-Infinity", "-1e308"]).unwrap(),
        "-Infinity"
    );
    assert_eq!(pick(num(Order::Asc), &["0x1p4", "15"]).unwrap(), "0x1p4");
    assert!(
        pick(num(Order::Asc), &["1", "1e400"]).is_err(),
        "out of range is an error, as in Go"
    );
}

#[test]
fn flux_apply_policy_rows() {
    let plain = ["1.0.0", "2.0.0", "1.0.1", "1.2.0"];
    let vee = ["v1.0.0", "v2.0.0", "v1.0.1", "v1.2.0"];
    assert_eq!(pick(semver("1.0.x"), &plain).unwrap(), "1.0.1");
    assert_eq!(pick(semver("v1.0.x"), &vee).unwrap(), "v1.0.1");
    assert_eq!(pick(semver("v1.0.x"), &plain).unwrap(), "1.0.1");
    assert_eq!(pick(semver("1.0.x"), &vee).unwrap(), "v1.0.1");
    assert!(matches!(
        pick(semver("1.0.x"), &[]),
        Err(SelectError::NoTag(_))
    ));
    let err = PolicySpec::new(with_filter(semver("*"), "[=", "")).unwrap_err();
    assert_eq!(err.field, "filterTags.pattern");

    let rc = [
        "1.0.0",
        "1.0.0-rc.1",
        "1.0.0-rc.2",
        "1.0.0-rc.3",
        "1.0.1-rc.2",
    ];
    let config = with_filter(
        PolicyConfig::new(Strategy::Numerical { order: Order::Asc }),
        r"1.0.0-rc\.(?P<num>[0-9]+)",
        "$num",
    );
    assert_eq!(pick(config, &rc).unwrap(), "1.0.0-rc.3");

    let words = ["foo-aaa", "bar-bbb", "foo-zzz", "baz-nnn", "foo-ooo"];
    let config = with_filter(
        PolicyConfig::new(Strategy::Alphabetical { order: Order::Asc }),
        "foo-(?P<word>[a-z]+)",
        "$word",
    );
    assert_eq!(pick(config, &words).unwrap(), "foo-zzz");

    // filterTags maps the winner back to the original tag (C9).
    let config = with_filter(semver(">=0.x"), "^test-(.*)$", "$1");
    assert_eq!(
        pick(config, &["test-0.1.0", "test-0.1.1", "0.2.0"]).unwrap(),
        "test-0.1.1"
    );
}

#[test]
fn flux_calculate_image_from_repo_tags() {
    let tags = [
        "0.1.0",
        "0.1.1",
        "0.2.0",
        "1.0.0",
        "1.0.1",
        "1.0.2",
        "1.1.0-alpha",
    ];
    assert_eq!(pick(semver("1.0.x"), &tags).unwrap(), "1.0.2");
    let ubuntu = ["xenial", "yakkety", "zesty", "artful", "bionic"];
    assert_eq!(
        pick(
            PolicyConfig::new(Strategy::Alphabetical { order: Order::Asc }),
            &ubuntu
        )
        .unwrap(),
        "zesty"
    );
}

#[test]
fn flux_filter_out_tags() {
    let with_exclude = |patterns: &[&str]| {
        let mut config = PolicyConfig::new(Strategy::Alphabetical { order: Order::Asc });
        config.exclude = patterns.iter().map(|p| (*p).to_owned()).collect();
        config
    };
    let survivors = |patterns: &[&str], tags: &[&str]| -> Vec<String> {
        let spec = PolicySpec::new(with_exclude(patterns)).unwrap();
        let mut out: Vec<String> = spec
            .filter_tags(tags.iter().copied())
            .unwrap()
            .tags()
            .map(str::to_owned)
            .collect();
        out.sort();
        out
    };
    let abcd = ["a", "b", "c", "d"];
    assert_eq!(survivors(&[], &abcd), abcd);
    assert_eq!(survivors(&["[abc]"], &abcd), ["d"]);
    assert_eq!(survivors(&["[a]", "[d]"], &abcd), ["b", "c"]);
    assert_eq!(
        PolicySpec::new(with_exclude(&["[="])).unwrap_err().field,
        "exclude pattern"
    );
    assert_eq!(
        survivors(
            &[r"^.*\-alpha$", r"^.*\.sig$"],
            &[
                "0.1.0",
                "0.2.0",
                "0.2.-alpha",
                "0.3.0",
                "0.4.0",
                "0.4.0.sig"
            ]
        ),
        ["0.1.0", "0.2.0", "0.3.0", "0.4.0"]
    );
    assert_eq!(
        survivors(&["aaa|ccc"], &["aaa", "bbb", "ccc", "ddd"]),
        ["bbb", "ddd"]
    );
}

/// Argo CD §5.2 selection catalogue, with our own tag names where the
/// behaviour allows.
#[test]
fn argo_selection_catalogue() {
    // Argo's semver parser is loose (`0.1`, `1.0` are versions); ours is
    // strict like Flux, so the set is written as full versions.
    let tags = [
        "0.1.0", "0.5.1", "0.9.0", "1.0.0", "1.0.1", "1.1.2", "2.0.3", "latest",
    ];
    assert_eq!(pick(semver("*"), &tags).unwrap(), "2.0.3");
    assert_eq!(pick(semver("^1.0"), &tags).unwrap(), "1.1.2");
    assert_eq!(pick(semver("~1.0"), &tags).unwrap(), "1.0.1");
    assert!(pick(semver("~1.0"), &["0.1.0", "0.5.1", "0.9.0", "2.0.3"]).is_err());
    assert!(PolicySpec::new(semver("latest")).is_err());
    assert_eq!(
        pick(
            semver("*"),
            &["v2.2.0", "v2.3.0-rc.0.18.g1abb7b5dd-ppc64le"]
        )
        .unwrap(),
        "v2.2.0",
        "prereleases excluded"
    );
    let words = ["zz", "bb", "yy", "cc", "aa", "ll"];
    assert!(pick(semver("*"), &words).is_err());
    assert_eq!(
        pick(
            PolicyConfig::new(Strategy::Alphabetical { order: Order::Asc }),
            &words
        )
        .unwrap(),
        "zz"
    );
    // Argo §5.1: ties between `v2.0` and `v2.0.0` are lexical; in strict
    // mode only full versions compete, and `v2.0.3` wins.
    assert_eq!(
        pick(
            semver("*"),
            &["v2.0.2", "v1.0", "v2.0.0", "v1.0.1", "v2.0.3", "v2.0"]
        )
        .unwrap(),
        "v2.0.3"
    );
}

#[test]
fn newest_build_uses_times_and_breaks_ties_by_greatest_name() {
    let spec = PolicySpec::new(PolicyConfig::new(Strategy::NewestBuild)).unwrap();
    let t = |s: i64| Some(Timestamp::from_unix(s, 0));
    let list = |pairs: &[(&str, Option<Timestamp>)]| -> Vec<TagInfo> {
        pairs
            .iter()
            .map(|(tag, created)| TagInfo {
                tag: (*tag).into(),
                created: *created,
            })
            .collect()
    };
    // Argo: {zz,bb,yy,cc,yy,aa,ll} with rising dates; the duplicate `yy` is
    // listed once but its later time (20) overwrites the earlier one, as in
    // Argo, so it ranks above `cc` (15). The newest, `ll`, wins.
    let tags = list(&[
        ("zz", t(0)),
        ("bb", t(5)),
        ("yy", t(10)),
        ("cc", t(15)),
        ("yy", t(20)),
        ("aa", t(25)),
        ("ll", t(30)),
    ]);
    let sel = spec.select(&tags, 3).unwrap();
    assert_eq!(sel.tag, "ll");
    assert_eq!(sel.drops.duplicate_tag, 1);
    let order: Vec<&str> = sel.candidates.iter().map(|c| c.tag.as_str()).collect();
    assert_eq!(order, ["ll", "aa", "yy"]);
    // Same image under several names: the greatest name wins (Argo #147).
    let tags = list(&[
        ("f33bacd", t(7)),
        ("latest", t(7)),
        ("dev", t(7)),
        ("old", t(3)),
    ]);
    assert_eq!(spec.select(&tags, 10).unwrap().tag, "latest");
    // Tags without a time are dropped and counted.
    let tags = list(&[("a", None), ("b", t(1)), ("c", None)]);
    let sel = spec.select(&tags, 10).unwrap();
    assert_eq!((sel.tag.as_str(), sel.drops.no_created_time), ("b", 2));
    let err = spec.select(&list(&[("a", None)]), 10).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no tag qualifies for the newest-build policy: 1 tag listed, 1 without a creation time"
    );
}

#[test]
fn lookup_is_called_only_for_survivors_and_only_for_newest_build() {
    let asked = RefCell::new(Vec::<String>::new());
    let mut lookup = |tag: &str| -> Result<Option<Timestamp>, LookupError> {
        asked.borrow_mut().push(tag.to_owned());
        Ok(Some(Timestamp::from_unix(tag.len() as i64, 0)))
    };
    let mut config = PolicyConfig::new(Strategy::NewestBuild);
    config.ignore_tags = vec!["*-dev".into()];
    config.allow_tags = Some("regexp:^v".into());
    let spec = PolicySpec::new(config).unwrap();
    let tags = ["v1", "v22-dev", "x333", "v4444", "v5.sig"];
    let filtered = spec.filter_tags(tags).unwrap();
    assert_eq!(filtered.tags().collect::<Vec<_>>(), ["v1", "v4444"]);
    let sel = spec.choose(filtered, &mut lookup, 10).unwrap();
    assert_eq!(sel.tag, "v4444");
    assert_eq!(*asked.borrow(), ["v1", "v4444"]);
    assert_eq!(sel.drops.ignore_tags, 1);
    assert_eq!(sel.drops.allow_tags, 1);
    assert_eq!(sel.drops.excluded_total(), 1);

    asked.borrow_mut().clear();
    let semver_spec = PolicySpec::new(semver("*")).unwrap();
    let filtered = semver_spec.filter_tags(["1.0.0"]).unwrap();
    assert_eq!(
        semver_spec.choose(filtered, &mut lookup, 10).unwrap().tag,
        "1.0.0"
    );
    assert!(asked.borrow().is_empty());

    // A failing lookup aborts with the tag named.
    let mut failing =
        |_: &str| -> Result<Option<Timestamp>, LookupError> { Err("registry said 429".into()) };
    let filtered = spec.filter_tags(["v1"]).unwrap();
    let err = spec.choose(filtered, &mut failing, 10).unwrap_err();
    assert_eq!(err.to_string(), "looking up the creation time of tag 'v1'");
    assert_eq!(
        std::error::Error::source(&err)
            .map(ToString::to_string)
            .as_deref(),
        Some("registry said 429")
    );
}

#[test]
fn tags_without_the_platform_are_counted_as_such() {
    let mut config = PolicyConfig::new(Strategy::NewestBuild);
    config.platforms = vec!["linux/arm64".into(), "linux/arm/v7".into()];
    let spec = PolicySpec::new(config).unwrap();
    let mut lookup = |tag: &str| -> Result<Created, LookupError> {
        Ok(match tag {
            "amd64-only" | "s390x-only" => Created::NoPlatform,
            "no-time" => Created::Unknown,
            "old" => Created::At(Timestamp::from_unix(10, 0)),
            _ => Created::At(Timestamp::from_unix(20, 0)),
        })
    };
    let filtered = spec
        .filter_tags(["old", "amd64-only", "new", "no-time", "s390x-only"])
        .unwrap();
    let sel = spec.choose(filtered, &mut lookup, 10).unwrap();
    assert_eq!(sel.tag, "new");
    assert_eq!(sel.eligible, 2);
    assert_eq!(sel.drops.no_platform, 2);
    assert_eq!(sel.drops.no_created_time, 1);
    assert_eq!(sel.listed, sel.eligible + sel.drops.total());

    let filtered = spec.filter_tags(["amd64-only", "no-time"]).unwrap();
    let err = spec.choose(filtered, &mut lookup, 10).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no tag qualifies for the newest-build policy: 2 tags listed, 1 without a creation time, \
         1 without an image for linux/arm64 or linux/arm/v7"
    );

    // Without platforms (an index of attestations only, say).
    let spec = PolicySpec::new(PolicyConfig::new(Strategy::NewestBuild)).unwrap();
    let filtered = spec.filter_tags(["amd64-only"]).unwrap();
    let err = spec.choose(filtered, &mut lookup, 10).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no tag qualifies for the newest-build policy: 1 tag listed, 1 without an image for any \
         platform"
    );
}

#[test]
fn digest_strategy_follows_one_tag() {
    let config = PolicyConfig::new(Strategy::Digest {
        tag: "latest".into(),
    });
    let spec = PolicySpec::new(config.clone()).unwrap();
    let sel = spec
        .select(&tag_infos(&["1.0.0", "latest", "stable"]), 10)
        .unwrap();
    assert_eq!(sel.tag, "latest");
    assert_eq!(sel.drops.not_candidate, 2);
    assert_eq!(sel.candidates.len(), 1);
    let err = spec
        .select(&tag_infos(&["1.0.0", "stable"]), 10)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no tag qualifies for the digest of tag \"latest\" policy: 2 tags listed, 2 not the followed tag latest"
    );
    // Ignore-tags still wins over the followed tag.
    let mut ignored = config;
    ignored.ignore_tags = vec!["lat*".into()];
    assert!(
        PolicySpec::new(ignored)
            .unwrap()
            .select(&tag_infos(&["latest"]), 10)
            .is_err()
    );
}

#[test]
fn tie_breaking_is_deterministic() {
    // Semver: equal precedence → byte-wise greatest original, filtered or not.
    for tags in [
        ["1.0.0", "v1.0.0", "1.0.0+b", "1.0.0+a"],
        ["1.0.0+a", "1.0.0+b", "v1.0.0", "1.0.0"],
    ] {
        assert_eq!(pick(semver("*"), &tags).unwrap(), "v1.0.0");
    }
    assert_eq!(
        pick(semver("*"), &["1.0.0+a", "1.0.0+b", "1.0.0"]).unwrap(),
        "1.0.0+b"
    );
    // Filtered semver: keys `1.2.3` from two different originals. The
    // extract yields distinct keys with equal precedence, greatest original wins.
    let config = with_filter(semver("*"), r"^(?:app|web)-(.+)$", "$1");
    assert_eq!(
        pick(config.clone(), &["app-1.2.3+b1", "web-1.2.3+b0"]).unwrap(),
        "web-1.2.3+b0"
    );
    assert_eq!(
        pick(config, &["web-1.2.3+b0", "app-1.2.3+b1"]).unwrap(),
        "web-1.2.3+b0"
    );
    // Same key from several tags collapses to the byte-wise smallest original.
    let config = with_filter(semver("*"), r"^(?:app|web)-(\d+\.\d+\.\d+)", "$1");
    for tags in [
        ["web-1.2.3", "app-1.2.3-x", "app-1.2.3"],
        ["app-1.2.3", "web-1.2.3", "app-1.2.3-x"],
    ] {
        let sel = PolicySpec::new(config.clone())
            .unwrap()
            .select(&tag_infos(&tags), 10)
            .unwrap();
        assert_eq!(sel.tag, "app-1.2.3");
        assert_eq!(sel.drops.duplicate_key, 2);
        assert_eq!(sel.eligible, 1);
    }
    // Numerical: equal values → byte-wise smallest original (Flux keeps the
    // later of equals in its descending list), in both orders.
    for order in [Order::Asc, Order::Desc] {
        let num = PolicyConfig::new(Strategy::Numerical { order });
        assert_eq!(
            pick(num.clone(), &["1.0", "1", "01", "0.5e1"]).unwrap(),
            if order == Order::Asc { "0.5e1" } else { "01" }
        );
        assert_eq!(pick(num, &["10", "1e1", "10.0"]).unwrap(), "10");
    }
    // NaN never wins over a number, in either order.
    for order in [Order::Asc, Order::Desc] {
        let num = PolicyConfig::new(Strategy::Numerical { order });
        assert_eq!(
            pick(num.clone(), &["NaN", "3", "-3"]).unwrap(),
            if order == Order::Asc { "3" } else { "-3" }
        );
        assert_eq!(pick(num, &["NaN"]).unwrap(), "NaN");
    }
}

#[test]
fn top_candidates_are_in_rank_order_and_counts_add_up() {
    let mut config = with_filter(semver(">=1.0.0 <3.0.0"), r"^v?\d", "");
    config.allow_tags = Some("regexp:^v?[0-9]".into());
    config.ignore_tags = vec!["*-skip".into()];
    config.exclude.push("-debug$".into());
    let tags = [
        "2.1.0",
        "v2.2.0",
        "1.0.0",
        "3.0.0",
        "0.9.0",
        "2.2.0-skip",
        "2.0.0-debug",
        "x.sig",
        "main",
        "1.5",
        "2.1.0",
        "2.0.0-rc.1",
    ];
    let spec = PolicySpec::new(config).unwrap();
    let sel = spec.select(&tag_infos(&tags), 3).unwrap();
    let order: Vec<&str> = sel.candidates.iter().map(|c| c.tag.as_str()).collect();
    assert_eq!(order, ["v2.2.0", "2.1.0", "1.0.0"]);
    assert_eq!(sel.tag, "v2.2.0");
    assert_eq!(sel.listed, 12);
    assert_eq!(sel.eligible, 3);
    let d = &sel.drops;
    assert_eq!(d.duplicate_tag, 1);
    assert_eq!(
        d.excluded.iter().map(|p| p.count).collect::<Vec<_>>(),
        [1, 1]
    );
    assert_eq!(d.allow_tags, 1, "main");
    assert_eq!(d.ignore_tags, 1);
    assert_eq!(d.filter_pattern, 0);
    assert_eq!(d.not_candidate, 1, "1.5");
    assert_eq!(d.outside_range, 3, "3.0.0, 0.9.0, 2.0.0-rc.1");
    assert_eq!(sel.listed, sel.eligible + d.total());
    // top = 0 still reports the winner.
    assert_eq!(
        spec.select(&tag_infos(&tags), 0).unwrap().candidates.len(),
        1
    );
}

#[test]
fn exclusion_default_and_empty_list() {
    let with = PolicySpec::new(semver("*")).unwrap();
    assert_eq!(
        with.select(&tag_infos(&["1.0.0", "2.0.0.sig"]), 10)
            .unwrap()
            .drops
            .excluded_total(),
        1
    );
    let mut config = PolicyConfig::new(Strategy::Alphabetical { order: Order::Asc });
    config.exclude.clear();
    assert_eq!(
        pick(config, &["1.0.0", "sha256-abc.sig"]).unwrap(),
        "sha256-abc.sig"
    );
}

proptest::proptest! {
    /// The winner is always a listed tag, equals candidates[0], survives
    /// every filter, and no surviving candidate ranks above it.
    #[test]
    fn semver_winner_is_maximal(versions in proptest::collection::vec((0u64..4, 0u64..4, 0u64..4, proptest::bool::ANY, proptest::bool::ANY), 1..40)) {
        let tags: Vec<String> = versions
            .iter()
            .map(|(a, b, c, v, pre)| format!("{}{a}.{b}.{c}{}", if *v { "v" } else { "" }, if *pre { "-rc.1" } else { "" }))
            .collect();
        let infos: Vec<TagInfo> = tags.iter().map(|t| TagInfo::new(t.clone())).collect();
        let spec = PolicySpec::new(semver(">=1.0.0")).unwrap();
        match spec.select(&infos, 5) {
            Ok(sel) => {
                proptest::prop_assert_eq!(&sel.candidates[0].tag, &sel.tag);
                let best = semver::parse_tag(&sel.tag).unwrap();
                for t in &tags {
                    let v = semver::parse_tag(t).unwrap();
                    if v.pre.is_empty() && v.major >= 1 {
                        let ord = v.cmp_precedence(&best);
                        proptest::prop_assert!(ord.is_lt() || (ord.is_eq() && t.as_str() <= sel.tag.as_str()));
                    }
                }
                proptest::prop_assert_eq!(sel.listed, sel.eligible + sel.drops.total());
            }
            Err(_) => {
                let none_eligible = tags.iter().all(|t| {
                    let v = semver::parse_tag(t).unwrap();
                    !v.pre.is_empty() || v.major == 0
                });
                proptest::prop_assert!(none_eligible);
            }
        }
    }

    /// Selection does not depend on input order.
    #[test]
    fn selection_is_order_independent(mut tags in proptest::collection::vec("[a-c]{1,2}-[0-9]{1,2}", 1..30), seed in 0usize..1000) {
        let config = with_filter(PolicyConfig::new(Strategy::Numerical { order: Order::Asc }), r"-(\d+)$", "$1");
        let spec = PolicySpec::new(config).unwrap();
        let a = spec.select(&tags.iter().map(|t| TagInfo::new(t.clone())).collect::<Vec<_>>(), 5).unwrap();
        let len = tags.len();
        tags.rotate_left(seed % len);
        tags.reverse();
        let b = spec.select(&tags.iter().map(|t| TagInfo::new(t.clone())).collect::<Vec<_>>(), 5).unwrap();
        proptest::prop_assert_eq!(a, b);
    }
}

/// Argo CD's documented idiom (#353): a `-0` range admits prerelease-style
/// suffixes, and an allow-tags regexp keeps one variant.
#[test]
fn argo_suffix_variant_idiom() {
    let tags = [
        "7.4.0",
        "7.4.0-alpine",
        "7.4.3-alpine",
        "7.4.3-bookworm",
        "7.4.3",
        "7.5.0-alpine",
        "7.4.2-alpine",
    ];
    let mut config = semver("7.4.x-0");
    config.allow_tags = Some("regexp:-alpine$".into());
    assert_eq!(pick(config, &tags).unwrap(), "7.4.3-alpine");
    // Without the `-0` the suffixed tags are prereleases and never match.
    let mut config = semver("7.4.x");
    config.allow_tags = Some("regexp:-alpine$".into());
    let err = pick(config, &tags).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no tag satisfies semver range \"7.4.x\": 7 tags listed, 3 not allowed by allow-tags regexp:-alpine$, \
         4 outside range"
    );
}

#[test]
fn platforms_are_parsed_once_when_the_policy_is_built() {
    let mut config = PolicyConfig::new(Strategy::NewestBuild);
    config.platforms = vec!["Linux/ARM64/v8".into(), "linux/amd64".into()];
    let spec = PolicySpec::new(config.clone()).unwrap();
    assert_eq!(
        spec.platforms()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["linux/arm64/v8", "linux/amd64"]
    );
    config.platforms = vec!["linux".into()];
    let error = PolicySpec::new(config).unwrap_err().to_string();
    assert!(error.contains("invalid platform 'linux'"), "{error}");
}
