//! robots.txt, read the way Googlebot reads it: RFC 9309 plus the behaviour Google documents
//! for its crawlers.
//!
//! Reading the file:
//! - Only the first 500 KiB are read (Google's limit); bytes that are not UTF-8 are replaced,
//!   and a leading UTF-8 byte order mark is skipped.
//! - Lines end at `\n`, `\r` or `\r\n`. A `#` starts a comment that runs to the end of the line.
//!   Lines are `key: value`; the key is case-insensitive and white space around the key and the
//!   value is dropped (`disallow:/a` is fine). A line without a colon is still read when it is
//!   exactly two words (`disallow /a`), as Google does. Misspelt keys are not accepted.
//! - Keys read: `user-agent`, `allow`, `disallow`, `crawl-delay` and `sitemap`; other lines are
//!   ignored and, like blank lines, do not split groups.
//!
//! Groups:
//! - One or more `user-agent` lines start a group; the lines after them belong to it until a
//!   `user-agent` line that follows a rule starts the next one. Rules before the first
//!   `user-agent` line belong to no group and are ignored.
//! - `sitemap` lines belong to the whole file, not to a group, and do not end one: in
//!   `user-agent: a`, `sitemap: …`, `user-agent: b`, `disallow: /`, the rule applies to both `a`
//!   and `b` (Google's example).
//! - `crawl-delay` is read as the crawlers that honour it (Bing, Yandex) read it: a rule of its
//!   group that ends the list of agents. For `allow` and `disallow` it is read as Google, which
//!   ignores `crawl-delay`, reads it: as no line at all. So in `user-agent: a`, `crawl-delay: 5`,
//!   `user-agent: b`, `disallow: /x`, the delay is `a`'s alone while `/x` is disallowed to both.
//! - A crawler obeys the groups whose `user-agent` product token (the value up to the first `/`
//!   or white space) equals its own, compared case-insensitively, merged into one; if there is
//!   none, the `*` groups, merged; if there is no `*` group either, nothing is disallowed. A
//!   crawler named in a group never falls back to `*`, even if its group has no rules.
//!
//! Matching a URL path (path plus `?query`):
//! - A pattern matches from the first character of the path: `*` matches any run of
//!   characters, a `$` at the end of the pattern anchors it at the end of the path, and
//!   anything else (including a `$` elsewhere) matches itself, case-sensitively.
//! - Of the matching rules, the one with the longest pattern wins; on equal lengths `allow`
//!   wins. No matching rule means allowed; an empty `allow:` or `disallow:` matches nothing.
//! - Patterns and paths are both percent-encoding normalised (RFC 3986 6.2.2) before they are
//!   compared, and a pattern's length is that of its normalised form: characters a URL cannot
//!   carry as such (non-ASCII, controls, space, `` "<>\^`{|} `` and a `%` that starts no
//!   escape) are encoded, escapes are written in upper case, and escapes of unreserved
//!   characters (`A-Z a-z 0-9 - . _ ~`) are decoded, as RFC 9309 requires. Escapes of reserved
//!   characters (`%2F`, `%3F`, …) stay escaped, so `/a%2Fb` is not `/a/b`. Hence `/a<b` and
//!   `/a%3cb` are the same path, and `/%7Efoo` is `/~foo`.
//! - `/robots.txt` itself is always allowed.
//! - Like Google, `allow: /dir/index.html` (or `index.htm…`) also allows `/dir/` itself.
//!
//! Fetch outcomes ([`Robots::allow_all`] for a 4xx, [`Robots::disallow_all`] for a 5xx or a
//! network error) follow Google's handling of robots.txt errors.

use std::time::Duration;

/// Google reads only this much of a robots.txt (500 KiB) and ignores the rest.
const MAX_BODY_BYTES: usize = 500 * 1024;

/// A parsed robots.txt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Robots {
    /// The groups as Google delimits them, with their `allow` and `disallow` rules.
    rule_groups: Vec<Group<Vec<Rule>>>,
    /// The groups as `crawl-delay` readers delimit them, with their first well-formed delay.
    delay_groups: Vec<Group<Option<Duration>>>,
    sitemaps: Vec<String>,
    has_directives: bool,
    /// Lines no crawler reads as meant, up to [`MAX_PROBLEMS`] (see [`Robots::problems`]).
    problems: Vec<String>,
    /// How many such lines there are.
    problem_count: u32,
}

/// The most problem lines kept.
const MAX_PROBLEMS: usize = 10;

/// Misspellings of the keys Google's parser accepts nonetheless; other crawlers do not.
const KNOWN_MISSPELLINGS: &[(&str, &str)] = &[
    ("useragent", "user-agent"),
    ("user agent", "user-agent"),
    ("dissallow", "disallow"),
    ("dissalow", "disallow"),
    ("disalow", "disallow"),
    ("diasllow", "disallow"),
    ("disallaw", "disallow"),
    ("site-map", "sitemap"),
];

/// Keys other crawlers read (or once read) that this parser leaves aside without complaint.
const OTHER_KEYS: &[&str] = &[
    "host",
    "clean-param",
    "request-rate",
    "visit-time",
    "noindex",
    "nofollow",
    "content-signal",
    "content-usage",
];

/// One group of the file: the agents its `user-agent` lines name and what it says to them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Group<T> {
    /// The product tokens of its `user-agent` lines, lower-cased (`*` for the catch-all).
    agents: Vec<String>,
    directives: T,
}

/// One `allow` or `disallow` line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    allow: bool,
    /// The path pattern, percent-encoding normalised (hence ASCII, so bytes are characters).
    pattern: String,
}

/// The keys this parser reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    UserAgent,
    Allow,
    Disallow,
    CrawlDelay,
    Sitemap,
}

impl Key {
    /// The key named `key`, in any case; `None` for keys this parser does not read.
    fn parse(key: &str) -> Option<Key> {
        const KEYS: [(&str, Key); 5] = [
            ("user-agent", Key::UserAgent),
            ("allow", Key::Allow),
            ("disallow", Key::Disallow),
            ("crawl-delay", Key::CrawlDelay),
            ("sitemap", Key::Sitemap),
        ];
        KEYS.iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|&(_, parsed)| parsed)
    }
}

/// Splits the lines of a file into groups while it is read.
#[derive(Debug)]
struct GroupsBuilder<T> {
    groups: Vec<Group<T>>,
    /// Whether no rule followed the latest `user-agent` line, so that a further one names one
    /// more agent of the same group instead of starting a new group.
    reading_agents: bool,
}

impl<T: Default> GroupsBuilder<T> {
    fn new() -> Self {
        GroupsBuilder {
            groups: Vec::new(),
            reading_agents: false,
        }
    }

    fn user_agent(&mut self, token: &str) {
        match self.groups.last_mut() {
            Some(group) if self.reading_agents => group.agents.push(token.to_owned()),
            _ => self.groups.push(Group {
                agents: vec![token.to_owned()],
                directives: T::default(),
            }),
        }
        self.reading_agents = true;
    }

    /// The directives of the current group (none before the first `user-agent` line), for a
    /// rule that ends its list of agents.
    fn rule(&mut self) -> Option<&mut T> {
        self.reading_agents = false;
        self.groups.last_mut().map(|group| &mut group.directives)
    }
}

impl Robots {
    /// Parses a robots.txt body (bytes; invalid UTF-8 and NULs replaced; only the first 500
    /// KiB are read, as Google does).
    pub fn parse(body: &[u8]) -> Robots {
        let body = &body[..body.len().min(MAX_BODY_BYTES)];
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let text = crate::text::nul_bytes_replaced(body);
        let text = String::from_utf8_lossy(&text);

        let mut rule_groups = GroupsBuilder::<Vec<Rule>>::new();
        let mut delay_groups = GroupsBuilder::<Option<Duration>>::new();
        let mut sitemaps = Vec::new();
        let mut has_directives = false;
        let mut problems = Problems::default();
        for (number, line) in lines(&text) {
            let content = line.split('#').next().unwrap_or_default().trim();
            if content.is_empty() {
                continue;
            }
            let Some((key, value)) = key_and_value(line) else {
                problems.add(number, line, "is not a `key: value` line");
                continue;
            };
            let Some(key) = Key::parse(key) else {
                let lower = key.to_ascii_lowercase();
                if let Some((_, meant)) = KNOWN_MISSPELLINGS.iter().find(|(typo, _)| *typo == lower)
                {
                    problems.add(number, line, &format!("misspells `{meant}`"));
                } else if !OTHER_KEYS.contains(&lower.as_str()) {
                    problems.add(number, line, "has a key no crawler reads");
                }
                continue;
            };
            has_directives = true;
            match key {
                Key::UserAgent => {
                    if value.is_empty() {
                        problems.add(number, line, "names no user agent");
                    }
                    let token = product_token(value);
                    rule_groups.user_agent(&token);
                    delay_groups.user_agent(&token);
                }
                Key::Allow | Key::Disallow => {
                    delay_groups.rule();
                    if !value.is_empty() && !value.starts_with(['/', '*']) {
                        problems.add(number, line, "has a path that does not start with / or *");
                    }
                    match rule_groups.rule() {
                        Some(rules) => push_rule(rules, key == Key::Allow, value),
                        None => problems.add(
                            number,
                            line,
                            "comes before any user-agent line, so no crawler obeys it",
                        ),
                    }
                }
                Key::CrawlDelay => {
                    let parsed = parse_crawl_delay(value);
                    if parsed.is_none() {
                        problems.add(number, line, "is not a number of seconds");
                    }
                    if let Some(delay) = delay_groups.rule() {
                        *delay = delay.or(parsed);
                    }
                }
                Key::Sitemap => {
                    if url::Url::parse(value).is_err() {
                        problems.add(number, line, "is not an absolute URL");
                    }
                    if !value.is_empty() {
                        sitemaps.push(value.to_owned());
                    }
                }
            }
        }
        if !has_directives && problems.count > 0 {
            // Not a robots.txt at all (a page served at its address, say): one problem.
            problems = Problems::default();
            problems.count = 1;
            problems.lines.push(
                "the file has no user-agent, allow, disallow, crawl-delay or sitemap line: it is \
                 not a robots.txt (an HTML page served at its address?)"
                    .to_owned(),
            );
        }
        Robots {
            rule_groups: rule_groups.groups,
            delay_groups: delay_groups.groups,
            sitemaps,
            has_directives,
            problems: problems.lines,
            problem_count: problems.count,
        }
    }

    /// No robots.txt (a 4xx answer): everything allowed.
    pub fn allow_all() -> Robots {
        Robots {
            rule_groups: Vec::new(),
            delay_groups: Vec::new(),
            sitemaps: Vec::new(),
            has_directives: false,
            problems: Vec::new(),
            problem_count: 0,
        }
    }

    /// robots.txt unreachable (a 5xx answer or a network error): everything disallowed, as
    /// Google does.
    pub fn disallow_all() -> Robots {
        Robots {
            rule_groups: vec![Group {
                agents: vec!["*".to_owned()],
                directives: vec![Rule {
                    allow: false,
                    pattern: "/".to_owned(),
                }],
            }],
            ..Robots::allow_all()
        }
    }

    /// Whether `user_agent` (a product token such as "xf-seo-bot", matched case-insensitively)
    /// may fetch `path` (the URL's path plus `?query`, starting with '/').
    ///
    /// A full user-agent string such as `xf-seo-bot/1.0 (+https://…)` is reduced to its product
    /// token; a `#fragment` is ignored and a path not starting with `/` is read as if it did.
    pub fn is_allowed(&self, user_agent: &str, path: &str) -> bool {
        let path = path.split('#').next().unwrap_or_default();
        let path = if path.starts_with('/') {
            normalize_percent_encoding(path)
        } else {
            normalize_percent_encoding(&format!("/{path}"))
        };
        if path.split('?').next() == Some("/robots.txt") {
            return true;
        }
        // The longest matching pattern wins; `true > false` makes `allow` win a tie.
        let winner = groups_for(&self.rule_groups, user_agent)
            .flatten()
            .filter(|rule| pattern_matches(&rule.pattern, &path))
            .map(|rule| (rule.pattern.len(), rule.allow))
            .max();
        winner.is_none_or(|(_, allow)| allow)
    }

    /// The group's `Crawl-delay` (seconds, may be fractional) for this agent, if any.
    ///
    /// With several groups for the agent, the first delay in file order applies.
    pub fn crawl_delay(&self, user_agent: &str) -> Option<Duration> {
        groups_for(&self.delay_groups, user_agent).find_map(|delay| *delay)
    }

    /// `Sitemap:` URLs, in file order (they apply to every agent).
    pub fn sitemaps(&self) -> &[String] {
        &self.sitemaps
    }

    /// The lines no crawler reads as their author meant, each as `line N: \`…\` why` (at
    /// most ten, the line cut to 80 characters): lines that are not `key: value`, misspelt
    /// or unknown keys (keys other crawlers read, such as `host` or `clean-param`, are not
    /// counted), rules before any `user-agent`, paths that start with neither `/` nor `*`,
    /// crawl delays that are not a number, sitemaps that are not absolute URLs.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// How many problem lines there are (the list keeps the first ten).
    pub fn problem_count(&self) -> u32 {
        self.problem_count
    }

    /// Whether the file had at least one group, rule or sitemap line (a body that is not a
    /// robots.txt at all, e.g. HTML, has none).
    pub fn has_directives(&self) -> bool {
        self.has_directives
    }
}

/// The directives of the groups `user_agent` obeys: those naming its product token, else the
/// `*` ones.
fn groups_for<'a, T>(groups: &'a [Group<T>], user_agent: &str) -> impl Iterator<Item = &'a T> {
    let names = |group: &Group<T>, name: &str| group.agents.iter().any(|agent| agent == name);
    let token = product_token(user_agent);
    let named = !token.is_empty() && groups.iter().any(|group| names(group, &token));
    let selected = if named { token } else { "*".to_owned() };
    groups
        .iter()
        .filter(move |group| names(group, &selected))
        .map(|group| &group.directives)
}

/// Adds an `allow` or `disallow` line to a group's rules.
fn push_rule(rules: &mut Vec<Rule>, allow: bool, value: &str) {
    // An empty value matches nothing (but still ended the group's list of agents).
    if value.is_empty() {
        return;
    }
    let pattern = normalize_percent_encoding(value);
    if allow {
        if let Some(directory) = index_page_directory(&pattern) {
            rules.push(Rule {
                allow,
                pattern: format!("{directory}$"),
            });
        }
    }
    rules.push(Rule { allow, pattern });
}

/// The lines of a file, numbered from 1, as `\n`, `\r` and `\r\n` end them.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = text;
    let mut number = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        number += 1;
        let end = rest.find(['\n', '\r']).unwrap_or(rest.len());
        let line = &rest[..end];
        let after = &rest[end..];
        rest = after
            .strip_prefix("\r\n")
            .or_else(|| after.strip_prefix(['\n', '\r']))
            .unwrap_or(after);
        Some((number, line))
    })
}

/// The problem lines of a file being read.
#[derive(Debug, Default)]
struct Problems {
    lines: Vec<String>,
    count: u32,
}

impl Problems {
    fn add(&mut self, number: usize, line: &str, why: &str) {
        self.count = self.count.saturating_add(1);
        if self.lines.len() < MAX_PROBLEMS {
            let shown = crate::text::excerpt(line.trim(), 80);
            self.lines.push(format!("line {number}: `{shown}` {why}"));
        }
    }
}

/// Splits a line into its key and value, without the comment and the surrounding white space.
fn key_and_value(line: &str) -> Option<(&str, &str)> {
    let line = line.split('#').next().unwrap_or_default().trim();
    let (key, value) = match line.split_once(':') {
        Some((key, value)) => (key.trim(), value.trim()),
        None => {
            // Google reads a line that forgot its colon when it is exactly two words.
            let mut words = line.split_whitespace();
            match (words.next(), words.next(), words.next()) {
                (Some(key), Some(value), None) => (key, value),
                _ => return None,
            }
        }
    };
    (!key.is_empty()).then_some((key, value))
}

/// The product token of a user-agent value or string (up to the first `/` or white space),
/// lower-cased.
fn product_token(value: &str) -> String {
    value
        .split(|c: char| c == '/' || c.is_whitespace())
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// A `crawl-delay` value: a non-negative decimal number of seconds (`10`, `0.5`, `.5`, `2.`).
fn parse_crawl_delay(value: &str) -> Option<Duration> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, ""));
    let is_digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !is_digits(whole) || !is_digits(fraction) {
        return None;
    }
    // Values too large for a `Duration` are as unusable as malformed ones.
    Duration::try_from_secs_f64(value.parse().ok()?).ok()
}

/// For an allow pattern whose last segment starts with `index.htm`, the directory it is in
/// (`/dir/` for `/dir/index.html`): Google treats the directory URL as that page.
fn index_page_directory(pattern: &str) -> Option<&str> {
    let last_slash = pattern.rfind('/')?;
    pattern[last_slash..]
        .starts_with("/index.htm")
        .then(|| &pattern[..=last_slash])
}

/// Whether a byte may appear as such in a normalised path: an unreserved or a reserved
/// character of RFC 3986 (which includes the pattern characters `*` and `$`).
fn is_url_character(byte: u8) -> bool {
    is_unreserved(byte) || b":/?#[]@!$&'()*+,;=".contains(&byte)
}

fn is_unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-._~".contains(&byte)
}

/// Percent-encoding normalisation (see the module documentation); the result is ASCII.
fn normalize_percent_encoding(input: &str) -> String {
    fn hex_value(byte: Option<&u8>) -> Option<u8> {
        char::from(*byte?)
            .to_digit(16)
            .and_then(|digit| u8::try_from(digit).ok())
    }
    fn push_escaped(out: &mut String, byte: u8) {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        out.push('%');
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0F)]));
    }

    let bytes = input.as_bytes();
    let mut out = String::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'%' {
            if let (Some(high), Some(low)) = (
                hex_value(bytes.get(index + 1)),
                hex_value(bytes.get(index + 2)),
            ) {
                let decoded = high << 4 | low;
                if is_unreserved(decoded) {
                    out.push(char::from(decoded));
                } else {
                    push_escaped(&mut out, decoded);
                }
                index += 3;
                continue;
            }
            push_escaped(&mut out, byte);
        } else if is_url_character(byte) {
            out.push(char::from(byte));
        } else {
            push_escaped(&mut out, byte);
        }
        index += 1;
    }
    out
}

/// Whether `pattern` matches `path` from its start: `*` matches any run of bytes and a final
/// `$` requires the match to reach the end of `path`.
///
/// Greedy matching that, on a mismatch, retries from the latest `*` one byte further on: this
/// is exact for patterns whose only wildcard is `*`, and needs no recursion.
fn pattern_matches(pattern: &str, path: &str) -> bool {
    let (pattern, anchored) = match pattern.strip_suffix('$') {
        Some(stripped) => (stripped.as_bytes(), true),
        None => (pattern.as_bytes(), false),
    };
    let path = path.as_bytes();
    let (mut in_pattern, mut in_path) = (0, 0);
    // Where to resume after the latest `*`: the pattern byte after it and the path byte it
    // would next swallow.
    let mut resume: Option<(usize, usize)> = None;
    loop {
        if in_pattern == pattern.len() {
            if !anchored || in_path == path.len() {
                return true;
            }
        } else if pattern[in_pattern] == b'*' {
            in_pattern += 1;
            resume = Some((in_pattern, in_path));
            continue;
        } else if path.get(in_path) == Some(&pattern[in_pattern]) {
            in_pattern += 1;
            in_path += 1;
            continue;
        }
        match resume {
            Some((after_star, swallowed)) if swallowed < path.len() => {
                resume = Some((after_star, swallowed + 1));
                in_pattern = after_star;
                in_path = swallowed + 1;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn robots(text: &str) -> Robots {
        Robots::parse(text.as_bytes())
    }

    /// The paths of `paths` that `agent` may fetch.
    fn allowed<'a>(robots: &Robots, agent: &str, paths: &[&'a str]) -> Vec<&'a str> {
        paths
            .iter()
            .copied()
            .filter(|path| robots.is_allowed(agent, path))
            .collect()
    }

    #[test]
    fn reads_comments_white_space_bom_and_keys_in_any_case() {
        let body = b"\xEF\xBB\xBFUser-Agent: *  # everyone\n  DISALLOW :  /private  # secret\n\
                     # disallow: /commented\n\tAllow:\t/private/open\t\n";
        let parsed = Robots::parse(body);
        assert!(parsed.has_directives());
        // Had the BOM been read as part of the first key, there would be no group at all.
        assert!(!parsed.is_allowed("bot", "/private/x"));
        assert!(parsed.is_allowed("bot", "/private/open/x"));
        assert!(parsed.is_allowed("bot", "/commented"));
    }

    #[test]
    fn reads_lines_without_space_or_colon_and_any_line_ending() {
        let parsed = robots("user-agent:*\rdisallow:/a\r\ndisallow /b\ndisallow /c /d\nallow\n");
        assert!(!parsed.is_allowed("bot", "/a"));
        assert!(!parsed.is_allowed("bot", "/b"));
        // Three words without a colon are not a line Google reads.
        assert!(parsed.is_allowed("bot", "/c"));
        // Misspelt keys are not accepted.
        let misspelt = robots("user-agent: *\ndisalow: /a\n");
        assert!(misspelt.is_allowed("bot", "/a"));
    }

    #[test]
    fn replaces_invalid_utf8() {
        let parsed = Robots::parse(b"# caf\xE9\nuser-agent: *\ndisallow: /caf\xE9\ndisallow: /x\n");
        assert!(!parsed.is_allowed("bot", "/x"));
        // The replacement character is matched in its encoded form.
        assert!(!parsed.is_allowed("bot", "/caf%EF%BF%BD"));
        assert!(parsed.is_allowed("bot", "/cafe"));
    }

    #[test]
    fn lines_that_do_not_parse_are_reported() {
        let parsed = robots(
            "allow: /early\nuser agent: x\nUser-agent: *\nDisalow: /typo\ndisallow: private/\n\
             crawl-delay: soon\nsitemap: /relative.xml\nhost: example.com\njust some words here\n\
             user-agent:\n",
        );
        assert_eq!(
            parsed.problems(),
            [
                "line 1: `allow: /early` comes before any user-agent line, so no crawler obeys it",
                "line 2: `user agent: x` misspells `user-agent`",
                "line 4: `Disalow: /typo` misspells `disallow`",
                "line 5: `disallow: private/` has a path that does not start with / or *",
                "line 6: `crawl-delay: soon` is not a number of seconds",
                "line 7: `sitemap: /relative.xml` is not an absolute URL",
                "line 9: `just some words here` is not a `key: value` line",
                "line 10: `user-agent:` names no user agent",
            ]
        );
        assert_eq!(parsed.problem_count(), 8);
        let html =
            robots("<!doctype html>\n<html><head><title>Not found</title></head>\n</html>\n");
        assert_eq!(html.problem_count(), 1);
        assert!(
            html.problems()[0].contains("not a robots.txt"),
            "{:?}",
            html.problems()
        );
        assert!(robots("User-agent: *\nDisallow: /x\n")
            .problems()
            .is_empty());
    }

    #[test]
    fn consecutive_user_agent_lines_share_a_group() {
        // Google's example: groups a, b, e+f, and h (which has no rules).
        let parsed = robots(
            "user-agent: a\ndisallow: /c\n\nuser-agent: b\ndisallow: /d\n\n\
             user-agent: e\nuser-agent: f\ndisallow: /g\n\nuser-agent: h\n",
        );
        let paths = ["/c", "/d", "/g"];
        assert_eq!(allowed(&parsed, "a", &paths), ["/d", "/g"]);
        assert_eq!(allowed(&parsed, "b", &paths), ["/c", "/g"]);
        assert_eq!(allowed(&parsed, "e", &paths), ["/c", "/d"]);
        assert_eq!(allowed(&parsed, "f", &paths), ["/c", "/d"]);
        assert_eq!(allowed(&parsed, "h", &paths), paths);
    }

    #[test]
    fn merges_groups_for_the_same_agent_and_ignores_the_star_group() {
        // Google's example: googlebot-news obeys both of its groups and not the `*` one.
        let parsed = robots(
            "user-agent: googlebot-news\ndisallow: /fish\n\n\
             user-agent: *\ndisallow: /carrots\n\n\
             user-agent: googlebot-news\ndisallow: /shrimp\n",
        );
        let paths = ["/fish", "/carrots", "/shrimp"];
        assert_eq!(allowed(&parsed, "googlebot-news", &paths), ["/carrots"]);
        assert_eq!(allowed(&parsed, "otherbot", &paths), ["/fish", "/shrimp"]);
    }

    #[test]
    fn a_named_agent_never_falls_back_to_star() {
        let parsed = robots("user-agent: *\ndisallow: /\n\nuser-agent: xf-seo-bot\ndisallow:\n");
        assert!(parsed.is_allowed("xf-seo-bot", "/anything"));
        assert!(!parsed.is_allowed("otherbot", "/anything"));
    }

    #[test]
    fn ignores_rules_before_the_first_user_agent() {
        let parsed = robots("disallow: /early\nuser-agent: *\ndisallow: /late\n");
        assert!(parsed.is_allowed("bot", "/early"));
        assert!(!parsed.is_allowed("bot", "/late"));
    }

    #[test]
    fn sitemaps_are_global_and_do_not_end_a_group() {
        // Google's example: a and b share `disallow: /`.
        let parsed = robots(
            "sitemap: https://example.com/before.xml\nuser-agent: a\n\
             sitemap: https://example.com/sitemap.xml\n\nuser-agent: b\ndisallow: /\n\
             Sitemap:https://example.com/news.xml\nsitemap:\n",
        );
        assert!(!parsed.is_allowed("a", "/page"));
        assert!(!parsed.is_allowed("b", "/page"));
        assert!(parsed.is_allowed("c", "/page"));
        assert_eq!(
            parsed.sitemaps(),
            [
                "https://example.com/before.xml",
                "https://example.com/sitemap.xml",
                "https://example.com/news.xml",
            ]
        );
    }

    #[test]
    fn unknown_lines_and_crawl_delay_do_not_end_a_group() {
        let parsed = robots(
            "user-agent: a\nhost: example.com\ncrawl-delay: 5\nuser-agent: b\ndisallow: /x\n",
        );
        assert!(!parsed.is_allowed("a", "/x"));
        assert!(!parsed.is_allowed("b", "/x"));
        // For `crawl-delay` readers the delay ended `a`'s group.
        assert_eq!(parsed.crawl_delay("a"), Some(Duration::from_secs(5)));
        assert_eq!(parsed.crawl_delay("b"), None);
    }

    #[test]
    fn matches_the_product_token_case_insensitively_and_exactly() {
        let parsed = robots(
            "user-agent: XF-SEO-Bot/2.1 (+https://example.com)\ndisallow: /mine\n\n\
             user-agent: * # everyone else\ndisallow: /theirs\n",
        );
        assert!(!parsed.is_allowed("xf-seo-bot", "/mine"));
        assert!(parsed.is_allowed("xf-seo-bot", "/theirs"));
        assert!(!parsed.is_allowed("xf-seo-bot/1.0 (+https://xf.example)", "/mine"));
        // Neither a prefix nor an extension of the token matches.
        assert!(parsed.is_allowed("xf-seo", "/mine"));
        assert!(!parsed.is_allowed("xf-seo", "/theirs"));
        assert!(parsed.is_allowed("xf-seo-bot-images", "/mine"));
    }

    #[test]
    fn without_a_matching_group_everything_is_allowed() {
        let parsed = robots("user-agent: otherbot\ndisallow: /\n");
        assert!(parsed.is_allowed("xf-seo-bot", "/"));
        assert!(parsed.is_allowed("xf-seo-bot", "/anything"));
        assert!(Robots::parse(b"").is_allowed("xf-seo-bot", "/anything"));
    }

    #[test]
    fn google_path_examples() {
        let fish_paths = [
            "/fish",
            "/fish.html",
            "/fish/salmon.html",
            "/fishheads",
            "/fishheads/yummy.html",
            "/fish.php?id=anything",
            "/Fish.asp",
            "/catfish",
            "/?id=fish",
            "/desert/fish",
        ];
        let blocked = |pattern: &str, paths: &[&'static str]| -> Vec<&'static str> {
            let parsed = robots(&format!("user-agent: *\ndisallow: {pattern}\n"));
            paths
                .iter()
                .copied()
                .filter(|path| !parsed.is_allowed("bot", path))
                .collect()
        };
        let fish_matches = &fish_paths[..6];
        assert_eq!(blocked("/fish", &fish_paths), fish_matches);
        assert_eq!(blocked("/fish*", &fish_paths), fish_matches);

        let folder_paths = [
            "/fish/",
            "/fish/?id=anything",
            "/fish/salmon.htm",
            "/fish",
            "/fish.html",
            "/animals/fish/",
            "/Fish/Salmon.asp",
        ];
        assert_eq!(blocked("/fish/", &folder_paths), &folder_paths[..3]);

        let php_paths = [
            "/index.php",
            "/filename.php",
            "/folder/filename.php",
            "/folder/filename.php?parameters",
            "/folder/any.php.file.html",
            "/filename.php/",
            "/",
            "/windows.PHP",
        ];
        assert_eq!(blocked("/*.php", &php_paths), &php_paths[..6]);

        let anchored_paths = [
            "/filename.php",
            "/folder/filename.php",
            "/filename.php?parameters",
            "/filename.php/",
            "/filename.php5",
            "/windows.PHP",
        ];
        assert_eq!(blocked("/*.php$", &anchored_paths), &anchored_paths[..2]);

        let middle_paths = [
            "/fish.php",
            "/fishheads/catfish.php?parameters",
            "/Fish.PHP",
        ];
        assert_eq!(blocked("/fish*.php", &middle_paths), &middle_paths[..2]);
    }

    #[test]
    fn wildcards_backtrack_and_dollar_is_literal_inside_a_pattern() {
        assert!(pattern_matches("/*a*b$", "/xaxbxab"));
        assert!(!pattern_matches("/*a*b$", "/xaxbxa"));
        assert!(pattern_matches("/**/x", "/a/b/x"));
        assert!(pattern_matches("*", "/"));
        assert!(pattern_matches("/a$b", "/a$b/c"));
        assert!(!pattern_matches("/a$b", "/ab"));
        assert!(pattern_matches("/$", "/"));
        assert!(!pattern_matches("/$", "/a"));
        // Patterns are anchored at the start of the path.
        assert!(!pattern_matches("fish", "/fish"));
    }

    #[test]
    fn longest_match_wins_and_allow_wins_ties() {
        // Google's order-of-precedence examples.
        let cases = [
            ("allow: /p\ndisallow: /", "/page", true),
            ("allow: /folder\ndisallow: /folder", "/folder/page", true),
            ("allow: /page\ndisallow: /*.htm", "/page.htm", false),
            ("allow: /page\ndisallow: /*.ph", "/page.php", true),
            ("allow: /$\ndisallow: /", "/", true),
            ("allow: /$\ndisallow: /", "/page.htm", false),
        ];
        for (rules, path, expected) in cases {
            let parsed = robots(&format!("user-agent: *\n{rules}\n"));
            assert_eq!(
                parsed.is_allowed("bot", path),
                expected,
                "{rules:?} for {path}"
            );
        }
        // File order does not matter.
        let reversed = robots("user-agent: *\ndisallow: /\nallow: /p\n");
        assert!(reversed.is_allowed("bot", "/page"));
    }

    #[test]
    fn normalises_percent_encoding_of_patterns_and_paths() {
        let parsed = robots(
            "user-agent: *\ndisallow: /a<b\ndisallow: /c%3cd\ndisallow: /caf\u{e9}\n\
             disallow: /x%2fy\ndisallow: /%7Euser\ndisallow: /%62%61%7A\ndisallow: /100%\n",
        );
        for path in ["/a<b", "/a%3cb", "/a%3Cb", "/c<d", "/c%3Cd/e"] {
            assert!(!parsed.is_allowed("bot", path), "{path}");
        }
        assert!(!parsed.is_allowed("bot", "/caf\u{e9}"));
        assert!(!parsed.is_allowed("bot", "/caf%c3%a9"));
        assert!(!parsed.is_allowed("bot", "/x%2Fy"));
        // An escaped reserved character is not the character itself.
        assert!(parsed.is_allowed("bot", "/x/y"));
        // Escapes of unreserved characters are decoded (RFC 9309's `/foo/bar/%62%61%7A`).
        assert!(!parsed.is_allowed("bot", "/~user"));
        assert!(!parsed.is_allowed("bot", "/baz"));
        // A `%` that starts no escape is one.
        assert!(!parsed.is_allowed("bot", "/100%25"));
        assert!(parsed.is_allowed("bot", "/100"));
        assert_eq!(normalize_percent_encoding("/a b\"|^"), "/a%20b%22%7C%5E");
        assert_eq!(normalize_percent_encoding("/*.php$?q=1&r"), "/*.php$?q=1&r");
    }

    #[test]
    fn normalised_length_decides_the_longest_match() {
        // `/%41` is `/A`, two characters long, so the three-character allow wins.
        let parsed = robots("user-agent: *\ndisallow: /%41\nallow: /Ab\n");
        assert!(parsed.is_allowed("bot", "/Abc"));
        // `/\u{e9}` is `/%C3%A9`, seven characters, longer than the four of `/%C3`.
        let escaped = robots("user-agent: *\nallow: /%c3\ndisallow: /\u{e9}\n");
        assert!(!escaped.is_allowed("bot", "/\u{e9}"));
    }

    #[test]
    fn an_empty_disallow_disallows_nothing() {
        let parsed = robots("user-agent: *\ndisallow:\n");
        assert!(parsed.is_allowed("bot", "/"));
        assert!(parsed.is_allowed("bot", "/anything"));
        assert!(parsed.has_directives());
    }

    #[test]
    fn robots_txt_is_always_allowed() {
        let parsed = robots("user-agent: *\ndisallow: /\n");
        assert!(parsed.is_allowed("bot", "/robots.txt"));
        assert!(!parsed.is_allowed("bot", "/robots.txt.bak"));
        assert!(Robots::disallow_all().is_allowed("bot", "/robots.txt"));
    }

    #[test]
    fn allowing_an_index_page_allows_its_directory() {
        let parsed = robots("user-agent: *\ndisallow: /\nallow: /shop/index.html\n");
        assert!(parsed.is_allowed("bot", "/shop/"));
        assert!(parsed.is_allowed("bot", "/shop/index.html"));
        assert!(!parsed.is_allowed("bot", "/shop/other.html"));
        assert!(!parsed.is_allowed("bot", "/"));
    }

    #[test]
    fn reads_the_crawl_delay_of_the_selected_group() {
        let parsed = robots(
            "user-agent: *\ncrawl-delay: 10\n\nuser-agent: slowbot\ncrawl-delay: 2.5\n\
             crawl-delay: 7\n\nuser-agent: oddbot\ncrawl-delay: -1\ncrawl-delay: 1e3\n\
             crawl-delay: soon\ncrawl-delay: .5\n\nuser-agent: plainbot\ndisallow: /x\n",
        );
        assert_eq!(parsed.crawl_delay("anybot"), Some(Duration::from_secs(10)));
        assert_eq!(
            parsed.crawl_delay("SlowBot"),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            parsed.crawl_delay("oddbot"),
            Some(Duration::from_millis(500))
        );
        // A named group without a delay does not take the `*` one.
        assert_eq!(parsed.crawl_delay("plainbot"), None);
        // For `allow` and `disallow`, the delays split nothing: all four agents share `/x`.
        assert!(!parsed.is_allowed("anybot", "/x"));
        assert!(!parsed.is_allowed("slowbot", "/x"));
        assert_eq!(parse_crawl_delay("3."), Some(Duration::from_secs(3)));
        assert_eq!(parse_crawl_delay("."), None);
        assert_eq!(parse_crawl_delay(""), None);
        assert_eq!(parse_crawl_delay(&"9".repeat(400)), None);
        assert_eq!(robots("crawl-delay: 3\n").crawl_delay("bot"), None);
    }

    #[test]
    fn allow_all_and_disallow_all() {
        let open = Robots::allow_all();
        assert!(open.is_allowed("bot", "/anything"));
        assert_eq!(open.crawl_delay("bot"), None);
        assert!(open.sitemaps().is_empty());
        assert!(!open.has_directives());
        let closed = Robots::disallow_all();
        assert!(!closed.is_allowed("bot", "/"));
        assert!(!closed.is_allowed("xf-seo-bot", "/page?q=1"));
    }

    #[test]
    fn html_and_empty_bodies_have_no_directives() {
        let html = robots(
            "<!DOCTYPE html>\n<html><head><title>Not found</title></head>\n\
             <body><p>Sorry: no page here</p>\n<a href=\"/\">Home page</a></body></html>\n",
        );
        assert!(!html.has_directives());
        assert!(html.is_allowed("bot", "/"));
        assert!(!robots("").has_directives());
        assert!(!robots("# only a comment\n\n").has_directives());
        assert!(robots("Sitemap: https://example.com/s.xml").has_directives());
        assert!(robots("User-agent: *").has_directives());
    }

    #[test]
    fn reads_only_the_first_500_kib() {
        let mut body = b"user-agent: *\ndisallow: /early\n".to_vec();
        body.resize(MAX_BODY_BYTES, b'\n');
        body.extend_from_slice(b"disallow: /late\n");
        let parsed = Robots::parse(&body);
        assert!(!parsed.is_allowed("bot", "/early"));
        assert!(parsed.is_allowed("bot", "/late"));
    }

    #[test]
    fn a_realistic_file() {
        let parsed = robots(
            "# robots.txt for www.example.com\n\
             User-agent: *\n\
             Disallow: /cart\n\
             Disallow: /checkout/\n\
             Disallow: /*?sessionid=\n\
             Disallow: /*.pdf$\n\
             Allow: /checkout/help\n\
             Crawl-delay: 1\n\
             \n\
             User-agent: GPTBot\n\
             User-agent: CCBot\n\
             Disallow: /\n\
             \n\
             Sitemap: https://www.example.com/sitemap_index.xml\n",
        );
        let paths = [
            "/",
            "/cart",
            "/cart/items",
            "/checkout/pay",
            "/checkout/help/faq",
            "/products?sessionid=42&color=red",
            "/manual.pdf",
            "/manual.pdf?download=1",
        ];
        assert_eq!(
            allowed(&parsed, "xf-seo-bot", &paths),
            ["/", "/checkout/help/faq", "/manual.pdf?download=1"]
        );
        assert!(allowed(&parsed, "ccbot", &paths).is_empty());
        assert_eq!(
            parsed.crawl_delay("xf-seo-bot"),
            Some(Duration::from_secs(1))
        );
        assert_eq!(parsed.crawl_delay("GPTBot"), None);
        assert_eq!(
            parsed.sitemaps(),
            ["https://www.example.com/sitemap_index.xml"]
        );
    }
}
