//! Go's `unicode` predicates and simple case mappings.
//!
//! Go classifies runes by Unicode general category (`unicode.IsPrint` is "letter, mark, number,
//! punctuation, symbol or ASCII space") and maps case one rune to one rune. Rust's `char` methods use
//! other definitions (`to_uppercase` of `ß` is `SS`, Go keeps `ß`), so the Go rules live here.

use unicode_general_category::{GeneralCategory as G, get_general_category};

/// `unicode.IsPrint` / `strconv.IsPrint`.
pub fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
            | G::NonspacingMark
            | G::SpacingMark
            | G::EnclosingMark
            | G::DecimalNumber
            | G::LetterNumber
            | G::OtherNumber
            | G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
            | G::MathSymbol
            | G::CurrencySymbol
            | G::ModifierSymbol
            | G::OtherSymbol
    )
}

/// `unicode.IsLetter`.
pub fn is_letter(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
    )
}

/// `unicode.IsDigit` (decimal digits).
pub fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && get_general_category(c) == G::DecimalNumber)
}

/// `unicode.IsNumber`.
pub fn is_number(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::DecimalNumber | G::LetterNumber | G::OtherNumber
    )
}

/// `unicode.IsUpper`.
pub fn is_upper(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_uppercase();
    }
    get_general_category(c) == G::UppercaseLetter
}

/// `unicode.IsLower`.
pub fn is_lower(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_lowercase();
    }
    get_general_category(c) == G::LowercaseLetter
}

/// `unicode.IsPunct`.
pub fn is_punct(c: char) -> bool {
    matches!(
        get_general_category(c),
        G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
    )
}

/// `unicode.IsSpace`.
pub fn is_space(c: char) -> bool {
    match c {
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{85}' | '\u{A0}' => true,
        c if (c as u32) < 0x100 => false,
        c => c.is_whitespace(),
    }
}

/// `unicode.ToUpper`: the simple (one rune) mapping.
pub fn to_upper(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_uppercase();
    }
    let mut it = c.to_uppercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// `unicode.ToLower`: the simple (one rune) mapping.
pub fn to_lower(c: char) -> char {
    if c.is_ascii() {
        return c.to_ascii_lowercase();
    }
    let mut it = c.to_lowercase();
    match (it.next(), it.next()) {
        (Some(u), None) => u,
        _ => c,
    }
}

/// `unicode.ToTitle`: the simple title-case mapping (upper case except for the digraphs).
pub fn to_title(c: char) -> char {
    match c {
        '\u{1C4}'..='\u{1C6}' => '\u{1C5}',
        '\u{1C7}'..='\u{1C9}' => '\u{1C8}',
        '\u{1CA}'..='\u{1CC}' => '\u{1CB}',
        '\u{1F1}'..='\u{1F3}' => '\u{1F2}',
        c => to_upper(c),
    }
}
