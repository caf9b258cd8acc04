//! Alphabetical ordering: byte-wise comparison of tag strings, as Go's
//! `sort.Strings` does for Flux and Argo CD.
//!
//! No normalisation happens on purpose: users rely on calendar tags such as
//! `2024-05-01` sorting correctly, and on the known trap that `9` sorts above
//! `10` being the same here as upstream.

use std::cmp::Ordering;

use super::Order;

/// Ranks `a` against `b`: `Greater` means `a` is the better candidate.
/// `Asc` prefers the byte-wise greatest string (the last in ascending order),
/// `Desc` the smallest.
pub(crate) fn rank(a: &str, b: &str, order: Order) -> Ordering {
    let asc = a.as_bytes().cmp(b.as_bytes());
    match order {
        Order::Asc => asc,
        Order::Desc => asc.reverse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reflector::selection::test_support::select_keys;
    use crate::reflector::selection::{PolicyConfig, Strategy};

    fn latest(order: Order, tags: &[&str]) -> Option<String> {
        select_keys(PolicyConfig::new(Strategy::Alphabetical { order }), tags)
    }

    #[test]
    fn byte_order_not_numeric() {
        assert_eq!(rank("9", "10", Order::Asc), Ordering::Greater);
        assert_eq!(rank("v10", "v9", Order::Asc), Ordering::Less);
        assert_eq!(rank("Z", "a", Order::Asc), Ordering::Less);
        assert_eq!(rank("a", "b", Order::Desc), Ordering::Greater);
    }

    /// Flux `TestAlphabetical_Latest`.
    #[test]
    fn flux_alphabetical_latest() {
        let ubuntu = ["16.04", "16.04.1", "16.10", "20.04", "20.10"];
        let names = ["xenial", "yakkety", "zesty", "artful", "bionic"];
        let stamps = [
            "1606234201",
            "1606364286",
            "1606334092",
            "1606334284",
            "1606334201",
        ];
        let prefixed = stamps.map(|s| format!("rel-{s}"));
        let prefixed: Vec<&str> = prefixed.iter().map(String::as_str).collect();
        let dates = [
            "2021-01-08T21-18-21Z",
            "2020-05-08T21-18-21Z",
            "2021-01-08T19-20-00Z",
            "1990-01-08T00-20-00Z",
            "2023-05-08T00-20-00Z",
        ];
        let table: &[(Order, &[&str], Option<&str>)] = &[
            (Order::Asc, &ubuntu, Some("20.10")),
            (Order::Desc, &ubuntu, Some("16.04")),
            (Order::Asc, &names, Some("zesty")),
            (Order::Desc, &names, Some("artful")),
            (Order::Asc, &stamps, Some("1606364286")),
            (Order::Desc, &stamps, Some("1606234201")),
            (Order::Asc, &prefixed, Some("rel-1606364286")),
            (Order::Asc, &dates, Some("2023-05-08T00-20-00Z")),
            (Order::Desc, &dates, Some("1990-01-08T00-20-00Z")),
            (Order::Asc, &[], None),
            (Order::Desc, &[], None),
        ];
        for (order, tags, want) in table {
            assert_eq!(latest(*order, tags).as_deref(), *want, "{order:?} {tags:?}");
        }
    }

    /// Our own data: mixed-length calendar tags misorder (documented trap),
    /// and non-ASCII compares by UTF-8 bytes.
    #[test]
    fn own_alphabetical_cases() {
        assert_eq!(
            latest(Order::Asc, &["251130", "2512", "99"]).as_deref(),
            Some("99")
        );
        assert_eq!(
            latest(Order::Asc, &["v9", "v10", "v11"]).as_deref(),
            Some("v9")
        );
        assert_eq!(latest(Order::Desc, &["b", "B", "a"]).as_deref(), Some("B"));
        assert_eq!(
            latest(Order::Asc, &["latest", "main", "main-2"]).as_deref(),
            Some("main-2")
        );
        // Argo §5.1: {wohoo,bazar,alpha,jesus,zebra} sorts alpha..zebra.
        assert_eq!(
            latest(Order::Asc, &["wohoo", "bazar", "alpha", "jesus", "zebra"]).as_deref(),
            Some("zebra")
        );
        assert_eq!(
            latest(Order::Desc, &["wohoo", "bazar", "alpha", "jesus", "zebra"]).as_deref(),
            Some("alpha")
        );
    }
}
