//! Numbers and excerpts written for people, and the one rule for U+0000 in text from outside.
//!
//! **U+0000.** A crawled page, a provider's answer or a stored record may carry a NUL, which
//! PostgreSQL's `text` and `jsonb` cannot hold. xf keeps every other character as it came and
//! keeps U+0000 as U+FFFD REPLACEMENT CHARACTER, as an HTML parser reads a NUL in a title or
//! an attribute: [`without_nul`] for text, [`nul_bytes_replaced`] for bytes read as text (a
//! page, robots.txt, a sitemap), and the store's `StoredText` for the records a store keeps.
//! A client's own field is not rewritten: a NUL there is a `400` naming the field.

use std::borrow::Cow;

/// `n` with its thousands separated by commas: `178,956,970`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

/// The first `max` characters of `text`, with an ellipsis when there were more: how what a
/// client or a site sent is quoted in a message (a link, a robots.txt line, a form value).
pub fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// What a store keeps for U+0000: U+FFFD REPLACEMENT CHARACTER.
pub const NUL_REPLACEMENT: char = '\u{FFFD}';

/// `text` with each U+0000 replaced by [`NUL_REPLACEMENT`]; borrowed when it holds none.
pub fn without_nul(text: &str) -> Cow<'_, str> {
    if text.contains('\0') {
        Cow::Owned(text.replace('\0', NUL_REPLACEMENT.encode_utf8(&mut [0; 3])))
    } else {
        Cow::Borrowed(text)
    }
}

/// `bytes` with each NUL byte replaced by U+FFFD's UTF-8 form: a page (UTF-8 or an ASCII
/// superset) read as text afterwards holds no U+0000. Borrowed when it holds none.
pub fn nul_bytes_replaced(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !bytes.contains(&0) {
        return Cow::Borrowed(bytes);
    }
    let mut replacement = [0; 3];
    let replacement = NUL_REPLACEMENT.encode_utf8(&mut replacement).as_bytes();
    let mut out = Vec::with_capacity(bytes.len() + 8);
    for &byte in bytes {
        if byte == 0 {
            out.extend_from_slice(replacement);
        } else {
            out.push(byte);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn no_nul_survives_and_nothing_else_changes(text in any::<String>()) {
            let kept = super::without_nul(&text);
            prop_assert!(!kept.contains('\0'));
            prop_assert_eq!(kept.replace('\u{FFFD}', "\0"), text.replace('\u{FFFD}', "\0"));
            let bytes = super::nul_bytes_replaced(text.as_bytes());
            prop_assert_eq!(std::str::from_utf8(&bytes).unwrap(), &*kept);
        }
    }

    #[test]
    fn thousands_are_grouped() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (178_956_970, "178,956,970"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(super::group_digits(n), text);
        }
    }
}
