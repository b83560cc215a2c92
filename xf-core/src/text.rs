//! Numbers and excerpts written for people.

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

#[cfg(test)]
mod tests {
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
